//===- ScheduleTest.cpp - pipeline schedules and the deadlock check -------===//

#include "runtime/schedules/Schedule.h"

#include <gtest/gtest.h>

using namespace pp::runtime;

namespace {

/// Sources of a plain chain of `stages` stages: forward from the previous
/// stage, backward from the next.
MessageSources chain(int64_t stages) {
  MessageSources sources(stages);
  for (int64_t s = 1; s < stages; ++s) {
    sources[s][Phase::Forward].insert(s - 1);
    sources[s - 1][Phase::Backward].insert(s);
  }
  return sources;
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
        MessageSources sources = chain(stages);
        if (stages >= 3) { // A skip connection from stage 0 to the last.
          sources[stages - 1][Phase::Forward].insert(0);
          sources[0][Phase::Backward].insert(stages - 1);
        }
        EXPECT_EQ(checkDeadlockFree(schedules, sources), "")
            << stages << " stages, " << microbatches << " microbatches";
      }
}

TEST(Schedule, TheCheckFindsADeadlock) {
  // Stage 1 wants microbatch 1's forward first, but stage 0 sends it only
  // after the backward of microbatch 0, which needs stage 1's backward of
  // microbatch 0, which comes after stage 1's forward of microbatch 1.
  std::vector<std::vector<Action>> schedules = {{{Phase::Forward, 0},
                                                 {Phase::Backward, 0},
                                                 {Phase::Forward, 1},
                                                 {Phase::Backward, 1}},
                                                {{Phase::Forward, 1},
                                                 {Phase::Forward, 0},
                                                 {Phase::Backward, 0},
                                                 {Phase::Backward, 1}}};
  EXPECT_EQ(checkDeadlockFree(schedules, chain(2)),
            "the schedule deadlocks: stage 0 waits in backward of microbatch "
            "0, stage 1 waits in forward of microbatch 1");
}

TEST(Schedule, PhasesAndWhatTheirActionsRun) {
  for (Phase phase : {Phase::Forward, Phase::Backward, Phase::BackwardInput,
                      Phase::BackwardWeight, Phase::Eval})
    EXPECT_EQ(parsePhase(phaseName(phase)), phase);
  EXPECT_STREQ(phaseName(Phase::Eval), "eval");
  EXPECT_FALSE(parsePhase("sideways"));
  // A backward action runs a backward, or both halves of a split one.
  EXPECT_TRUE(actionRuns(Phase::Backward, Phase::Backward));
  EXPECT_TRUE(actionRuns(Phase::Backward, Phase::BackwardInput));
  EXPECT_TRUE(actionRuns(Phase::Backward, Phase::BackwardWeight));
  EXPECT_FALSE(actionRuns(Phase::Forward, Phase::Backward));
  EXPECT_FALSE(actionRuns(Phase::BackwardWeight, Phase::BackwardInput));
  EXPECT_EQ(
      formatSchedule({{Phase::BackwardInput, 0}, {Phase::BackwardWeight, 0}}),
      "I0 W0");
  // Eval functions run in eval actions only, and those run nothing else.
  EXPECT_TRUE(actionRuns(Phase::Eval, Phase::Eval));
  for (Phase training : {Phase::Forward, Phase::Backward, Phase::BackwardInput,
                         Phase::BackwardWeight}) {
    EXPECT_FALSE(actionRuns(training, Phase::Eval)) << phaseName(training);
    EXPECT_FALSE(actionRuns(Phase::Eval, training)) << phaseName(training);
  }
}

TEST(Schedule, EvalRunsEveryMicrobatchInOrderWithoutDeadlock) {
  EXPECT_EQ(formatSchedule(buildEvalSchedule(3)), "E0 E1 E2");
  EXPECT_EQ(formatSchedule(buildEvalSchedule(0)), "");
  for (int64_t stages : {1, 2, 4})
    for (int64_t microbatches : {1, 3}) {
      std::vector<std::vector<Action>> schedules(
          stages, buildEvalSchedule(microbatches));
      MessageSources sources(stages);
      for (int64_t s = 1; s < stages; ++s)
        sources[s][Phase::Eval].insert(s - 1);
      if (stages >= 3) // A skip connection from stage 0 to the last.
        sources[stages - 1][Phase::Eval].insert(0);
      EXPECT_EQ(checkDeadlockFree(schedules, sources), "")
          << stages << " stages, " << microbatches << " microbatches";
    }
}

TEST(Schedule, Names) {
  EXPECT_EQ(parseScheduleKind("gpipe"), ScheduleKind::GPipe);
  EXPECT_EQ(parseScheduleKind("1f1b"), ScheduleKind::OneForwardOneBackward);
  EXPECT_FALSE(parseScheduleKind("interleaved"));
}

} // namespace
