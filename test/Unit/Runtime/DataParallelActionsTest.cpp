//===- DataParallelActionsTest.cpp - reduces, gathers and releases --------===//

#include "ScheduleTesting.h"
#include "runtime/schedules/ScheduleFile.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

/// The table `kind` builds on `layout` over a chain, with the actions of
/// `dataParallel` added.
ScheduleTable lowered(ScheduleKind kind, const PipelineLayout &layout,
                      const DataParallelism &dataParallel) {
  ScheduleTable table = buildSchedule(kind, layout,
                                      chainMessages(layout.stages()),
                                      needsSplitBackward(kind));
  addDataParallelActions(table, layout, dataParallel);
  return table;
}

TEST(DataParallelActions, FrameEachStageOfOneForwardOneBackward) {
  PipelineLayout layout = layoutFor(ScheduleKind::OneForwardOneBackward, 2, 1,
                                    2);
  ScheduleTable zero3 =
      lowered(ScheduleKind::OneForwardOneBackward, layout, {2, 3});
  EXPECT_EQ(formatActions(zero3[0]),
            "gather0 F0.0 sF0.0 F0.1 sF0.1 rB0.0 B0.0 rB0.1 B0.1 reduce0 "
            "release0 O");
  EXPECT_EQ(formatActions(zero3[1]),
            "gather1 rF1.0 F1.0 B1.0 sB1.0 rF1.1 F1.1 B1.1 sB1.1 reduce1 "
            "release1 O");
  // Below ZeRO-3 the parameters stay whole: reduces only.
  ScheduleTable zero2 =
      lowered(ScheduleKind::OneForwardOneBackward, layout, {2, 2});
  EXPECT_EQ(formatActions(zero2[1]),
            "rF1.0 F1.0 B1.0 sB1.0 rF1.1 F1.1 B1.1 sB1.1 reduce1 O");
  // One replica has nothing to reduce or gather, at any level.
  for (int level = 0; level <= kMaxZeroLevel; ++level)
    EXPECT_EQ(lowered(ScheduleKind::OneForwardOneBackward, layout, {1, level}),
              buildSchedule(ScheduleKind::OneForwardOneBackward, layout,
                            chainMessages(2), false));
}

TEST(DataParallelActions, GathersPrefetchOneComputeAheadAndReduceAfterW) {
  // Rank 0 of interleaved 1F1B runs stage 0, then stage 2: stage 2's
  // gather starts before the compute ahead of its first forward.
  PipelineLayout layout = layoutFor(ScheduleKind::Interleaved1F1B, 2, 2, 2);
  ScheduleTable table = lowered(ScheduleKind::Interleaved1F1B, layout, {2, 3});
  std::string row = formatActions(table[0]);
  EXPECT_EQ(row.rfind("gather0 F0.0 sF0.0 gather2 F0.1 sF0.1 rF2.0 F2.0", 0),
            0u)
      << row;
  // Zero bubble: each stage reduces after its last weight half.
  layout = layoutFor(ScheduleKind::ZeroBubbleH1, 2, 1, 2);
  table = lowered(ScheduleKind::ZeroBubbleH1, layout, {2, 1});
  for (const std::vector<Action> &actions : table) {
    std::string text = formatActions(actions);
    int64_t stage = actions.front().stage;
    std::string w = "W" + std::to_string(stage) + ".1";
    EXPECT_NE(text.find(w + " reduce" + std::to_string(stage) + " O"),
              std::string::npos)
        << text;
  }
}

TEST(DataParallelActions, EvalTablesGatherAndReleaseOnly) {
  PipelineLayout layout = layoutFor(ScheduleKind::Eval, 2, 1, 2);
  MessageGraph messages = chainMessages(2);
  ScheduleTable table =
      buildSchedule(ScheduleKind::Eval, layout, messages, false);
  addDataParallelActions(table, layout, {2, 3});
  EXPECT_EQ(formatActions(table[0]),
            "gather0 E0.0 sE0.0 E0.1 sE0.1 release0");
  EXPECT_EQ(checkSchedule(table, layout, messages, false, false,
                          DataParallelism{2, 3}),
            "");
}

TEST(DataParallelActions, EveryBuiltInScheduleAtEveryLevelPassesTheCheck) {
  struct Case {
    ScheduleKind kind;
    int64_t virtualStages;
  };
  const Case cases[] = {
      {ScheduleKind::GPipe, 1},           {ScheduleKind::GPipe, 2},
      {ScheduleKind::OneForwardOneBackward, 1},
      {ScheduleKind::Interleaved1F1B, 2}, {ScheduleKind::ZeroBubbleH1, 1},
      {ScheduleKind::ZeroBubbleV, 2},     {ScheduleKind::Eval, 2},
  };
  for (const Case &c : cases)
    for (int64_t n : {2, 3})
      for (int64_t m : {int64_t(1), n, 2 * n + 1})
        for (int64_t degree : {1, 2})
          for (int level = 0; level <= kMaxZeroLevel; ++level) {
            PipelineLayout layout = layoutFor(c.kind, n, c.virtualStages, m);
            DataParallelism dp{degree, level};
            ScheduleTable table = lowered(c.kind, layout, dp);
            bool training = c.kind != ScheduleKind::Eval;
            MessageGraph messages = chainMessages(layout.stages());
            bool split = needsSplitBackward(c.kind);
            std::string where = std::string(scheduleName(c.kind)) +
                                " N=" + std::to_string(n) +
                                " m=" + std::to_string(m) +
                                " D=" + std::to_string(degree) +
                                " ZeRO-" + std::to_string(level);
            EXPECT_EQ(checkSchedule(table, layout, messages, split, training,
                                    dp),
                      "")
                << where;
            // Without the run's setting the check reads it off the table.
            EXPECT_EQ(checkSchedule(table, layout, messages, split, training),
                      "")
                << where;
            EXPECT_EQ(hasDataParallelActions(table),
                      degree > 1 && (training || level == 3))
                << where;
          }
}

TEST(DataParallelActions, RefusesWhatItCannotLower) {
  PipelineLayout layout = layoutFor(ScheduleKind::GPipe, 2, 1, 1);
  ScheduleTable table = lowered(ScheduleKind::GPipe, layout, {2, 0});
  EXPECT_THROW(addDataParallelActions(table, layout, {2, 0}),
               std::invalid_argument);
  ScheduleTable plain = buildSchedule(ScheduleKind::GPipe, layout,
                                      chainMessages(2), false);
  EXPECT_THROW(addDataParallelActions(plain, layout, {0, 0}),
               std::invalid_argument);
  EXPECT_THROW(addDataParallelActions(plain, layout, {2, 4}),
               std::invalid_argument);
  EXPECT_EQ(dataParallelProblem({2, 4}),
            "the ZeRO level must be 0 to 3, not 4");
  EXPECT_EQ(dataParallelProblem({0, 1}),
            "the data-parallel degree must be at least 1, not 0");
}

/// The actions of one rank running stage 0 alone, as a file spells them.
ScheduleTable oneRank(const std::string &actions) {
  return parseScheduleFile("pp-schedule 1\nranks 1\nstage-ranks 0\n"
                           "microbatches 1\nrank 0: " +
                               actions,
                           "test")
      .table;
}

/// checkSchedule's verdict on one rank's `actions` (one microbatch) under
/// `dataParallel` when given.
std::string check(const std::string &actions,
                  std::optional<DataParallelism> dataParallel,
                  bool training = true) {
  return checkSchedule(oneRank(actions), layoutFor(ScheduleKind::GPipe, 1, 1, 1),
                       chainMessages(1), false, training, dataParallel);
}

TEST(DataParallelActions, TheCheckNamesEachViolation) {
  struct Violation {
    std::string actions;
    std::optional<DataParallelism> dataParallel;
    std::string verdict;
  };
  const std::optional<DataParallelism> unsaid;
  const Violation violations[] = {
      {"F0.0 B0.0 reduce0 O", DataParallelism{2, 0}, ""},
      {"F0.0 B0.0 reduce0 O", unsaid, ""},
      {"F0.0 B0.0 O", unsaid, ""},
      {"F0.0 B0.0 O", DataParallelism{2, 0},
       "rank 0 never reduces the gradients of stage 0 (the run needs them); "
       "add reduce0 after its last backward"},
      {"F0.0 reduce0 B0.0 O", DataParallelism{2, 0},
       "rank 0 lists reduce s0 before the backward of s0 m0 ran; reduce a "
       "stage's gradients after its last backward (B, or W when split)"},
      {"F0.0 B0.0 reduce0 reduce0 O", unsaid,
       "rank 0 lists reduce s0 twice; a stage's gradients are reduced once a "
       "step"},
      {"F0.0 B0.0 O reduce0", unsaid,
       "rank 0 lists the optimizer before its last action; it ends the step, "
       "once, on every rank"},
      {"F0.0 B0.0 reduce0 O", DataParallelism{1, 0},
       "rank 0 lists reduce s0, but the run has one data-parallel replica, "
       "so there is nothing to reduce; remove it"},
      {"F0.0 B0.0 reduce0 O", DataParallelism{2, 3},
       "rank 0 runs F s0 m0 before gather s0; ZeRO-3 gathers a stage's "
       "parameters before its first compute (add gather0 before it)"},
      {"gather0 F0.0 release0 B0.0 reduce0 O", DataParallelism{2, 3},
       "rank 0 runs B s0 m0 after release s0; release a stage's parameters "
       "after its last compute of the step"},
      {"gather0 F0.0 B0.0 reduce0 O", DataParallelism{2, 3},
       "rank 0 never releases the parameters of stage 0 (the run needs "
       "them); add release0 after its last compute"},
      {"gather0 F0.0 B0.0 reduce0 O", unsaid,
       "rank 0 never releases the parameters of stage 0 (the table has them "
       "for other stages); add release0 after its last compute"},
      {"release0 gather0 F0.0 B0.0 reduce0 O", unsaid,
       "rank 0 lists release s0 before gather s0; release follows its "
       "gather"},
      {"gather0 gather0 F0.0 B0.0 release0 O", unsaid,
       "rank 0 lists gather s0 twice; a stage's parameters are gathered once "
       "a step, before its first compute"},
      {"gather0 F0.0 B0.0 release0 release0 O", unsaid,
       "rank 0 lists release s0 twice; a stage's parameters are released "
       "once a step, after its last compute"},
      {"gather0 F0.0 B0.0 reduce0 release0 O", DataParallelism{2, 2},
       "rank 0 lists gather s0, but the run does not shard parameters (that "
       "is ZeRO-3 over several data-parallel replicas); remove it"},
      {"gather0 F0.0 B0.0 reduce0 release0 O", DataParallelism{2, 3}, ""},
      {"F0.0 B0.0 reduce1 O", unsaid,
       "rank 0 lists reduce s1, but the pipeline has stages 0..0"},
  };
  for (const Violation &v : violations)
    EXPECT_EQ(check(v.actions, v.dataParallel), v.verdict) << v.actions;
  EXPECT_EQ(check("E0.0 reduce0", unsaid, /*training=*/false),
            "rank 0 lists reduce s0 in an eval schedule, which has no "
            "gradients; remove it");
  EXPECT_EQ(check("F0.0 B0.0 O", DataParallelism{2, 5}),
            "the ZeRO level must be 0 to 3, not 5");
}

TEST(DataParallelActions, TheCheckNamesTheRankOfAnotherStage) {
  PipelineLayout layout = layoutFor(ScheduleKind::GPipe, 2, 1, 1);
  MessageGraph messages = chainMessages(2);
  ScheduleTable table = lowered(ScheduleKind::GPipe, layout, {2, 0});
  // Rank 1's reduce moved to rank 0.
  table[1].erase(std::find(table[1].begin(), table[1].end(),
                           Action{ActionKind::ReduceGradients, 1}));
  table[0].insert(table[0].end() - 1, Action{ActionKind::ReduceGradients, 1});
  EXPECT_EQ(checkSchedule(table, layout, messages, false),
            "rank 0 lists reduce s1, but stage 1 runs on rank 1");
  Action perMicrobatch{ActionKind::ReduceGradients, 0, 0};
  table = lowered(ScheduleKind::GPipe, layout, {2, 0});
  *std::find(table[0].begin(), table[0].end(),
             Action{ActionKind::ReduceGradients, 0}) = perMicrobatch;
  EXPECT_EQ(checkSchedule(table, layout, messages, false),
            "rank 0 lists reduce s0 for microbatch 0; reduce, gather and "
            "release concern a whole stage (reduce0)");
}

} // namespace
