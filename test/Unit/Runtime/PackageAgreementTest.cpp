//===- PackageAgreementTest.cpp - every rank runs the same package --------===//

#include "runtime/training/PackageAgreement.h"

#include "MeshRanks.h"

#include <gtest/gtest.h>

using namespace pp::runtime;
using pp::runtime::test::runMeshRanks;

namespace {

Package packageWith(const std::string &sourceDigest,
                    const std::string &libraryDigest) {
  Package package;
  package.numStages = 2;
  package.microbatchSize = 4;
  package.files["stages.cpp"] = {100, sourceDigest};
  package.files["libstages.so"] = {200, libraryDigest};
  package.files["parameters.bin"] = {300, std::string(64, 'p')};
  return package;
}

TEST(PackageAgreement, SourcesAndParametersMatterCompiledLibrariesDoNot) {
  std::string a = std::string(64, 'a'), b = std::string(64, 'b');
  EXPECT_EQ(packageIdentity(packageWith(a, a)),
            packageIdentity(packageWith(a, b)));
  EXPECT_NE(packageIdentity(packageWith(a, a)),
            packageIdentity(packageWith(b, a)));
  Package larger = packageWith(a, a);
  larger.microbatchSize = 8;
  EXPECT_NE(packageIdentity(larger), packageIdentity(packageWith(a, a)));
}

TEST(PackageAgreement, EveryRankRefusesWhenOneRankLoadedAnotherPackage) {
  DeviceMesh mesh(
      {{"pp", 2, AxisKind::Pipeline}, {"dp", 2, AxisKind::DataReplicate}});
  runMeshRanks(mesh, [](Communicator &world, RankGroups &groups) {
    checkSamePackage(groups, "the same");
    try {
      checkSamePackage(groups, world.rank() == 3 ? "another" : "the same");
      ADD_FAILURE() << "rank " << world.rank() << " did not refuse";
    } catch (const std::runtime_error &error) {
      EXPECT_EQ(std::string(error.what()).rfind("rank 3 (on ", 0), 0u)
          << error.what();
    }
  });
}

} // namespace
