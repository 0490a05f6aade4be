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
  for (auto [name, values] :
       {std::make_pair("parameterBytes", &costs.parameterBytes),
        std::make_pair("trainableBytes", &costs.trainableBytes),
        std::make_pair("computeCopyBytes", &costs.computeCopyBytes),
        std::make_pair("inputToWeightBytes", &costs.inputToWeightBytes)})
    if (!values->empty() && static_cast<int64_t>(values->size()) != stages)
      return std::string("the stage costs give ") + name + " for " +
             std::to_string(values->size()) +
             " stages (give none, or one per stage), the layout has " +
             std::to_string(stages);
  return dataParallelProblem(costs.dataParallel);
}

/// `values[stage]`, 0 when `values` is empty.
double stageValue(const std::vector<double> &values, int64_t stage) {
  return values.empty() ? 0 : values[stage];
}

/// What the stages of one rank hold as the step goes.
class RankMemory {
public:
  RankMemory(const StageCosts &costs, const std::vector<int64_t> &stages)
      : costs(costs) {
    const DataParallelism &dp = costs.dataParallel;
    share = 1.0 / static_cast<double>(dp.degree);
    int level = dp.effectiveLevel();
    for (int64_t s : stages) {
      HeldBytes &bytes = held[s];
      bytes.parameters = level >= 3 ? parameters(s) * share : whole(s);
      bytes.gradients = trainable(s) * (level >= 2 ? share : 1);
      bytes.optimizerState = costs.optimizerStatePerByte * trainable(s) *
                             (level >= 1 ? share : 1);
    }
  }

  /// Applies what `action` does to memory (activations: `activations`
  /// bytes kept, negative when freed).
  void apply(const Action &action, double activations) {
    if (action.stage < 0)
      return;
    HeldBytes &bytes = held[action.stage];
    bytes.activations += activations;
    int level = costs.dataParallel.effectiveLevel();
    if (action.kind == ActionKind::GatherParameters)
      bytes.parameters = whole(action.stage);
    if (action.kind == ActionKind::ReleaseParameters)
      bytes.parameters = parameters(action.stage) * share;
    if (level >= 2 && accumulatesGradients(action.kind))
      bytes.gradients = trainable(action.stage);
  }

  /// ZeRO-2 and up: the reduce-scatter of `stage` ended; the gradients
  /// outside this replica's share are freed.
  void reduced(int64_t stage) {
    held[stage].gradients = trainable(stage) * share;
  }

  /// Records every stage's holdings and the rank's peak.
  void record(SimulatedStep &step, int64_t rank) const {
    HeldBytes total;
    for (const auto &[stage, bytes] : held) {
      step.stageMemory[stage].push_back(bytes);
      total += bytes;
    }
    if (total.total() > step.peakMemory[rank].total())
      step.peakMemory[rank] = total;
  }

private:
  double parameters(int64_t s) const {
    return stageValue(costs.parameterBytes, s);
  }
  /// The values whole and their compute copies.
  double whole(int64_t s) const {
    return parameters(s) + stageValue(costs.computeCopyBytes, s);
  }
  double trainable(int64_t s) const {
    return stageValue(costs.trainableBytes, s);
  }

  const StageCosts &costs;
  double share = 1;
  std::map<int64_t, HeldBytes> held;
};

/// Plays the ranks' lists together.
class Simulation {
public:
  Simulation(const ScheduleTable &table, const PipelineLayout &layout,
             const MessageGraph &messages, const StageCosts &costs)
      : table(table), layout(layout), messages(messages), costs(costs),
        next(layout.ranks, 0), clock(layout.ranks, 0.0),
        held(layout.ranks, 0.0), streamFree(layout.ranks, 0.0),
        copyFree(layout.ranks, 0.0), gatherEnd(layout.stages(), 0.0),
        perRank(layout.ranks) {
    step.busySeconds.assign(layout.ranks, 0.0);
    step.peakActivationBytes.assign(layout.ranks, 0.0);
    step.peakMemory.assign(layout.ranks, HeldBytes());
    step.stageMemory.assign(layout.stages(), {});
    for (int64_t rank = 0; rank < layout.ranks; ++rank) {
      memory.emplace_back(costs, layout.stagesOf(rank));
      memory.back().record(step, rank);
    }
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
    double kept = stageValue(costs.inputToWeightBytes, s);
    switch (action.kind) {
    case ActionKind::Forward:
      return {costs.forward[s], saved};
    case ActionKind::Backward:
      return {input + weight, -saved};
    case ActionKind::BackwardInput:
      return {input, kept - freed};
    case ActionKind::BackwardWeight:
      return {weight, freed - saved - kept};
    default:
      return {costs.forward[s], 0};
    }
  }

  /// Seconds of the collective of data-parallel action `action`.
  double collectiveSeconds(const Action &action) const {
    const DataParallelism &dp = costs.dataParallel;
    if (costs.dataParallelBytesPerSecond <= 0 || dp.degree < 2)
      return 0;
    double moved = static_cast<double>(dp.degree - 1) /
                   static_cast<double>(dp.degree);
    double bytes = action.kind == ActionKind::GatherParameters
                       ? stageValue(costs.parameterBytes, action.stage)
                       : stageValue(costs.trainableBytes, action.stage);
    // Below ZeRO-2 the gradients are all-reduced: a reduce-scatter and an
    // all-gather.
    if (action.kind == ActionKind::ReduceGradients && dp.effectiveLevel() < 2)
      moved *= 2;
    return moved * bytes / costs.dataParallelBytesPerSecond;
  }

  /// Frees the gradients of the reduce-scatters of `rank` that ended by
  /// `time`.
  void finishReductions(int64_t rank, double time) {
    std::vector<std::pair<double, int64_t>> &pending = reductions[rank];
    for (auto it = pending.begin(); it != pending.end();)
      if (it->first <= time) {
        memory[rank].reduced(it->second);
        it = pending.erase(it);
      } else {
        ++it;
      }
  }

  /// Starts offload action `simulated` of `rank` on its copy stream;
  /// returns the activation bytes it frees (negative) or takes again.
  double startCopy(int64_t rank, SimulatedAction &simulated) {
    const Action &action = simulated.action;
    double saved = costs.savedBytes[action.stage];
    simulated.start = std::max(clock[rank], copyFree[rank]);
    simulated.end = copyFree[rank] =
        simulated.start + (costs.hostCopyBytesPerSecond > 0
                               ? saved / costs.hostCopyBytesPerSecond
                               : 0);
    if (action.kind == ActionKind::OffloadActivations)
      return -saved;
    reloadEnd[{action.stage, action.microbatch}] = simulated.end;
    return saved;
  }

  /// When the saved values compute action `action` takes are back: the end
  /// of its reload, if its microbatch was offloaded (0 otherwise).
  double reloaded(const Action &action) const {
    if (!takesSavedValues(action.kind))
      return 0;
    auto end = reloadEnd.find({action.stage, action.microbatch});
    return end == reloadEnd.end() ? 0 : end->second;
  }

  /// Starts data-parallel action `action` of `rank`: gathers and reduces
  /// on the rank's communication stream, releases at once.
  void startCollective(int64_t rank, SimulatedAction &simulated) {
    const Action &action = simulated.action;
    if (action.kind == ActionKind::ReleaseParameters)
      return;
    simulated.start = std::max(clock[rank], streamFree[rank]);
    simulated.end = streamFree[rank] =
        simulated.start + collectiveSeconds(action);
    if (action.kind == ActionKind::GatherParameters)
      gatherEnd[action.stage] = simulated.end;
    else if (costs.dataParallel.effectiveLevel() >= 2)
      reductions[rank].push_back({simulated.end, action.stage});
  }

  /// Runs the next action of `rank` if it can; false when it waits (a
  /// Recv for a Send, the Optimizer for the other ranks).
  bool advance(int64_t rank) {
    const Action &action = table[rank][next[rank]];
    SimulatedAction simulated{rank, action, clock[rank], clock[rank]};
    double bytes = 0;
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
    } else if (isDataParallel(action.kind)) {
      startCollective(rank, simulated);
    } else if (isOffload(action.kind)) {
      bytes = startCopy(rank, simulated);
    } else {
      double seconds;
      std::tie(seconds, bytes) = effect(action);
      simulated.start = clock[rank] =
          std::max({clock[rank], gatherEnd[action.stage], reloaded(action)});
      simulated.end = clock[rank] += seconds;
      step.busySeconds[rank] += seconds;
    }
    held[rank] += bytes;
    step.peakActivationBytes[rank] =
        std::max(step.peakActivationBytes[rank], held[rank]);
    finishReductions(rank, simulated.start);
    memory[rank].apply(action, bytes);
    memory[rank].record(step, rank);
    perRank[rank].push_back(simulated);
    ++next[rank];
    return true;
  }

  /// Runs the Optimizer on every rank once all wait at it or ended and
  /// their reductions ended (it all-reduces the gradient norm over the
  /// pipeline); false when some rank waits elsewhere.
  bool optimize() {
    double start = 0;
    bool any = false;
    for (int64_t rank = 0; rank < layout.ranks; ++rank) {
      if (next[rank] >= table[rank].size())
        continue;
      if (table[rank][next[rank]].kind != ActionKind::Optimizer)
        return false;
      start = std::max({start, clock[rank], streamFree[rank]});
      any = true;
    }
    if (!any)
      return false;
    for (int64_t rank = 0; rank < layout.ranks; ++rank) {
      if (next[rank] >= table[rank].size())
        continue;
      clock[rank] = start + costs.optimizerSeconds;
      step.busySeconds[rank] += costs.optimizerSeconds;
      finishReductions(rank, start);
      memory[rank].record(step, rank);
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
  /// Per rank: when it is free, the activation bytes it holds, and when
  /// its communication and copy streams are free.
  std::vector<double> clock, held, streamFree, copyFree;
  /// Per offloaded (stage, microbatch): when its reload ends.
  std::map<std::pair<int64_t, int64_t>, double> reloadEnd;
  /// Per stage: when its last GatherParameters ends.
  std::vector<double> gatherEnd;
  /// Per rank: its reduce-scatters in flight (end, stage), and what its
  /// stages hold.
  std::map<int64_t, std::vector<std::pair<double, int64_t>>> reductions;
  std::vector<RankMemory> memory;
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

HeldBytes &HeldBytes::operator+=(const HeldBytes &other) {
  parameters += other.parameters;
  gradients += other.gradients;
  optimizerState += other.optimizerState;
  activations += other.activations;
  return *this;
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
           (!isCompute(action.kind) && !isOffload(action.kind) &&
            !messageClass(action.of))))
        problem = "cannot simulate " + describeAction(action) +
                  "; checkSchedule() says why";
  if (!problem.empty())
    throw std::invalid_argument(problem);
  return Simulation(table, layout, messages, costs).run();
}

} // namespace pp::runtime
