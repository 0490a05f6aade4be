//===- ScheduleTesting.h - layouts and message graphs for tests -*- C++ -*-===//

#ifndef PP_TEST_SCHEDULETESTING_H
#define PP_TEST_SCHEDULETESTING_H

#include "runtime/schedules/Schedule.h"

#include <string>
#include <utility>
#include <vector>

namespace pp::runtime::testing {

/// `ranks` ranks with `virtualStages` stages each, placed as `kind` needs.
inline PipelineLayout layoutFor(ScheduleKind kind, int64_t ranks,
                                int64_t virtualStages, int64_t microbatches) {
  PipelineLayout layout;
  layout.ranks = ranks;
  layout.stageRanks = placeStages(ranks, virtualStages, placementFor(kind));
  layout.microbatches = microbatches;
  return layout;
}

/// A chain of `stages` stages with a skip connection from stage 0 to stage
/// 2: its forward (and eval) sends to stage 2 too, which sends its input
/// gradient back.
inline MessageGraph skipMessages(int64_t stages) {
  MessageGraph graph = chainMessages(stages);
  for (ActionKind forward : {ActionKind::Forward, ActionKind::Eval}) {
    graph[0].sendsTo[forward].insert(2);
    graph[2].receivesFrom[forward].insert(0);
  }
  for (ActionKind backward :
       {ActionKind::Backward, ActionKind::BackwardInput}) {
    graph[2].sendsTo[backward].insert(0);
    graph[0].receivesFrom[backward].insert(2);
  }
  return graph;
}

/// `actions` without Sends, Recvs and the Optimizer: "F0.0 F0.1 B0.0 ...".
inline std::string computeOrder(const std::vector<Action> &actions) {
  std::vector<Action> compute;
  for (const Action &action : actions)
    if (action.kind != ActionKind::Send && action.kind != ActionKind::Recv &&
        action.kind != ActionKind::Optimizer)
      compute.push_back(action);
  return formatActions(compute);
}

/// A built-in schedule's table and what it was built for.
struct BuiltTable {
  ScheduleKind kind;
  int64_t virtualStages;
  bool split;
  PipelineLayout layout;
  MessageGraph messages;
  ScheduleTable table;
  /// "zb-v V=2 N=4 m=9 skip": for failure messages.
  std::string label;
};

/// Every built-in schedule (with and without a split backward where it
/// takes either, with 1 to 3 virtual stages where it takes several) on 2,
/// 3 and 4 ranks, with p, 2p, p + 1, 2p + 1 and 1 microbatches, over a
/// chain of stages and (from 3 stages) the chain with a skip connection.
inline std::vector<BuiltTable> builtInTables() {
  struct Case {
    ScheduleKind kind;
    int64_t virtualStages;
    bool split;
  };
  const Case cases[] = {
      {ScheduleKind::GPipe, 1, false},
      {ScheduleKind::GPipe, 1, true},
      {ScheduleKind::GPipe, 2, false},
      {ScheduleKind::OneForwardOneBackward, 1, false},
      {ScheduleKind::OneForwardOneBackward, 1, true},
      {ScheduleKind::Interleaved1F1B, 1, false},
      {ScheduleKind::Interleaved1F1B, 2, false},
      {ScheduleKind::Interleaved1F1B, 3, true},
      {ScheduleKind::ZeroBubbleH1, 1, true},
      {ScheduleKind::ZeroBubbleV, 2, true},
      {ScheduleKind::Eval, 1, false},
      {ScheduleKind::Eval, 2, false},
  };
  std::vector<BuiltTable> tables;
  for (const Case &c : cases)
    for (int64_t n : {2, 3, 4})
      for (int64_t m : {n, 2 * n, n + 1, 2 * n + 1, int64_t(1)}) {
        PipelineLayout layout = layoutFor(c.kind, n, c.virtualStages, m);
        int64_t stages = layout.stages();
        std::string label = std::string(scheduleName(c.kind)) + " V=" +
                            std::to_string(c.virtualStages) +
                            " N=" + std::to_string(n) +
                            " m=" + std::to_string(m);
        std::vector<std::pair<MessageGraph, std::string>> graphs = {
            {chainMessages(stages), label}};
        if (stages >= 3)
          graphs.push_back({skipMessages(stages), label + " skip"});
        for (auto &[messages, name] : graphs)
          tables.push_back({c.kind, c.virtualStages, c.split, layout,
                            messages,
                            buildSchedule(c.kind, layout, messages, c.split),
                            name});
      }
  return tables;
}

} // namespace pp::runtime::testing

#endif // PP_TEST_SCHEDULETESTING_H
