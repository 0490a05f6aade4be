//===- ScheduleSimulation.cpp - timing an action table --------------------===//

#include "runtime/schedules/ScheduleSimulation.h"

#include "runtime/schedules/ActionMessages.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace pp::runtime {
namespace {

/// Why `costs` does not cover `stages` stages ("" when it does).
std::string costsProblem(const StageCosts &costs, int64_t stages) {
  const std::pair<const char *, const std::vector<double> *> fields[] = {
      {"forward", &costs.forward},
      {"backwardInput", &costs.backwardInput},
      {"backwardWeight", &costs.backwardWeight},
      {"savedBytes", &costs.savedBytes},
      {"savedForInputBytes", &costs.savedForInputBytes}};
  for (auto [name, values] : fields)
    if (static_cast<int64_t>(values->size()) != stages)
      return std::string("the stage costs give ") + name + " for " +
             std::to_string(values->size()) + " stages, the layout has " +
             std::to_string(stages);
  return "";
}

/// Plays the ranks' lists together.
class Simulation {
public:
  Simulation(const ScheduleTable &table, const PipelineLayout &layout,
             const MessageGraph &messages, const StageCosts &costs)
      : table(table), layout(layout), messages(messages), costs(costs),
        next(layout.ranks, 0), clock(layout.ranks, 0.0),
        held(layout.ranks, 0.0), perRank(layout.ranks) {
    step.busySeconds.assign(layout.ranks, 0.0);
    step.peakActivationBytes.assign(layout.ranks, 0.0);
  }

  SimulatedStep run() {
    while (true) {
      for (bool progress = true; progress;) {
        progress = false;
        for (int64_t rank = 0; rank < layout.ranks; ++rank)
          while (next[rank] < table[rank].size() && advance(rank))
            progress = true;
      }
      if (!optimize())
        break;
    }
    for (int64_t rank = 0; rank < layout.ranks; ++rank)
      if (next[rank] < table[rank].size())
        throw std::invalid_argument(
            "cannot simulate the schedule: rank " + std::to_string(rank) +
            " waits forever at " + describeAction(table[rank][next[rank]]) +
            "; checkSchedule() says why");
    double first = 0, last = 0;
    bool any = false;
    for (std::vector<SimulatedAction> &actions : perRank)
      for (SimulatedAction &action : actions) {
        first = any ? std::min(first, action.start) : action.start;
        last = any ? std::max(last, action.end) : action.end;
        any = true;
        step.actions.push_back(action);
      }
    step.stepSeconds = last - first;
    double busy = 0;
    for (double seconds : step.busySeconds)
      busy += seconds;
    step.bubbleFraction =
        step.stepSeconds > 0
            ? 1 - busy / (static_cast<double>(layout.ranks) * step.stepSeconds)
            : 0;
    return std::move(step);
  }

private:
  /// Sends that ran: message class, stage, microbatch -> when.
  using SendKey = std::tuple<ActionKind, int64_t, int64_t>;

  /// When the messages of a Recv on `rank` have all arrived, or nullopt
  /// while one's Send has not run.
  std::optional<double> arrival(int64_t rank, const Action &recv) const {
    double at = 0;
    for (int64_t source : messageSources(messages, recv.stage, recv.of)) {
      if (layout.stageRanks[source] == rank)
        continue;
      auto sent =
          sendTimes.find({*messageClass(recv.of), source, recv.microbatch});
      if (sent == sendTimes.end())
        return std::nullopt;
      at = std::max(at, sent->second + costs.messageSeconds);
    }
    return at;
  }

  /// Seconds of compute action `action`, and the activation bytes it
  /// keeps (positive) or frees (negative).
  std::pair<double, double> effect(const Action &action) const {
    int64_t s = action.stage;
    double input = costs.backwardInput[s], weight = costs.backwardWeight[s];
    double saved = costs.savedBytes[s], freed = costs.savedForInputBytes[s];
    switch (action.kind) {
    case ActionKind::Forward:
      return {costs.forward[s], saved};
    case ActionKind::Backward:
      return {input + weight, -saved};
    case ActionKind::BackwardInput:
      return {input, -freed};
    case ActionKind::BackwardWeight:
      return {weight, freed - saved};
    default:
      return {costs.forward[s], 0};
    }
  }

  /// Runs the next action of `rank` if it can; false when it waits (a
  /// Recv for a Send, the Optimizer for the other ranks).
  bool advance(int64_t rank) {
    const Action &action = table[rank][next[rank]];
    SimulatedAction simulated{rank, action, clock[rank], clock[rank]};
    if (action.kind == ActionKind::Optimizer)
      return false;
    if (action.kind == ActionKind::Recv) {
      std::optional<double> at = arrival(rank, action);
      if (!at)
        return false;
      simulated.end = clock[rank] = std::max(clock[rank], *at);
    } else if (action.kind == ActionKind::Send) {
      sendTimes[{*messageClass(action.of), action.stage, action.microbatch}] =
          clock[rank];
    } else {
      auto [seconds, bytes] = effect(action);
      simulated.end = clock[rank] += seconds;
      step.busySeconds[rank] += seconds;
      held[rank] += bytes;
      step.peakActivationBytes[rank] =
          std::max(step.peakActivationBytes[rank], held[rank]);
    }
    perRank[rank].push_back(simulated);
    ++next[rank];
    return true;
  }

  /// Runs the Optimizer on every rank once all wait at it or ended (it
  /// all-reduces the gradient norm over the pipeline); false when some
  /// rank waits elsewhere.
  bool optimize() {
    double start = 0;
    bool any = false;
    for (int64_t rank = 0; rank < layout.ranks; ++rank) {
      if (next[rank] >= table[rank].size())
        continue;
      if (table[rank][next[rank]].kind != ActionKind::Optimizer)
        return false;
      start = std::max(start, clock[rank]);
      any = true;
    }
    if (!any)
      return false;
    for (int64_t rank = 0; rank < layout.ranks; ++rank) {
      if (next[rank] >= table[rank].size())
        continue;
      clock[rank] = start + costs.optimizerSeconds;
      step.busySeconds[rank] += costs.optimizerSeconds;
      perRank[rank].push_back(
          {rank, table[rank][next[rank]], start, clock[rank]});
      ++next[rank];
    }
    return true;
  }

  const ScheduleTable &table;
  const PipelineLayout &layout;
  const MessageGraph &messages;
  const StageCosts &costs;
  std::vector<size_t> next;
  /// Per rank: when it is free, and the activation bytes it holds.
  std::vector<double> clock, held;
  std::map<SendKey, double> sendTimes;
  std::vector<std::vector<SimulatedAction>> perRank;
  SimulatedStep step;
};

} // namespace

SimulatedStep simulateEqualStages(const ScheduleTable &table,
                                  const PipelineLayout &layout,
                                  const MessageGraph &messages) {
  return simulateSchedule(table, layout, messages,
                          StageCosts::uniform(layout.stages(), 1, 1, 1));
}

StageCosts StageCosts::uniform(int64_t stages, double f, double i, double w,
                               double saved) {
  StageCosts costs;
  costs.forward.assign(stages, f);
  costs.backwardInput.assign(stages, i);
  costs.backwardWeight.assign(stages, w);
  costs.savedBytes.assign(stages, saved);
  // The weight half needs the layers' inputs, most of what a forward
  // keeps: count all of it as held until then.
  costs.savedForInputBytes.assign(stages, 0.0);
  return costs;
}

SimulatedStep simulateSchedule(const ScheduleTable &table,
                               const PipelineLayout &layout,
                               const MessageGraph &messages,
                               const StageCosts &costs) {
  std::string problem = layoutProblem(layout);
  if (problem.empty())
    problem = costsProblem(costs, layout.stages());
  if (problem.empty() && static_cast<int64_t>(table.size()) != layout.ranks)
    problem = "the schedule lists " + std::to_string(table.size()) +
              " ranks, the layout " + std::to_string(layout.ranks);
  for (const std::vector<Action> &actions : table)
    for (const Action &action : actions)
      if (problem.empty() && action.kind != ActionKind::Optimizer &&
          (action.stage < 0 || action.stage >= layout.stages() ||
           (!isCompute(action.kind) && !messageClass(action.of))))
        problem = "cannot simulate " + describeAction(action) +
                  "; checkSchedule() says why";
  if (!problem.empty())
    throw std::invalid_argument(problem);
  return Simulation(table, layout, messages, costs).run();
}

} // namespace pp::runtime
