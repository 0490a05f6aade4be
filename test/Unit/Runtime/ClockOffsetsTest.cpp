//===- ClockOffsetsTest.cpp - the ranks' clocks against rank 0's ----------===//

#include "runtime/training/ClockOffsets.h"

#include "MeshRanks.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace pp::runtime;
using pp::runtime::test::runMeshRanks;
using pp::runtime::test::runRanks;

namespace {

double steadyMicros() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST(ClockOffsets, AGroupsClocksAreMeasuredAgainstItsFirstAndOneClockIsExact) {
  // Ranks 0 and 1 read one clock; rank 2's runs 1000 s ahead, rank 3's
  // 3 s behind, as on other machines.
  const double ahead[] = {0, 0, 1e9, -3e6};
  runRanks(4, [&](Communicator &world) {
    double shift = ahead[world.rank()];
    double measured =
        clockAheadOfFirst(world, [&] { return steadyMicros() + shift; });
    if (world.rank() < 2)
      EXPECT_EQ(measured, 0);
    else // Within half a round trip between threads: well under 50 ms.
      EXPECT_NEAR(measured, shift, 5e4);
  });
}

TEST(ClockOffsets, RanksNotLinkedWithRank0AddTheirGroupFirstsOffsets) {
  // pp=2 x dp=2: rank 3 links with ranks 1 and 2 only and reaches rank 0
  // through rank 2 (its data-parallel group's first), which reads its
  // clock, 1000 s ahead of rank 0's; rank 1's runs 3 s behind.
  DeviceMesh mesh(
      {{"pp", 2, AxisKind::Pipeline}, {"dp", 2, AxisKind::DataReplicate}});
  const double ahead[] = {0, -3e6, 1e9, 1e9};
  runMeshRanks(mesh, [&](Communicator &world, RankGroups &groups) {
    double shift = ahead[world.rank()];
    double measured =
        clockAheadOfRank0(groups, [&] { return steadyMicros() + shift; });
    if (world.rank() == 0)
      EXPECT_EQ(measured, 0);
    else
      EXPECT_NEAR(measured, shift, 5e4);
  });
}

} // namespace
