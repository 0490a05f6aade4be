//===- OffloadActionsTest.cpp - offloading saved values until the backward ===//

#include "ScheduleTesting.h"
#include "runtime/schedules/ScheduleFile.h"
#include "runtime/schedules/ScheduleSimulation.h"

#include <gtest/gtest.h>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

/// The table `kind` builds on `layout` over a chain, with offload added.
ScheduleTable offloaded(ScheduleKind kind, const PipelineLayout &layout) {
  ScheduleTable table = buildSchedule(
      kind, layout, chainMessages(layout.stages()), needsSplitBackward(kind));
  addOffloadActions(table, layout);
  return table;
}

TEST(OffloadActions, FirstStagesOfOneForwardOneBackwardHoldTwoMicrobatches) {
  PipelineLayout layout =
      layoutFor(ScheduleKind::OneForwardOneBackward, 4, 1, 8);
  ScheduleTable table = offloaded(ScheduleKind::OneForwardOneBackward, layout);
  // Each reload comes one compute action ahead of its backward.
  EXPECT_EQ(formatActions(table[0]),
            "F0.0 sF0.0 offload0.0 F0.1 sF0.1 offload0.1 F0.2 sF0.2 "
            "offload0.2 reload0.0 F0.3 sF0.3 offload0.3 rB0.0 B0.0 reload0.1 "
            "F0.4 sF0.4 offload0.4 rB0.1 B0.1 reload0.2 F0.5 sF0.5 offload0.5 "
            "rB0.2 B0.2 reload0.3 F0.6 sF0.6 offload0.6 rB0.3 B0.3 reload0.4 "
            "F0.7 sF0.7 offload0.7 reload0.5 rB0.4 B0.4 reload0.6 rB0.5 B0.5 "
            "reload0.7 rB0.6 B0.6 rB0.7 B0.7 O");
  const int64_t before[] = {4, 3, 2, 1}, after[] = {2, 2, 2, 1},
                offloadedAtOnce[] = {3, 2, 0, 0};
  for (int64_t s = 0; s < 4; ++s) {
    EXPECT_EQ(inFlightMicrobatches(table[s], s), after[s]) << s;
    EXPECT_EQ(offloadedMicrobatches(table[s], s), offloadedAtOnce[s]) << s;
    EXPECT_EQ(
        inFlightMicrobatches(buildSchedule(ScheduleKind::OneForwardOneBackward,
                                           layout, chainMessages(4), false)[s],
                             s),
        before[s]);
  }
  // Stages already holding two or fewer gain nothing: no copies.
  EXPECT_FALSE(hasOffloadActions({table[2], table[3]}));
}

TEST(OffloadActions, EveryBuiltInTrainingSchedulePassesTheCheck) {
  for (const BuiltTable &built : builtInTables()) {
    if (built.kind == ScheduleKind::Eval)
      continue;
    ScheduleTable table = built.table;
    addOffloadActions(table, built.layout);
    EXPECT_EQ(checkSchedule(table, built.layout, built.messages, built.split),
              "")
        << built.label;
    for (int64_t s = 0; s < built.layout.stages(); ++s) {
      int64_t rank = built.layout.stageRanks[s];
      int64_t held = inFlightMicrobatches(table[rank], s),
              was = inFlightMicrobatches(built.table[rank], s);
      EXPECT_LE(held, was) << built.label << " stage " << s;
      // Where a whole backward takes the saved values, they leave at it: a
      // stage holds two at most.
      if (!needsSplitBackward(built.kind)) {
        EXPECT_LE(held, std::min<int64_t>(was, 2))
            << built.label << " stage " << s;
      }
    }
    // The data-parallel actions go on top, at every level.
    for (int level = 0; level <= kMaxZeroLevel; ++level) {
      ScheduleTable withReplicas = table;
      addDataParallelActions(withReplicas, built.layout, {2, level});
      EXPECT_EQ(checkSchedule(withReplicas, built.layout, built.messages,
                              built.split, true, DataParallelism{2, level}),
                "")
          << built.label << " ZeRO-" << level;
    }
  }
}

TEST(OffloadActions, RefusesWhatItCannotLower) {
  PipelineLayout layout = layoutFor(ScheduleKind::GPipe, 2, 1, 4);
  ScheduleTable table = offloaded(ScheduleKind::GPipe, layout);
  EXPECT_THROW(addOffloadActions(table, layout), std::invalid_argument);
  ScheduleTable replicated =
      buildSchedule(ScheduleKind::GPipe, layout, chainMessages(2), false);
  addDataParallelActions(replicated, layout, {2, 0});
  EXPECT_THROW(addOffloadActions(replicated, layout), std::invalid_argument);
}

TEST(OffloadActions, ScheduleFilesSpellThem) {
  PipelineLayout layout = layoutFor(ScheduleKind::GPipe, 2, 1, 4);
  ScheduleTable table = offloaded(ScheduleKind::GPipe, layout);
  ASSERT_TRUE(hasOffloadActions(table));
  ScheduleText text =
      parseScheduleFile(formatScheduleFile(table, layout), "offload");
  EXPECT_EQ(text.table, table);
  EXPECT_THROW(parseScheduleFile("pp-schedule 1\nranks 1\nstage-ranks 0\n"
                                 "microbatches 1\nrank 0: offload0 F0.0",
                                 "bad"),
               std::runtime_error);
}

/// checkSchedule's verdict on one rank's `actions` (stage 0, three
/// microbatches).
std::string check(const std::string &actions, bool training = true) {
  ScheduleText text =
      parseScheduleFile("pp-schedule 1\nranks 1\nstage-ranks 0\n"
                        "microbatches 3\nrank 0: " +
                            actions,
                        "test");
  return checkSchedule(text.table, text.layout, chainMessages(1), false,
                       training);
}

TEST(OffloadActions, TheCheckNamesEachViolation) {
  const std::string rest = " F0.1 F0.2 B0.0 B0.1 B0.2 O";
  const std::pair<std::string, std::string> cases[] = {
      {"F0.0 offload0.0 F0.1 reload0.0 F0.2 B0.0 B0.1 B0.2 O", ""},
      {"F0.0 offload0.0" + rest,
       "rank 0 runs B s0 m0 while its saved values are offloaded; add "
       "reload0.0 before it"},
      {"offload0.0 F0.0" + rest,
       "rank 0 lists offload s0 m0 before F s0 m0; offload follows the "
       "forward that saves the values"},
      {"F0.0 offload0.0 offload0.0" + rest,
       "rank 0 lists offload s0 m0 twice; a microbatch's saved values are "
       "offloaded once"},
      {"F0.0 reload0.0" + rest,
       "rank 0 lists reload s0 m0 before offload0.0; reload follows its "
       "offload"},
      {"F0.0 offload0.0 reload0.0 reload0.0" + rest,
       "rank 0 lists reload s0 m0 twice; a microbatch's saved values come "
       "back once"},
      {"F0.0 F0.1 F0.2 B0.0 offload0.0 B0.1 B0.2 O",
       "rank 0 lists offload s0 m0 after the backward of s0 m0, which took "
       "the values; remove it"},
      {"F0.0 offload1.0" + rest,
       "rank 0 lists offload s1 m0, but the pipeline has stages 0..0"},
      {"F0.0 offload0.5" + rest,
       "rank 0 lists offload s0 m5, but a step has microbatches 0..2"},
  };
  for (const auto &[actions, verdict] : cases)
    EXPECT_EQ(check(actions), verdict) << actions;
  EXPECT_EQ(check("E0.0 offload0.0 E0.1 E0.2", /*training=*/false),
            "rank 0 lists offload s0 m0 in an eval schedule, which keeps "
            "nothing for a backward; remove it");
}

TEST(OffloadActions, TheSimulatorCountsCopiesAndTheMemoryTheyFree) {
  PipelineLayout layout =
      layoutFor(ScheduleKind::OneForwardOneBackward, 4, 1, 8);
  MessageGraph messages = chainMessages(4);
  ScheduleTable plain = buildSchedule(ScheduleKind::OneForwardOneBackward,
                                      layout, messages, false);
  ScheduleTable table = offloaded(ScheduleKind::OneForwardOneBackward, layout);
  StageCosts costs = StageCosts::uniform(4, 1, 1, 1, /*saved=*/100);
  SimulatedStep without = simulateSchedule(plain, layout, messages, costs);
  SimulatedStep with = simulateSchedule(table, layout, messages, costs);
  // Free copies: the same timing, two microbatches on the first ranks.
  EXPECT_DOUBLE_EQ(with.stepSeconds, without.stepSeconds);
  const double held[] = {200, 200, 200, 100};
  for (int64_t rank = 0; rank < 4; ++rank) {
    EXPECT_DOUBLE_EQ(with.peakActivationBytes[rank], held[rank]) << rank;
    EXPECT_DOUBLE_EQ(with.peakMemory[rank].activations, held[rank]) << rank;
  }
  EXPECT_DOUBLE_EQ(without.peakActivationBytes[0], 400);
  // Copies of a compute action's length overlap the compute between offload
  // and backward; a backward waits for its reload.
  costs.hostCopyBytesPerSecond = 100;
  SimulatedStep slow = simulateSchedule(table, layout, messages, costs);
  std::map<std::pair<int64_t, int64_t>, double> reloadEnds;
  for (const SimulatedAction &action : slow.actions) {
    const Action &a = action.action;
    if (a.kind == ActionKind::ReloadActivations) {
      EXPECT_DOUBLE_EQ(action.end - action.start, 1);
      reloadEnds[{a.stage, a.microbatch}] = action.end;
    }
    auto reloaded = reloadEnds.find({a.stage, a.microbatch});
    if (a.kind == ActionKind::Backward && reloaded != reloadEnds.end()) {
      EXPECT_GE(action.start, reloaded->second);
    }
  }
  EXPECT_EQ(reloadEnds.size(), 8u + 8u);
  // Slow copies cost time: the stage waits for them.
  costs.hostCopyBytesPerSecond = 10;
  EXPECT_GT(simulateSchedule(table, layout, messages, costs).stepSeconds,
            without.stepSeconds);
}

} // namespace
