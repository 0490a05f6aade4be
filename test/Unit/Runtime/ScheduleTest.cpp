//===- ScheduleTest.cpp - pipeline schedules and the deadlock check -------===//

#include "runtime/Schedule.h"

#include <gtest/gtest.h>

using namespace pp::runtime;

namespace {

/// Sources of a plain chain of `stages` stages: forward from the previous
/// stage, backward from the next.
void chain(int64_t stages, std::vector<std::set<int64_t>> &forward,
           std::vector<std::set<int64_t>> &backward) {
  forward.assign(stages, {});
  backward.assign(stages, {});
  for (int64_t s = 1; s < stages; ++s) {
    forward[s].insert(s - 1);
    backward[s - 1].insert(s);
  }
}

TEST(Schedule, GPipeRunsAllForwardsThenAllBackwards) {
  EXPECT_EQ(formatSchedule(buildSchedule(ScheduleKind::GPipe, 3, 1, 3)),
            "F0 F1 F2 B0 B1 B2");
}

TEST(Schedule, OneForwardOneBackwardWarmsUpByDistanceToTheLastStage) {
  EXPECT_EQ(formatSchedule(
                buildSchedule(ScheduleKind::OneForwardOneBackward, 3, 0, 4)),
            "F0 F1 F2 B0 F3 B1 B2 B3");
  EXPECT_EQ(formatSchedule(
                buildSchedule(ScheduleKind::OneForwardOneBackward, 3, 2, 4)),
            "F0 B0 F1 B1 F2 B2 F3 B3");
  // Fewer microbatches than stages: the warm-up is cut short.
  EXPECT_EQ(formatSchedule(
                buildSchedule(ScheduleKind::OneForwardOneBackward, 4, 0, 2)),
            "F0 F1 B0 B1");
}

TEST(Schedule, BothSchedulesAreDeadlockFreeOnChainsAndSkips) {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneForwardOneBackward})
    for (int64_t stages : {1, 2, 3, 5})
      for (int64_t microbatches : {1, 2, 3, 8}) {
        std::vector<std::vector<Action>> schedules;
        for (int64_t s = 0; s < stages; ++s)
          schedules.push_back(buildSchedule(kind, stages, s, microbatches));
        std::vector<std::set<int64_t>> forward, backward;
        chain(stages, forward, backward);
        if (stages >= 3) { // A skip connection from stage 0 to the last.
          forward[stages - 1].insert(0);
          backward[0].insert(stages - 1);
        }
        EXPECT_EQ(checkDeadlockFree(schedules, forward, backward), "")
            << stages << " stages, " << microbatches << " microbatches";
      }
}

TEST(Schedule, TheCheckFindsADeadlock) {
  // Stage 1 wants microbatch 1's forward first, but stage 0 sends it only
  // after the backward of microbatch 0, which needs stage 1's backward of
  // microbatch 0, which comes after stage 1's forward of microbatch 1.
  std::vector<std::vector<Action>> schedules = {
      {{false, 0}, {true, 0}, {false, 1}, {true, 1}},
      {{false, 1}, {false, 0}, {true, 0}, {true, 1}}};
  std::vector<std::set<int64_t>> forward, backward;
  chain(2, forward, backward);
  EXPECT_EQ(checkDeadlockFree(schedules, forward, backward),
            "the schedule deadlocks: stage 0 waits in backward of microbatch "
            "0, stage 1 waits in forward of microbatch 1");
}

TEST(Schedule, Names) {
  EXPECT_EQ(parseScheduleKind("gpipe"), ScheduleKind::GPipe);
  EXPECT_EQ(parseScheduleKind("1f1b"), ScheduleKind::OneForwardOneBackward);
  EXPECT_FALSE(parseScheduleKind("interleaved"));
}

} // namespace
