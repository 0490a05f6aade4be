//===- ClockOffsetsTest.cpp - the ranks' clocks against rank 0's ----------===//

#include "runtime/training/ClockOffsets.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

double steadyMicros() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST(ClockOffsets, MachinesAheadAreMeasuredAndOneClockIsExact) {
  // Ranks 0 and 1 read one clock; rank 2's runs 1000 s ahead, rank 3's
  // 3 s behind, as on other machines.
  const double ahead[] = {0, 0, 1e9, -3e6};
  runRanks(4, [&](Communicator &world) {
    double shift = ahead[world.rank()];
    std::vector<double> offsets =
        clockOffsetsFromRank0(world, [&] { return steadyMicros() + shift; });
    if (world.rank() != 0) {
      EXPECT_TRUE(offsets.empty());
      return;
    }
    ASSERT_EQ(offsets.size(), 4u);
    EXPECT_EQ(offsets[0], 0);
    EXPECT_EQ(offsets[1], 0);
    // Within half a round trip between threads: well under 50 ms.
    EXPECT_NEAR(offsets[2], 1e9, 5e4);
    EXPECT_NEAR(offsets[3], -3e6, 5e4);
  });
}

} // namespace
