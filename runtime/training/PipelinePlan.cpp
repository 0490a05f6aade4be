//===- PipelinePlan.cpp - the action tables a package runs ----------------===//

#include "runtime/training/PipelinePlan.h"

#include "runtime/core/InputFile.h"
#include "runtime/training/ActivationMemory.h"
#include "runtime/schedules/ActionMessages.h"
#include "runtime/schedules/ScheduleFile.h"

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace pp::runtime {
namespace {

/// The compute action that runs a function of `phase` (a split backward's
/// halves are BackwardInput and BackwardWeight).
ActionKind computeActionOf(Phase phase) {
  switch (phase) {
  case Phase::Forward:
    return ActionKind::Forward;
  case Phase::Backward:
    return ActionKind::Backward;
  case Phase::BackwardInput:
    return ActionKind::BackwardInput;
  case Phase::BackwardWeight:
    return ActionKind::BackwardWeight;
  case Phase::Eval:
    return ActionKind::Eval;
  }
  return ActionKind::Forward;
}

std::string readFile(const std::string &path) {
  return readInputFile(path, "the schedule file (--schedule-file)");
}

/// Throws unless `table` is a valid table for `plan`'s layout.
void check(const ScheduleTable &table, const PipelinePlan &plan,
           bool training, const std::string &what) {
  std::string problem = checkSchedule(table, plan.layout, plan.messages,
                                      plan.splitBackward, training);
  if (!problem.empty())
    throw std::runtime_error(what + ": " + problem);
}

/// Adds the actions `dataParallel` needs to `table` (unless it lists them
/// itself) and proves it with them.
void addDataParallel(ScheduleTable &table, const PipelinePlan &plan,
                     bool training, const DataParallelism &dataParallel,
                     const std::string &what) {
  if (!hasDataParallelActions(table))
    addDataParallelActions(table, plan.layout, dataParallel);
  std::string problem =
      checkSchedule(table, plan.layout, plan.messages, plan.splitBackward,
                    training, dataParallel);
  if (!problem.empty())
    throw std::runtime_error(what + " with --dp " +
                             std::to_string(dataParallel.degree) +
                             " --zero " +
                             std::to_string(dataParallel.zeroLevel) + ": " +
                             problem);
}

} // namespace

bool actionRunsPhase(ActionKind action, Phase function) {
  ActionKind runs = computeActionOf(function);
  return action == runs ||
         (action == ActionKind::Backward &&
          (runs == ActionKind::BackwardInput ||
           runs == ActionKind::BackwardWeight));
}

MessageGraph messageGraphOf(const Package &package) {
  MessageGraph graph(package.numStages);
  for (int64_t s = 0; s < package.numStages; ++s)
    for (const StageFunctionInfo &function : package.stages[s].functions) {
      ActionKind kind = computeActionOf(function.phase);
      for (const MessageInfo &message : function.messages)
        (message.send ? graph[s].sendsTo : graph[s].receivesFrom)[kind].insert(
            message.peer);
    }
  return graph;
}

std::vector<MessageStream> crossRankStreams(const Package &package) {
  // By (class, sending stage, receiving stage); Eval joins Forward.
  std::map<std::tuple<ActionKind, int64_t, int64_t>, std::set<std::string>>
      names;
  for (int64_t s = 0; s < package.numStages; ++s)
    for (const StageFunctionInfo &function : package.stages[s].functions) {
      std::optional<ActionKind> kind =
          messageClass(computeActionOf(function.phase));
      if (!kind)
        continue;
      if (*kind == ActionKind::Eval)
        kind = ActionKind::Forward;
      for (const MessageInfo &message : function.messages)
        if (message.send &&
            package.stageRanks[s] != package.stageRanks[message.peer])
          for (const TensorInfo &tensor : message.tensors)
            names[{*kind, s, message.peer}].insert(tensor.name);
    }
  std::vector<MessageStream> streams;
  for (const auto &[key, tensors] : names)
    streams.push_back({package.stageRanks[std::get<1>(key)],
                       package.stageRanks[std::get<2>(key)],
                       {tensors.begin(), tensors.end()}});
  return streams;
}

StageCosts estimatedCosts(const Package &package) {
  // Equal times where the manifest has no estimates.
  StageCosts costs = package.stageEstimates.empty()
                         ? StageCosts::uniform(package.numStages, 1, 1, 1)
                         : costsOf(package.stageEstimates);
  costs.inputToWeightBytes.clear();
  for (int64_t s = 0; s < package.numStages; ++s) {
    SavedBytes saved = savedBytesOf(package, s);
    costs.savedBytes[s] = static_cast<double>(saved.forward);
    costs.savedForInputBytes[s] = static_cast<double>(saved.freedByInputHalf);
    costs.inputToWeightBytes.push_back(static_cast<double>(saved.inputToWeight));
  }
  return costs;
}

PipelinePlan planPipeline(const Package &package, const ScheduleChoice &choice,
                          int64_t microbatches,
                          const DataParallelism &dataParallel,
                          const OptimizerOptions *optimizer) {
  PipelinePlan plan;
  plan.layout.ranks = package.pipelineRanks();
  plan.layout.stageRanks = package.stageRanks;
  plan.layout.microbatches = microbatches;
  plan.messages = messageGraphOf(package);
  plan.splitBackward = package.splitsBackward();
  if (package.forwardOnly()) {
    // The eval table with forwards: each microbatch through the stages.
    MessageGraph asEval = plan.messages;
    for (StageMessages &stage : asEval) {
      stage.receivesFrom[ActionKind::Eval] =
          stage.receivesFrom[ActionKind::Forward];
      stage.sendsTo[ActionKind::Eval] = stage.sendsTo[ActionKind::Forward];
    }
    ScheduleTable table =
        buildSchedule(ScheduleKind::Eval, plan.layout, asEval, false);
    std::string problem =
        checkSchedule(table, plan.layout, asEval, false, /*training=*/false);
    if (!problem.empty())
      throw std::runtime_error("the forward-only schedule: " + problem);
    for (std::vector<Action> &actions : table)
      for (Action &action : actions) {
        if (action.kind == ActionKind::Eval)
          action.kind = ActionKind::Forward;
        if (action.of == ActionKind::Eval)
          action.of = ActionKind::Forward;
      }
    plan.training = std::move(table);
    plan.label = "forward-only";
    return plan;
  }
  if (!choice.file.empty()) {
    ScheduleText text = parseScheduleFile(readFile(choice.file), choice.file);
    if (text.layout.stageRanks != plan.layout.stageRanks ||
        text.layout.microbatches != microbatches)
      throw std::runtime_error(
          "the schedule file '" + choice.file + "' is for " +
          std::to_string(text.layout.stages()) + " stages on " +
          std::to_string(text.layout.ranks) + " ranks with " +
          std::to_string(text.layout.microbatches) +
          " microbatches, but the run has " +
          std::to_string(plan.layout.stages()) + " stages on " +
          std::to_string(plan.layout.ranks) + " ranks (stage-ranks must match "
          "the package's) with " + std::to_string(microbatches) +
          "; write the file for this layout (--print-schedule prints one)");
    plan.training = std::move(text.table);
    plan.label = "schedule file " + choice.file;
    check(plan.training, plan, /*training=*/true,
          "the schedule file '" + choice.file + "'");
  } else {
    std::string problem =
        scheduleProblem(choice.kind, plan.layout, plan.splitBackward);
    if (!problem.empty())
      throw std::runtime_error(problem);
    plan.training = buildSchedule(choice.kind, plan.layout, plan.messages,
                                  plan.splitBackward);
    plan.label = scheduleName(choice.kind);
    check(plan.training, plan, /*training=*/true,
          std::string("the ") + plan.label + " schedule");
  }
  if (choice.offloadActivations && !hasOffloadActions(plan.training)) {
    addOffloadActions(plan.training, plan.layout);
    check(plan.training, plan, /*training=*/true,
          "the " + plan.label + " schedule with --offload-activations");
  }
  addDataParallel(plan.training, plan, /*training=*/true, dataParallel,
                  "the " + plan.label + " schedule");
  if (package.hasEvalFunctions()) {
    plan.eval = buildSchedule(ScheduleKind::Eval, plan.layout, plan.messages,
                              plan.splitBackward);
    check(plan.eval, plan, /*training=*/false, "the eval schedule");
    addDataParallel(plan.eval, plan, /*training=*/false, dataParallel,
                    "the eval schedule");
  }
  plan.ideal = simulateEqualStages(plan.training, plan.layout, plan.messages);
  StageCosts costs = estimatedCosts(package);
  costs.dataParallel = dataParallel;
  if (optimizer)
    costs.optimizerStatePerByte =
        static_cast<double>(optimizerBufferNames(*optimizer).size());
  plan.predicted =
      simulateSchedule(plan.training, plan.layout, plan.messages, costs);
  return plan;
}

} // namespace pp::runtime
