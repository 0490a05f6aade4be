//===- ScheduleSimulationTest.cpp - bubbles, step times and memory --------===//

#include "runtime/schedules/ScheduleSimulation.h"
#include "ScheduleTesting.h"
#include "runtime/schedules/ScheduleFile.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

/// The simulated step of `kind` on `ranks` ranks (`virtualStages` each) and
/// `microbatches`, chain messages, with `costs` (built for the stages).
SimulatedStep simulate(ScheduleKind kind, int64_t ranks, int64_t virtualStages,
                       int64_t microbatches, const StageCosts &costs) {
  PipelineLayout layout = layoutFor(kind, ranks, virtualStages, microbatches);
  MessageGraph messages = chainMessages(layout.stages());
  ScheduleTable table =
      buildSchedule(kind, layout, messages, needsSplitBackward(kind));
  return simulateSchedule(table, layout, messages, costs);
}

/// A forward of 1 and a backward of 2 per model, in `chunks` equal chunks
/// per rank of `ranks` ranks.
StageCosts equalCosts(int64_t ranks, int64_t chunks) {
  double c = 1.0 / chunks;
  return StageCosts::uniform(ranks * chunks, c, c, c);
}

TEST(ScheduleSimulation, GPipeAndOneForwardOneBackwardMatchTheory) {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneForwardOneBackward})
    for (int64_t p : {2, 3, 4})
      for (int64_t m : {p, 2 * p, 2 * p + 1}) {
        SimulatedStep step = simulate(kind, p, 1, m, equalCosts(p, 1));
        double bubble = double(p - 1) / double(m + p - 1);
        EXPECT_NEAR(step.bubbleFraction, bubble, 1e-12)
            << scheduleName(kind) << " p=" << p << " m=" << m;
        EXPECT_NEAR(step.stepSeconds, 3.0 * (m + p - 1), 1e-12);
      }
}

TEST(ScheduleSimulation, InterleavedMatchesTheory) {
  for (int64_t v : {2, 3})
    for (int64_t p : {2, 3, 4}) {
      // Microbatches that do not fill groups of p too.
      for (int64_t m : {p, p + 1, 2 * p, 2 * p + 1, 3 * p - 1}) {
        SimulatedStep step =
            simulate(ScheduleKind::Interleaved1F1B, p, v, m, equalCosts(p, v));
        EXPECT_NEAR(step.bubbleFraction, double(p - 1) / double(v * m + p - 1),
                    1e-12)
            << "v=" << v << " p=" << p << " m=" << m;
      }
      // Fewer microbatches than ranks: no worse than 1F1B.
      for (int64_t m = 1; m < p; ++m)
        EXPECT_LE(
            simulate(ScheduleKind::Interleaved1F1B, p, v, m, equalCosts(p, v))
                .bubbleFraction,
            simulate(ScheduleKind::OneForwardOneBackward, p, 1, m,
                     equalCosts(p, 1))
                .bubbleFraction)
            << "v=" << v << " p=" << p << " m=" << m;
    }
}

TEST(ScheduleSimulation, ZeroBubbleSchedulesIdleLessThanOneForwardOneBackward) {
  for (int64_t p : {2, 3, 4})
    for (int64_t m : {p, 2 * p, 2 * p + 1, 4 * p}) {
      double oneF1B = simulate(ScheduleKind::OneForwardOneBackward, p, 1, m,
                               equalCosts(p, 1))
                          .bubbleFraction;
      double h1 =
          simulate(ScheduleKind::ZeroBubbleH1, p, 1, m, equalCosts(p, 1))
              .bubbleFraction;
      double v = simulate(ScheduleKind::ZeroBubbleV, p, 2, m, equalCosts(p, 2))
                     .bubbleFraction;
      EXPECT_LT(h1, oneF1B) << "p=" << p << " m=" << m;
      EXPECT_LT(v, oneF1B) << "p=" << p << " m=" << m;
      // ZB-H1 idles (p - 1) (F + I - W) per rank: a third of 1F1B's.
      EXPECT_NEAR(h1, double(p - 1) / double(3 * m + p - 1), 1e-12)
          << "p=" << p << " m=" << m;
    }
}

TEST(ScheduleSimulation, PeakActivationMemory) {
  for (int64_t p : {2, 3, 4})
    for (int64_t m : {int64_t(1), p, 2 * p + 1}) {
      SimulatedStep gpipe =
          simulate(ScheduleKind::GPipe, p, 1, m, equalCosts(p, 1));
      SimulatedStep oneF1B = simulate(ScheduleKind::OneForwardOneBackward, p, 1,
                                      m, equalCosts(p, 1));
      // A BackwardInput frees all a forward keeps, or (by default) none.
      StageCosts inputFrees = equalCosts(p, 1);
      inputFrees.savedForInputBytes = inputFrees.savedBytes;
      SimulatedStep h1 =
          simulate(ScheduleKind::ZeroBubbleH1, p, 1, m, inputFrees);
      SimulatedStep h1Weights =
          simulate(ScheduleKind::ZeroBubbleH1, p, 1, m, equalCosts(p, 1));
      for (int64_t r = 0; r < p; ++r) {
        EXPECT_EQ(gpipe.peakActivationBytes[r], m);
        EXPECT_EQ(oneF1B.peakActivationBytes[r], std::min(m, p - r));
        EXPECT_EQ(h1.peakActivationBytes[r], std::min(m, p - r));
        // Holding them until the weight halves: no more than 1F1B's first
        // rank.
        EXPECT_LE(h1Weights.peakActivationBytes[r], std::min(m, p));
      }
      // ZB-V's chunks keep half a stage's bytes each: no more than 1F1B's
      // first rank.
      StageCosts halves = StageCosts::uniform(2 * p, 0.5, 0.5, 0.5, 0.5);
      halves.savedForInputBytes = halves.savedBytes;
      SimulatedStep v = simulate(ScheduleKind::ZeroBubbleV, p, 2, m, halves);
      for (int64_t r = 0; r < p; ++r)
        EXPECT_LE(v.peakActivationBytes[r], std::min(m, p)) << "rank " << r;
    }
}

TEST(ScheduleSimulation, MessagesAndTheOptimizerTakeTime) {
  StageCosts costs = StageCosts::uniform(2, 1, 1, 1);
  costs.messageSeconds = 0.5;
  costs.optimizerSeconds = 0.25;
  SimulatedStep step = simulate(ScheduleKind::GPipe, 2, 1, 1, costs);
  // F0 [0, 1], message, F1 [1.5, 2.5], B1 [2.5, 4.5], message, B0 [5, 7],
  // then the optimizer on both ranks once both are there.
  EXPECT_DOUBLE_EQ(step.stepSeconds, 7.25);
  EXPECT_DOUBLE_EQ(step.busySeconds[0], 3.25);
  EXPECT_DOUBLE_EQ(step.bubbleFraction, 1 - 6.5 / 14.5);
  const SimulatedAction &last = step.actions.back();
  EXPECT_EQ(last.rank, 1);
  EXPECT_EQ(last.action.kind, ActionKind::Optimizer);
  EXPECT_DOUBLE_EQ(last.start, 7);
  // Every action, each rank's in order, rank by rank.
  EXPECT_EQ(step.actions.front().rank, 0);
  EXPECT_EQ(step.actions.front().action.kind, ActionKind::Forward);
}

/// 1F1B on 2 ranks with 4 microbatches, each stage holding 100 bytes of
/// parameters, all trainable, and `copyBytes` of their compute copies,
/// under AdamW over `degree` replicas at ZeRO `level`.
SimulatedStep withState(int64_t degree, int level, double copyBytes = 0) {
  PipelineLayout layout =
      layoutFor(ScheduleKind::OneForwardOneBackward, 2, 1, 4);
  MessageGraph messages = chainMessages(2);
  ScheduleTable table = buildSchedule(ScheduleKind::OneForwardOneBackward,
                                      layout, messages, false);
  DataParallelism dp{degree, level};
  addDataParallelActions(table, layout, dp);
  StageCosts costs = StageCosts::uniform(2, 1, 1, 1);
  costs.parameterBytes = {100, 100};
  costs.trainableBytes = {100, 100};
  if (copyBytes > 0)
    costs.computeCopyBytes = {copyBytes, copyBytes};
  costs.dataParallel = dp;
  return simulateSchedule(table, layout, messages, costs);
}

TEST(ScheduleSimulation, StateMemoryFallsAsZeroPromises) {
  // Rank 0 holds two microbatches' activations (1 byte each) at its peak.
  struct Expected {
    int level;
    double parameters, gradients, optimizerState;
  };
  const Expected expected[] = {
      {0, 100, 100, 200},
      {1, 100, 100, 50},
      // The gradients are whole during the backwards, the parameters
      // between gather and release: the peak is in the middle of the step.
      {2, 100, 100, 50},
      {3, 100, 100, 50},
  };
  for (const Expected &e : expected) {
    SimulatedStep step = withState(4, e.level);
    const HeldBytes &peak = step.peakMemory[0];
    EXPECT_DOUBLE_EQ(peak.parameters, e.parameters) << e.level;
    EXPECT_DOUBLE_EQ(peak.gradients, e.gradients) << e.level;
    EXPECT_DOUBLE_EQ(peak.optimizerState, e.optimizerState) << e.level;
    EXPECT_DOUBLE_EQ(peak.activations, 2) << e.level;
    EXPECT_DOUBLE_EQ(peak.total(), e.parameters + e.gradients +
                                       e.optimizerState + 2)
        << e.level;
    // Between steps: ZeRO-2 keeps 1/D of the gradients, ZeRO-3 also of the
    // parameters.
    for (const HeldBytes *between :
         {&step.stageMemory[0].front(), &step.stageMemory[0].back()}) {
      EXPECT_DOUBLE_EQ(between->parameters, e.level >= 3 ? 25 : 100);
      EXPECT_DOUBLE_EQ(between->optimizerState, e.level >= 1 ? 50 : 200);
    }
    EXPECT_DOUBLE_EQ(step.stageMemory[0].back().gradients,
                     e.level >= 2 ? 25 : 100);
    EXPECT_DOUBLE_EQ(step.stageMemory[0].back().activations, 0);
  }
  // One replica shards nothing at any level.
  SimulatedStep alone = withState(1, 3);
  EXPECT_DOUBLE_EQ(alone.peakMemory[0].total(), 100 + 100 + 200 + 2);
  EXPECT_DOUBLE_EQ(alone.stageMemory[0].front().parameters, 100);
}

TEST(ScheduleSimulation, ComputeCopiesAreHeldWhileTheParametersAreWhole) {
  for (int level : {0, 3}) {
    SimulatedStep step = withState(4, level, 50);
    EXPECT_DOUBLE_EQ(step.peakMemory[0].parameters, 150) << level;
    // Between steps ZeRO-3 holds a share of the values and no copy.
    for (const HeldBytes *between :
         {&step.stageMemory[0].front(), &step.stageMemory[0].back()})
      EXPECT_DOUBLE_EQ(between->parameters, level >= 3 ? 25 : 150) << level;
  }
}

TEST(ScheduleSimulation, CollectivesTakeTheirBytesOverTheBandwidth) {
  PipelineLayout layout = layoutFor(ScheduleKind::GPipe, 1, 1, 1);
  MessageGraph messages = chainMessages(1);
  StageCosts costs = StageCosts::uniform(1, 1, 1, 1);
  costs.parameterBytes = {2};
  costs.trainableBytes = {2};
  costs.dataParallelBytesPerSecond = 1;
  for (int level : {0, 3}) {
    ScheduleTable table =
        buildSchedule(ScheduleKind::GPipe, layout, messages, false);
    costs.dataParallel = {2, level};
    addDataParallelActions(table, layout, costs.dataParallel);
    SimulatedStep step = simulateSchedule(table, layout, messages, costs);
    // ZeRO-3: the gather (half the 2 bytes come in) [0, 1], F [1, 2], B
    // [2, 4], the reduce-scatter [4, 5]. ZeRO-0: F [0, 1], B [1, 3], the
    // all-reduce (twice the bytes) [3, 5]. The optimizer waits for it.
    EXPECT_DOUBLE_EQ(step.stepSeconds, 5) << level;
    EXPECT_DOUBLE_EQ(step.busySeconds[0], 3) << level;
    EXPECT_EQ(step.actions.back().action.kind, ActionKind::Optimizer);
    EXPECT_DOUBLE_EQ(step.actions.back().start, 5) << level;
  }
}

TEST(ScheduleSimulation, PrefetchedGathersOverlapCompute) {
  // Interleaved 1F1B: each stage's gather starts one compute ahead, so
  // only the first ones delay the step.
  PipelineLayout layout = layoutFor(ScheduleKind::Interleaved1F1B, 2, 2, 4);
  MessageGraph messages = chainMessages(4);
  ScheduleTable table =
      buildSchedule(ScheduleKind::Interleaved1F1B, layout, messages, false);
  StageCosts costs = StageCosts::uniform(4, 1, 1, 1);
  SimulatedStep without = simulateSchedule(table, layout, messages, costs);
  costs.parameterBytes.assign(4, 1);
  costs.dataParallel = {2, 3};
  costs.dataParallelBytesPerSecond = 1;
  addDataParallelActions(table, layout, costs.dataParallel);
  SimulatedStep with = simulateSchedule(table, layout, messages, costs);
  EXPECT_DOUBLE_EQ(with.stepSeconds, without.stepSeconds + 0.5);
}

TEST(ScheduleSimulation, ASendPlacedLaterDelaysItsReceiver) {
  // Gpipe's table, but rank 0 sends microbatch 0's forward after
  // microbatch 1's: rank 1 starts a forward later, and so the step ends
  // later.
  ScheduleText late = parseScheduleFile(
      "pp-schedule 1\nranks 2\nstage-ranks 0 1\nmicrobatches 2\n"
      "rank 0: F0.0 F0.1 sF0.0 sF0.1 rB0.0 B0.0 rB0.1 B0.1 O\n"
      "rank 1: rF1.0 F1.0 rF1.1 F1.1 B1.0 sB1.0 B1.1 sB1.1 O\n",
      "late.txt");
  MessageGraph messages = chainMessages(2);
  StageCosts costs = StageCosts::uniform(2, 1, 1, 1);
  SimulatedStep step =
      simulateSchedule(late.table, late.layout, messages, costs);
  auto firstForwardOfRank1 = std::find_if(
      step.actions.begin(), step.actions.end(),
      [](const SimulatedAction &simulated) {
        return simulated.rank == 1 &&
               simulated.action.kind == ActionKind::Forward;
      });
  ASSERT_NE(firstForwardOfRank1, step.actions.end());
  EXPECT_DOUBLE_EQ(firstForwardOfRank1->start, 2);
  EXPECT_DOUBLE_EQ(step.stepSeconds, 10);
  EXPECT_DOUBLE_EQ(
      simulate(ScheduleKind::GPipe, 2, 1, 2, costs).stepSeconds, 9);
}

TEST(ScheduleSimulation, RefusesWhatItCannotPlay) {
  PipelineLayout layout = layoutFor(ScheduleKind::GPipe, 2, 1, 1);
  MessageGraph messages = chainMessages(2);
  ScheduleTable table =
      buildSchedule(ScheduleKind::GPipe, layout, messages, false);
  EXPECT_THROW(simulateSchedule(table, layout, messages,
                                StageCosts::uniform(3, 1, 1, 1)),
               std::invalid_argument);
  StageCosts oneStageOfState = StageCosts::uniform(2, 1, 1, 1);
  oneStageOfState.parameterBytes = {1};
  EXPECT_THROW(simulateSchedule(table, layout, messages, oneStageOfState),
               std::invalid_argument);
  // Each rank's list is fine alone, but they wait on each other.
  ScheduleText deadlocked = parseScheduleFile(
      "pp-schedule 1\nranks 2\nstage-ranks 0 1\nmicrobatches 2\n"
      "rank 0: F0.0 sF0.0 rB0.0 B0.0 F0.1 sF0.1 rB0.1 B0.1 O\n"
      "rank 1: rF1.0 F1.0 rF1.1 F1.1 B1.0 sB1.0 B1.1 sB1.1 O\n",
      "deadlock.txt");
  try {
    simulateSchedule(deadlocked.table, deadlocked.layout, messages,
                     StageCosts::uniform(2, 1, 1, 1));
    ADD_FAILURE() << "a deadlocked table simulated";
  } catch (const std::invalid_argument &error) {
    EXPECT_STREQ(error.what(),
                 "cannot simulate the schedule: rank 0 waits forever at recv "
                 "B s0 m0; checkSchedule() says why");
  }
}

} // namespace
