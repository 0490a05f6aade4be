//===- ScheduleTest.cpp - schedule generators and the check ---------------===//

#include "runtime/schedules/Schedule.h"
#include "ScheduleTesting.h"
#include "runtime/schedules/Phase.h"
#include "runtime/schedules/ScheduleFile.h"

#include <gtest/gtest.h>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

/// The actions "F0.0 sF0.0 O" spells, as a schedule file reads them.
std::vector<Action> actions(const std::string &text) {
  return parseScheduleFile("pp-schedule 1\nranks 1\nstage-ranks 0\n"
                           "microbatches 1\nrank 0: " +
                               text,
                           "test")
      .table[0];
}

PipelineLayout chain(int64_t ranks, int64_t microbatches) {
  return layoutFor(ScheduleKind::GPipe, ranks, 1, microbatches);
}

TEST(Schedule, Names) {
  for (const char *name :
       {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "eval"})
    EXPECT_STREQ(scheduleName(*parseScheduleKind(name)), name);
  EXPECT_FALSE(parseScheduleKind("interleaved"));
  EXPECT_EQ(scheduleNames(), "gpipe|1f1b|interleaved-1f1b|zb-h1|zb-v|eval");
  EXPECT_EQ(parsePlacement("v"), Placement::V);
  EXPECT_STREQ(placementName(Placement::Loop), "loop");
  EXPECT_FALSE(parsePlacement("zigzag"));
  EXPECT_TRUE(needsSplitBackward(ScheduleKind::ZeroBubbleH1));
  EXPECT_FALSE(needsSplitBackward(ScheduleKind::Interleaved1F1B));
  EXPECT_EQ(requiredVirtualStages(ScheduleKind::ZeroBubbleV), 2);
  EXPECT_EQ(requiredVirtualStages(ScheduleKind::OneForwardOneBackward), 1);
  EXPECT_FALSE(requiredVirtualStages(ScheduleKind::Interleaved1F1B));
  EXPECT_EQ(placementFor(ScheduleKind::ZeroBubbleV), Placement::V);
  EXPECT_EQ(formatActions(actions("F2.0 sF2.0 rB1.3 I0.1 W0.1 E3.2 O")),
            "F2.0 sF2.0 rB1.3 I0.1 W0.1 E3.2 O");
  EXPECT_STREQ(actionKindName(ActionKind::Recv), "recv");
}

TEST(Schedule, Placements) {
  EXPECT_EQ(placeStages(3, 2, Placement::Loop),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(placeStages(3, 2, Placement::V),
            (std::vector<int64_t>{0, 1, 2, 2, 1, 0}));
  PipelineLayout layout = layoutFor(ScheduleKind::ZeroBubbleV, 2, 2, 1);
  EXPECT_EQ(layout.stagesOf(0), (std::vector<int64_t>{0, 3}));
}

TEST(Schedule, GPipeRunsAllForwardsThenAllBackwards) {
  PipelineLayout layout = chain(2, 2);
  ScheduleTable table =
      buildSchedule(ScheduleKind::GPipe, layout, chainMessages(2), false);
  EXPECT_EQ(formatActions(table[0]),
            "F0.0 sF0.0 F0.1 sF0.1 rB0.0 B0.0 rB0.1 B0.1 O");
  EXPECT_EQ(formatActions(table[1]),
            "rF1.0 F1.0 rF1.1 F1.1 B1.0 sB1.0 B1.1 sB1.1 O");
  // With two stages per rank, each rank runs its stages breadth first.
  layout = layoutFor(ScheduleKind::GPipe, 2, 2, 2);
  table = buildSchedule(ScheduleKind::GPipe, layout, chainMessages(4), false);
  EXPECT_EQ(computeOrder(table[0]), "F0.0 F0.1 F2.0 F2.1 B2.0 B2.1 B0.0 B0.1");
}

TEST(Schedule, OneForwardOneBackwardWarmsUpByDistanceToTheLastStage) {
  ScheduleTable table = buildSchedule(ScheduleKind::OneForwardOneBackward,
                                      chain(3, 4), chainMessages(3), false);
  EXPECT_EQ(computeOrder(table[0]), "F0.0 F0.1 F0.2 B0.0 F0.3 B0.1 B0.2 B0.3");
  EXPECT_EQ(computeOrder(table[2]), "F2.0 B2.0 F2.1 B2.1 F2.2 B2.2 F2.3 B2.3");
  // Fewer microbatches than stages: the warm-up is cut short.
  table = buildSchedule(ScheduleKind::OneForwardOneBackward, chain(4, 2),
                        chainMessages(4), false);
  EXPECT_EQ(computeOrder(table[0]), "F0.0 F0.1 B0.0 B0.1");
}

TEST(Schedule, InterleavedFollowsMegatron) {
  PipelineLayout layout = layoutFor(ScheduleKind::Interleaved1F1B, 2, 2, 4);
  ScheduleTable table = buildSchedule(ScheduleKind::Interleaved1F1B, layout,
                                      chainMessages(4), false);
  // Rank 0 warms up with 2 (N - 1) + (V - 1) N = 4 forwards; groups of N
  // microbatches run chunk by chunk.
  EXPECT_EQ(computeOrder(table[0]),
            "F0.0 F0.1 F2.0 F2.1 F0.2 B2.0 F0.3 B2.1 F2.2 B0.0 F2.3 B0.1 "
            "B2.2 B2.3 B0.2 B0.3");
  EXPECT_EQ(computeOrder(table[1]),
            "F1.0 F1.1 F3.0 B3.0 F3.1 B3.1 F1.2 B1.0 F1.3 B1.1 F3.2 B3.2 "
            "F3.3 B3.3 B1.2 B1.3");
  // One stage per rank: exactly 1F1B.
  layout = layoutFor(ScheduleKind::Interleaved1F1B, 3, 1, 4);
  EXPECT_EQ(buildSchedule(ScheduleKind::Interleaved1F1B, layout,
                          chainMessages(3), false),
            buildSchedule(ScheduleKind::OneForwardOneBackward, layout,
                          chainMessages(3), false));
}

TEST(Schedule, ZeroBubbleDefersWeightHalves) {
  ScheduleTable table = buildSchedule(ScheduleKind::ZeroBubbleH1, chain(2, 3),
                                      chainMessages(2), true);
  // Forwards and input halves in 1F1B's order; each rank runs a weight half
  // as many input halves late as stages come before it, so the last ones
  // fill the drain.
  EXPECT_EQ(computeOrder(table[0]),
            "F0.0 F0.1 I0.0 W0.0 F0.2 I0.1 W0.1 I0.2 W0.2");
  EXPECT_EQ(computeOrder(table[1]),
            "F1.0 I1.0 F1.1 I1.1 W1.0 F1.2 I1.2 W1.1 W1.2");
}

TEST(Schedule, EvalRunsEveryMicrobatchInOrder) {
  PipelineLayout layout = chain(2, 3);
  ScheduleTable table =
      buildSchedule(ScheduleKind::Eval, layout, chainMessages(2), false);
  EXPECT_EQ(formatActions(table[0]), "E0.0 sE0.0 E0.1 sE0.1 E0.2 sE0.2");
  EXPECT_EQ(formatActions(table[1]), "rE1.0 E1.0 rE1.1 E1.1 rE1.2 E1.2");
  EXPECT_EQ(checkSchedule(table, layout, chainMessages(2), false,
                          /*training=*/false),
            "");
}

/// Every schedule on 2, 3 and 4 ranks, with microbatches equal to, twice
/// and fewer than the ranks, an odd count and 1, on a chain and on a
/// chain with a skip connection, passes the check.
TEST(Schedule, EveryScheduleIsValidOnChainsAndSkips) {
  for (const BuiltTable &built : builtInTables()) {
    ASSERT_EQ(scheduleProblem(built.kind, built.layout, built.split), "")
        << built.label;
    EXPECT_EQ(checkSchedule(built.table, built.layout, built.messages,
                            built.split, built.kind != ScheduleKind::Eval),
              "")
        << built.label;
  }
}

TEST(Schedule, ProblemsNameTheConstraintAndTheFix) {
  PipelineLayout two = layoutFor(ScheduleKind::Interleaved1F1B, 2, 2, 4);
  EXPECT_EQ(scheduleProblem(ScheduleKind::ZeroBubbleH1, chain(2, 4), false),
            "zb-h1 needs a split backward (its input- and weight-gradient "
            "halves run apart); compile with split-backward=true (pp-run does "
            "this for zb-h1/zb-v)");
  EXPECT_EQ(scheduleProblem(ScheduleKind::OneForwardOneBackward, two, false),
            "1f1b runs one stage per rank, but the package places 4 stages on "
            "2 ranks; compile with virtual-stages=1, or use --schedule gpipe "
            "or interleaved-1f1b");
  EXPECT_EQ(scheduleProblem(ScheduleKind::ZeroBubbleV, two, true),
            "zb-v needs two stages per rank in V placement (stage s on rank s "
            "for s < N, on rank 2N-1-s after), but the package places 4 "
            "stages on 2 ranks otherwise; compile with virtual-stages=2 "
            "placement=v");
  PipelineLayout v = layoutFor(ScheduleKind::ZeroBubbleV, 2, 2, 4);
  EXPECT_NE(scheduleProblem(ScheduleKind::Interleaved1F1B, v, false)
                .find("interleaved-1f1b needs loop placement"),
            std::string::npos);
  // GPipe and eval run on any placement; fewer microbatches than ranks are
  // fine everywhere.
  EXPECT_EQ(scheduleProblem(ScheduleKind::GPipe, v, false), "");
  EXPECT_EQ(scheduleProblem(ScheduleKind::Eval, v, false), "");
  EXPECT_EQ(scheduleProblem(ScheduleKind::ZeroBubbleH1, chain(4, 1), true), "");
  PipelineLayout idle = chain(2, 1);
  idle.stageRanks = {0, 0};
  EXPECT_EQ(scheduleProblem(ScheduleKind::GPipe, idle, false),
            "rank 1 runs no stage; place at least one stage on every rank of "
            "the pipeline");
  EXPECT_THROW(
      buildSchedule(ScheduleKind::GPipe, idle, chainMessages(2), false),
      std::invalid_argument);
}

/// checkSchedule's verdict on the lists `ranks` of a chain, one stage per
/// rank.
std::string check(const std::vector<std::string> &ranks, int64_t microbatches,
                  bool split = false, bool training = true) {
  ScheduleTable table;
  for (const std::string &text : ranks)
    table.push_back(actions(text));
  int64_t n = static_cast<int64_t>(ranks.size());
  return checkSchedule(table, chain(n, microbatches), chainMessages(n), split,
                       training);
}

/// Lists of a chain and what the check says of them.
struct Violation {
  std::vector<std::string> ranks;
  int64_t microbatches;
  bool split, training;
  std::string verdict;
};

TEST(Schedule, TheCheckNamesEachViolation) {
  const Violation violations[] = {
      {{"F0.0 B0.0 O"}, 2, false, true, "rank 0 never runs F s0 m1"},
      {{"F0.0 F0.1 B0.0 O"},
       2,
       false,
       true,
       "rank 0 never runs the backward of s0 m1 (B)"},
      {{"B0.0 F0.0 O"},
       1,
       false,
       true,
       "rank 0 runs B s0 m0 before F s0 m0; a backward follows its forward"},
      {{"F0.0 F0.0 B0.0 O"}, 1, false, true, "rank 0 runs F s0 m0 twice"},
      {{"F0.0 I0.0 B0.0 O"}, 1, true, true, "rank 0 runs B s0 m0 twice"},
      {{"F0.0 W0.0 I0.0 O"},
       1,
       true,
       true,
       "rank 0 runs W s0 m0 before I s0 m0; the weight half follows the "
       "input half"},
      {{"F0.0 I0.0 O"}, 1, true, true, "rank 0 never runs W s0 m0"},
      {{"F0.0 I0.0 W0.0 O"},
       1,
       false,
       true,
       "rank 0 lists I s0 m0, but the package's backward is not split; use "
       "B, or compile with split-backward=true"},
      {{"F0.0 F0.1 B0.1 B0.0 O"},
       2,
       false,
       true,
       "rank 0 runs B s0 m0 after microbatch 1; a stage runs its forwards, "
       "evals and weight gradients (B or W) in increasing microbatch order, "
       "so that gradients sum in the same order on any number of stages"},
      {{"F0.0 O B0.0"},
       1,
       false,
       true,
       "rank 0 lists the optimizer before its last action; it ends the "
       "step, once, on every rank"},
      {{"F0.0 B0.0"},
       1,
       false,
       true,
       "rank 0 never runs the optimizer; end every rank's list with O"},
      {{"E0.0 O"},
       1,
       false,
       false,
       "rank 0 lists the optimizer in an eval schedule; remove it (eval "
       "schedules run E actions, their sends and recvs only)"},
      {{"F0.0"},
       1,
       false,
       false,
       "rank 0 lists F s0 m0 in an eval schedule, which runs E actions only"},
      {{"F0.0 sF0.0 B0.0 O"},
       1,
       false,
       true,
       "rank 0 lists send F s0 m0, but F s0 m0 sends nothing to other "
       "ranks; remove it"},
      {{"F0.0 B0.0 F5.0 O"},
       1,
       false,
       true,
       "rank 0 lists F s5 m0, but the pipeline has stages 0..0"},
      {{"F0.0 B0.0 F0.3 O"},
       1,
       false,
       true,
       "rank 0 lists F s0 m3, but a step has microbatches 0..0"},
      {{"F0.0 B0.0 O"}, 1, false, true, ""},
  };
  for (const Violation &v : violations)
    EXPECT_EQ(check(v.ranks, v.microbatches, v.split, v.training), v.verdict)
        << v.ranks.front();
}

TEST(Schedule, TheCheckMatchesSendsAndRecvs) {
  const std::string rank0 = "F0.0 sF0.0 rB0.0 B0.0 O";
  const std::string rank1 = "rF1.0 F1.0 B1.0 sB1.0 O";
  const std::pair<std::vector<std::string>, std::string> violations[] = {
      {{rank0, rank1}, ""},
      {{"F1.0 " + rank0, rank1},
       "rank 0 lists F s1 m0, but stage 1 runs on rank 1"},
      {{"F0.0 rB0.0 B0.0 O", rank1},
       "rank 0 runs F s0 m0 without sending its messages to stage 1 on rank "
       "1; add sF0.0 right after it"},
      {{rank0, "F1.0 B1.0 sB1.0 O"},
       "rank 1 runs F s1 m0 without receiving its messages from stage 0 on "
       "rank 0; add rF1.0 before it"},
      {{rank0, "F1.0 rF1.0 B1.0 sB1.0 O"},
       "rank 1 runs F s1 m0 without receiving its messages from stage 0 on "
       "rank 0; add rF1.0 before it"},
      {{rank0, "rF1.0 rF1.0 F1.0 B1.0 sB1.0 O"},
       "rank 1 lists recv F s1 m0 twice"},
      {{rank0, "rF1.0 F1.0 rB1.0 B1.0 sB1.0 O"},
       "rank 1 lists recv B s1 m0, but B s1 m0 takes no messages from other "
       "ranks; remove it"},
      {{"F0.0 sF0.0 sF0.0 rB0.0 B0.0 O", rank1},
       "rank 0 lists send F s0 m0 twice"},
      {{rank0, "rF1.0 F1.0 B1.0 sB1.0 rF1.0 O"},
       "rank 1 lists recv F s1 m0 after F s1 m0 ran; put it before"},
      {{rank0, "rF1.0 F1.0 B1.0 O"},
       "rank 1 runs B s1 m0 without sending its messages to stage 0 on rank "
       "0; add sB1.0 right after it"},
      {{"sF0.0 F0.0 rB0.0 B0.0 O", rank1},
       "rank 0 lists send F s0 m0 before F s0 m0 ran; a send follows its "
       "compute action"},
  };
  for (const auto &[ranks, verdict] : violations)
    EXPECT_EQ(check(ranks, 1), verdict) << ranks[0] << " | " << ranks[1];
  EXPECT_EQ(
      checkSchedule({actions(rank0)}, chain(2, 1), chainMessages(2), false),
      "the schedule lists 1 ranks, but the pipeline has 2");
}

TEST(Schedule, TheCheckTakesASendAnywhereAfterItsCompute) {
  const std::string gpipe1 = "rF1.0 F1.0 rF1.1 F1.1 B1.0 sB1.0 B1.1 sB1.1 O";
  // Rank 0 runs both forwards, then sends both: rank 1 waits, nothing
  // more.
  EXPECT_EQ(check({"F0.0 F0.1 sF0.0 sF0.1 rB0.0 B0.0 rB0.1 B0.1 O", gpipe1},
                  2),
            "");
  // Rank 1 sends the first backward's input gradient after its next
  // forward.
  EXPECT_EQ(check({"F0.0 sF0.0 F0.1 sF0.1 rB0.0 B0.0 rB0.1 B0.1 O",
                   "rF1.0 F1.0 B1.0 rF1.1 F1.1 sB1.0 B1.1 sB1.1 O"},
                  2),
            "");
  // The transport delivers in order: sends keep their computes' order.
  EXPECT_EQ(check({"F0.0 F0.1 sF0.1 sF0.0 rB0.0 B0.0 rB0.1 B0.1 O", gpipe1},
                  2),
            "rank 0 lists send F s0 m1 before the send of F s0 m0; a rank "
            "sends its messages in the order its compute actions produced "
            "them, the order the transport delivers them in");
  // A send that never comes is missed at the end of the row.
  EXPECT_EQ(check({"F0.0 sF0.0 F0.1 rB0.0 B0.0 rB0.1 B0.1 O", gpipe1}, 2),
            "rank 0 runs F s0 m1 without sending its messages to stage 1 on "
            "rank 1; add sF0.1 right after it");
  EXPECT_EQ(check({"E0.0 E0.1 sE0.0", "rE1.0 E1.0 rE1.1 E1.1"}, 2, false,
                  /*training=*/false),
            "rank 0 runs E s0 m1 without sending its messages to stage 1 on "
            "rank 1; add sE0.1 right after it");
}

TEST(Schedule, TheCheckFindsTheDeadlockOfASendPlacedLate) {
  // Rank 0 sends microbatch 0's forward only after its backward, which
  // waits for rank 1, which waits for that forward.
  EXPECT_EQ(check({"F0.0 F0.1 rB0.0 B0.0 sF0.0 sF0.1 rB0.1 B0.1 O",
                   "rF1.0 F1.0 rF1.1 F1.1 B1.0 sB1.0 B1.1 sB1.1 O"},
                  2),
            "the schedule deadlocks: rank 0 waits at recv B s0 m0 for stage "
            "1 on rank 1, which waits at recv F s1 m0 for stage 0 on rank 0");
}

TEST(Schedule, TheCheckFindsADeadlock) {
  // Rank 0 keeps one microbatch in flight, but rank 1 wants microbatch 1's
  // forward before it sends microbatch 0's backward.
  EXPECT_EQ(check({"F0.0 sF0.0 rB0.0 B0.0 F0.1 sF0.1 rB0.1 B0.1 O",
                   "rF1.0 F1.0 rF1.1 F1.1 B1.0 sB1.0 B1.1 sB1.1 O"},
                  2),
            "the schedule deadlocks: rank 0 waits at recv B s0 m0 for stage "
            "1 on rank 1, which waits at recv F s1 m1 for stage 0 on rank 0");
}

TEST(Schedule, TheCheckOrdersStagesOnOneRank) {
  // Stages 0 and 1 both on rank 0: no messages between them, but stage 1's
  // forward needs stage 0's first.
  PipelineLayout layout = chain(1, 1);
  layout.stageRanks = {0, 0};
  ScheduleTable table = {actions("F1.0 F0.0 B1.0 B0.0 O")};
  EXPECT_EQ(checkSchedule(table, layout, chainMessages(2), false),
            "rank 0 runs F s1 m0 before stage 0, on the same rank, produced "
            "its messages (its F of m0)");
  table = {actions("F0.0 F1.0 B1.0 B0.0 O")};
  EXPECT_EQ(checkSchedule(table, layout, chainMessages(2), false), "");
  MessageGraph bad = chainMessages(2);
  bad[0].sendsTo[ActionKind::BackwardWeight].insert(1);
  EXPECT_EQ(checkSchedule(table, layout, bad, false),
            "the message graph gives stage 0 messages of W, which exchanges "
            "none; use F, B, I or E");
}

TEST(Schedule, MessagesInACycleHaveNoOrder) {
  PipelineLayout layout = layoutFor(ScheduleKind::ZeroBubbleV, 2, 2, 2);
  MessageGraph cycle = chainMessages(4);
  cycle[0].receivesFrom[ActionKind::Forward].insert(3);
  EXPECT_THROW(buildSchedule(ScheduleKind::ZeroBubbleV, layout, cycle, true),
               std::invalid_argument);
  // The other generators write their usual order, which the check refuses.
  ScheduleTable table =
      buildSchedule(ScheduleKind::GPipe, layout, cycle, false);
  EXPECT_EQ(checkSchedule(table, layout, cycle, false),
            "rank 0 runs F s0 m0 before stage 3, on the same rank, produced "
            "its messages (its F of m0)");
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
  // Eval functions run in eval actions only, and those run nothing else.
  EXPECT_TRUE(actionRuns(Phase::Eval, Phase::Eval));
  for (Phase training : {Phase::Forward, Phase::Backward, Phase::BackwardInput,
                         Phase::BackwardWeight}) {
    EXPECT_FALSE(actionRuns(training, Phase::Eval)) << phaseName(training);
    EXPECT_FALSE(actionRuns(Phase::Eval, training)) << phaseName(training);
  }
}

} // namespace
