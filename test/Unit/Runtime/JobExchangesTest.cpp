//===- JobExchangesTest.cpp - exchanges among all of a job's ranks --------===//

#include "runtime/training/JobExchanges.h"

#include "MeshRanks.h"

#include <gtest/gtest.h>

using namespace pp::runtime;
using pp::runtime::test::runMeshRanks;

namespace {

/// pp=2 x dp=2 x tp=2: rank 7 links with ranks 3, 5 and 6 only.
DeviceMesh threeAxisMesh() {
  return DeviceMesh({{"pp", 2, AxisKind::Pipeline},
                     {"dp", 2, AxisKind::DataReplicate},
                     {"tp", 2, AxisKind::Tensor}});
}

TEST(JobExchanges, RanksLinkOnlyWithTheirGroupsMembers) {
  EXPECT_EQ(groupPeers(threeAxisMesh(), 7), (std::vector<int>{3, 5, 6}));
  EXPECT_EQ(groupPeers(threeAxisMesh(), 0), (std::vector<int>{1, 2, 4}));
  runMeshRanks(threeAxisMesh(), [](Communicator &world, RankGroups &) {
    if (world.rank() != 7)
      return;
    int byte = 1;
    try {
      world.send(0, messageSlot("unlinked"), &byte, sizeof(byte));
      ADD_FAILURE() << "rank 7 sent to rank 0, which it has no link with";
    } catch (const std::runtime_error &error) {
      EXPECT_NE(std::string(error.what()).find("no link to rank 0"),
                std::string::npos)
          << error.what();
    }
  });
}

TEST(JobExchanges, TextsReachRank0InRankOrderThroughTheGroups) {
  runMeshRanks(threeAxisMesh(), [](Communicator &world, RankGroups &groups) {
    // Texts of different lengths, one of them empty.
    std::string mine(static_cast<size_t>(world.rank()) * 3, 'a' + world.rank());
    std::vector<std::string> all = gatherTextToRank0(groups, mine);
    if (world.rank() != 0) {
      EXPECT_TRUE(all.empty());
      return;
    }
    ASSERT_EQ(all.size(), 8u);
    for (int rank = 0; rank < 8; ++rank)
      EXPECT_EQ(all[rank], std::string(rank * 3, 'a' + rank));
  });
}

TEST(JobExchanges, Rank0sBytesReachEveryRankThroughTheGroups) {
  runMeshRanks(threeAxisMesh(), [](Communicator &world, RankGroups &groups) {
    int64_t value = world.rank() == 0 ? 424242 : -world.rank();
    broadcastFromRank0(groups, &value, sizeof(value));
    EXPECT_EQ(value, 424242);
  });
}

TEST(JobExchanges, EveryRankIsReachedOnceInAnyAxisOrder) {
  // Tensor axes outermost and innermost, the pipeline inside: every
  // group's first rank is still its coordinate 0.
  DeviceMesh mesh({{"tpa", 2, AxisKind::Tensor},
                   {"dp", 2, AxisKind::DataReplicate},
                   {"pp", 2, AxisKind::Pipeline},
                   {"tpb", 2, AxisKind::Tensor}});
  runMeshRanks(mesh, [](Communicator &world, RankGroups &groups) {
    std::vector<std::string> all =
        gatherTextToRank0(groups, std::to_string(world.rank()));
    int64_t value = world.rank() == 0 ? 7 : -1;
    broadcastFromRank0(groups, &value, sizeof(value));
    EXPECT_EQ(value, 7);
    if (world.rank() != 0)
      return;
    ASSERT_EQ(all.size(), 16u);
    for (int rank = 0; rank < 16; ++rank)
      EXPECT_EQ(all[rank], std::to_string(rank));
  });
}

TEST(JobExchanges, Rank0KnowsEachRanksMachine) {
  runMeshRanks(threeAxisMesh(), [](Communicator &world, RankGroups &groups) {
    if (world.rank() != 0) {
      EXPECT_TRUE(groups.machines.empty());
      return;
    }
    EXPECT_EQ(groups.machines, std::vector<std::string>(8, machineIdentity()));
    EXPECT_TRUE(groups.axesAcrossMachines().empty());
  });
}

} // namespace
