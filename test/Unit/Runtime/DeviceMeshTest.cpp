//===- DeviceMeshTest.cpp - ranks on named axes
//----------------------------===//

#include "runtime/communication/DeviceMesh.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace pp::runtime;

namespace {

/// pp=2 x dp=2 x tp=2: rank = 4 pp + 2 dp + tp.
DeviceMesh cube() {
  return DeviceMesh({{"pp", 2, AxisKind::Pipeline},
                     {"dp", 2, AxisKind::DataReplicate},
                     {"tp", 2, AxisKind::Tensor}});
}

TEST(DeviceMesh, RanksAreRowMajorWithTheLastAxisFastest) {
  DeviceMesh mesh(
      {{"pp", 3, AxisKind::Pipeline}, {"dp", 2, AxisKind::DataShard}});
  EXPECT_EQ(mesh.deviceCount(), 6);
  EXPECT_EQ(mesh.coordinates(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(mesh.coordinates(1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(mesh.coordinates(5), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(mesh.coordinate(3, "pp"), 1);
  EXPECT_EQ(mesh.coordinate(3, "dp"), 1);
  for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank)
    EXPECT_EQ(mesh.rankAt(mesh.coordinates(rank)), rank);
  EXPECT_EQ(mesh.pipelineAxis()->name, "pp");
  EXPECT_EQ(mesh.describe(), "pp=3 x dp=2");
}

TEST(DeviceMesh, GroupsVaryOnlyTheGivenAxes) {
  DeviceMesh mesh = cube();
  // Along one axis a rank's place in its group is its coordinate there.
  EXPECT_EQ(mesh.group(5, {"pp"}), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(mesh.group(5, {"dp"}), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(mesh.group(5, {"tp"}), (std::vector<int64_t>{4, 5}));
  // Non-contiguous groups over two axes, in rank order whatever the order
  // of the names.
  EXPECT_EQ(mesh.group(2, {"tp", "pp"}), (std::vector<int64_t>{2, 3, 6, 7}));
  EXPECT_EQ(mesh.group(1, {"pp", "dp"}), (std::vector<int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(mesh.group(6, {}), (std::vector<int64_t>{6}));
  EXPECT_EQ(mesh.group(6, {"pp", "dp", "tp"}).size(), 8u);
  // Every rank of a group computes the same group.
  for (int64_t member : mesh.group(1, {"pp", "dp"}))
    EXPECT_EQ(mesh.group(member, {"pp", "dp"}), mesh.group(1, {"pp", "dp"}));
}

TEST(DeviceMesh, AMeshWithoutAxesIsOneDevice) {
  DeviceMesh mesh;
  EXPECT_EQ(mesh.deviceCount(), 1);
  EXPECT_EQ(mesh.pipelineAxis(), nullptr);
  EXPECT_EQ(mesh.group(0, {}), (std::vector<int64_t>{0}));
  EXPECT_EQ(mesh.describe(), "one device");
}

TEST(DeviceMesh, BadMeshesAndAxesAreRefused) {
  auto message = [](auto make) {
    try {
      make();
    } catch (const std::runtime_error &error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(
      message([] {
        DeviceMesh({{"a", 2, AxisKind::Tensor}, {"a", 2, AxisKind::Context}});
      }),
      "the mesh has two axes named 'a'");
  EXPECT_EQ(message([] {
              DeviceMesh({{"pp", 0, AxisKind::Pipeline}});
            }),
            "mesh axis 'pp' has size 0; sizes must be at least 1");
  EXPECT_EQ(message([] {
              DeviceMesh(
                  {{"p", 2, AxisKind::Pipeline}, {"q", 2, AxisKind::Pipeline}});
            }),
            "the mesh has 2 pipeline axes; at most one is allowed");
  EXPECT_EQ(message([] { cube().group(0, {"sp"}); }),
            "the mesh (pp=2 x dp=2 x tp=2) has no axis 'sp'");
}

TEST(DeviceMesh, AxisKindNames) {
  for (AxisKind kind :
       {AxisKind::Pipeline, AxisKind::DataReplicate, AxisKind::DataShard,
        AxisKind::Tensor, AxisKind::Context})
    EXPECT_EQ(parseAxisKind(axisKindName(kind)), kind);
  EXPECT_FALSE(parseAxisKind("expert"));
}

} // namespace
