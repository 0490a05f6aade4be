//===- ScheduleTesting.h - layouts and message graphs for tests -*- C++ -*-===//

#ifndef PP_TEST_SCHEDULETESTING_H
#define PP_TEST_SCHEDULETESTING_H

#include "runtime/schedules/Schedule.h"

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

} // namespace pp::runtime::testing

#endif // PP_TEST_SCHEDULETESTING_H
