//===- PackageAgreementTest.cpp - every rank runs the same package --------===//

#include "runtime/training/PackageAgreement.h"

#include "ThreadRanks.h"

#include <thread>

#include <gtest/gtest.h>

using namespace pp::runtime;

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

TEST(PackageAgreement, EveryRankRefusesBeforeLinkingWhenOneLoadedAnother) {
  forgetCommunicationFailures();
  test::RankOptions options;
  options.agreementOf = [](int rank) {
    return rank == 3 ? "another package" : "this package";
  };
  options.disagreement = kPackageDisagreement;
  int port = test::freePort();
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 4; ++rank)
    threads.emplace_back([&, rank] {
      errors[rank] = test::runRank(
          rank, 4, port,
          [](Communicator &) { ADD_FAILURE() << "the ranks linked"; }, options);
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const std::string &error : errors)
    EXPECT_EQ(error,
              "rank 3 (at 127.0.0.1) " + std::string(kPackageDisagreement));
}

} // namespace
