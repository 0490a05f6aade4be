//===- ScheduleGenerators.cpp - the built-in schedules --------------------===//
//
// Each generator orders the compute actions of every rank; withMessages()
// then adds the Recvs, Sends and Optimizers. GPipe, 1F1B, interleaved 1F1B
// and ZB-H1 follow fixed formulas; ZB-V places its actions where the ranks
// would idle, by list scheduling against equal action costs
// (ListScheduler).
//
//===----------------------------------------------------------------------===//

#include "runtime/schedules/ActionMessages.h"
#include "runtime/schedules/Schedule.h"

#include <algorithm>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// Compute actions only, per rank.
using ComputeOrder = std::vector<std::vector<Action>>;

Action compute(ActionKind kind, int64_t stage, int64_t microbatch) {
  Action action;
  action.kind = kind;
  action.stage = stage;
  action.microbatch = microbatch;
  return action;
}

/// `kind` of each of `stages` (in that order), each over every microbatch
/// in order: a rank runs its stages breadth first, in the order their
/// inputs arrive when all stages cost the same.
std::vector<Action> overMicrobatches(ActionKind kind,
                                     const std::vector<int64_t> &stages,
                                     int64_t microbatches) {
  std::vector<Action> actions;
  for (int64_t stage : stages)
    for (int64_t mb = 0; mb < microbatches; ++mb)
      actions.push_back(compute(kind, stage, mb));
  return actions;
}

/// GPipe: every forward, then every backward (stages of a rank in reverse);
/// eval: every forward only.
ComputeOrder gpipeOrder(const PipelineLayout &layout, ActionKind forward,
                        std::optional<ActionKind> backward) {
  ComputeOrder order(layout.ranks);
  for (int64_t rank = 0; rank < layout.ranks; ++rank) {
    std::vector<int64_t> stages = layout.stagesOf(rank);
    order[rank] = overMicrobatches(forward, stages, layout.microbatches);
    if (!backward)
      continue;
    std::reverse(stages.begin(), stages.end());
    std::vector<Action> backwards =
        overMicrobatches(*backward, stages, layout.microbatches);
    order[rank].insert(order[rank].end(), backwards.begin(), backwards.end());
  }
  return order;
}

/// `warmup` forwards, then one forward and one backward in turn, then the
/// remaining backwards.
std::vector<Action> alternate(const std::vector<Action> &forwards,
                              const std::vector<Action> &backwards,
                              int64_t warmup) {
  std::vector<Action> actions;
  size_t f = 0, b = 0;
  for (; f < forwards.size() && static_cast<int64_t>(f) < warmup; ++f)
    actions.push_back(forwards[f]);
  while (f < forwards.size() || b < backwards.size()) {
    if (f < forwards.size())
      actions.push_back(forwards[f++]);
    if (b < backwards.size())
      actions.push_back(backwards[b++]);
  }
  return actions;
}

/// 1F1B: the stage on each rank warms up with as many forwards as stages
/// follow it (at most the microbatches), then alternates.
ComputeOrder oneForwardOneBackwardOrder(const PipelineLayout &layout) {
  ComputeOrder order(layout.ranks);
  int64_t m = layout.microbatches;
  for (int64_t rank = 0; rank < layout.ranks; ++rank) {
    std::vector<int64_t> stages = layout.stagesOf(rank);
    int64_t warmup = std::min(layout.stages() - stages.front() - 1, m);
    order[rank] =
        alternate(overMicrobatches(ActionKind::Forward, stages, m),
                  overMicrobatches(ActionKind::Backward, stages, m), warmup);
  }
  return order;
}

/// Megatron's interleaved 1F1B on loop placement: microbatches in groups
/// of N, the last one also taking the m mod N left over (all m in one group
/// when m < N); within a group a rank runs its chunks in order for the
/// forwards, in reverse order for the backwards, each over the group's
/// microbatches. Rank r warms up with 2 (N - r - 1) + (V - 1) G forwards,
/// G the largest group (Megatron's formula, which has G = N). With equal
/// costs its bubble is (N - 1) / (V m + N - 1) for any m >= N.
ComputeOrder interleavedOrder(const PipelineLayout &layout) {
  int64_t n = layout.ranks, m = layout.microbatches;
  int64_t v = layout.stages() / n;
  std::vector<int64_t> groupStarts;
  for (int64_t first = 0; first + n <= m || first == 0; first += n)
    groupStarts.push_back(first);
  groupStarts.push_back(m);
  int64_t largest = m - groupStarts[groupStarts.size() - 2];
  ComputeOrder order(n);
  for (int64_t rank = 0; rank < n; ++rank) {
    std::vector<Action> forwards, backwards;
    for (size_t g = 0; g + 1 < groupStarts.size(); ++g)
      for (int64_t chunk = 0; chunk < v; ++chunk)
        for (int64_t mb = groupStarts[g]; mb < groupStarts[g + 1]; ++mb) {
          forwards.push_back(
              compute(ActionKind::Forward, chunk * n + rank, mb));
          backwards.push_back(
              compute(ActionKind::Backward, (v - 1 - chunk) * n + rank, mb));
        }
    int64_t warmup = 2 * (n - rank - 1) + (v - 1) * largest;
    order[rank] = alternate(forwards, backwards, warmup);
  }
  return order;
}

/// Orders the compute actions of a split backward by simulating all ranks
/// with equal action costs: whenever a rank is free it runs, of the
/// actions whose inputs are there, a BackwardInput first (the ranks before
/// wait for it), else a Forward, else a BackwardWeight, which so fills the
/// time the rank would idle. A rank keeps at most `maxInFlight[rank]`
/// microbatches between a Forward and its BackwardInput (the activation
/// memory of the schedule) and runs a BackwardWeight first once more than
/// `maxPendingWeights[rank]` wait. Each stage runs each kind in increasing
/// microbatch order; of two actions of one kind, the older microbatch goes
/// first, then the later stage.
class ListScheduler {
public:
  ListScheduler(const PipelineLayout &layout, const MessageGraph &messages,
                std::vector<int64_t> maxInFlight,
                std::vector<int64_t> maxPendingWeights)
      : layout(layout), messages(messages), maxInFlight(std::move(maxInFlight)),
        maxPendingWeights(std::move(maxPendingWeights)) {}

  /// The order, or nullopt when the memory bound leaves every rank
  /// waiting.
  std::optional<ComputeOrder> run() {
    int64_t stages = layout.stages(), m = layout.microbatches;
    next.assign(3, std::vector<int64_t>(stages, 0));
    end.assign(3, std::vector<std::vector<double>>(
                      stages, std::vector<double>(m, kNotYet)));
    rankFree.assign(layout.ranks, 0.0);
    inFlight.assign(layout.ranks, 0);
    pendingWeights.assign(layout.ranks, 0);
    ComputeOrder order(layout.ranks);
    for (int64_t left = 3 * stages * m; left > 0; --left) {
      std::optional<Choice> best;
      for (int64_t rank = 0; rank < layout.ranks; ++rank) {
        std::optional<Choice> choice = choose(rank);
        if (choice && (!best || choice->start < best->start))
          best = choice;
      }
      if (!best)
        return std::nullopt;
      start(*best);
      order[best->rank].push_back(
          compute(kKinds[best->kind], best->stage, best->microbatch));
    }
    return order;
  }

private:
  static constexpr double kNotYet = -1;
  static constexpr ActionKind kKinds[3] = {ActionKind::Forward,
                                           ActionKind::BackwardInput,
                                           ActionKind::BackwardWeight};
  enum Half { F = 0, I = 1, W = 2 };

  struct Choice {
    int64_t rank, kind, stage, microbatch;
    double start;
  };

  /// When the next action of `kind` on `stage` can start, by its inputs
  /// only; nullopt when it has none left or waits for an unscheduled one.
  std::optional<double> readyAt(int64_t kind, int64_t stage) const {
    int64_t mb = next[kind][stage];
    int64_t m = layout.microbatches;
    if (mb >= m || (kind == I && mb >= next[F][stage]) ||
        (kind == W && mb >= next[I][stage]))
      return std::nullopt;
    double ready = kind == F ? 0.0 : end[kind - 1][stage][mb];
    if (kind != W) {
      for (int64_t source : messageSources(messages, stage, kKinds[kind])) {
        if (end[kind][source][mb] == kNotYet)
          return std::nullopt;
        ready = std::max(ready, end[kind][source][mb]);
      }
    }
    return ready;
  }

  /// What `rank` runs next and when, or nullopt when nothing can start.
  std::optional<Choice> choose(int64_t rank) const {
    std::vector<Choice> candidates;
    std::vector<int64_t> stages = layout.stagesOf(rank);
    for (auto stage = stages.rbegin(); stage != stages.rend(); ++stage)
      for (int64_t kind : {F, I, W}) {
        if (kind == F && inFlight[rank] >= maxInFlight[rank])
          continue;
        if (std::optional<double> ready = readyAt(kind, *stage))
          candidates.push_back({rank, kind, *stage, next[kind][*stage],
                                std::max(*ready, rankFree[rank])});
      }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Choice &a, const Choice &b) {
                       return a.microbatch < b.microbatch;
                     });
    if (candidates.empty())
      return std::nullopt;
    double earliest = candidates.front().start;
    for (const Choice &candidate : candidates)
      earliest = std::min(earliest, candidate.start);
    bool weightsFirst = pendingWeights[rank] > maxPendingWeights[rank];
    std::vector<int64_t> priority = weightsFirst
                                        ? std::vector<int64_t>{W, I, F}
                                        : std::vector<int64_t>{I, F, W};
    for (int64_t kind : priority)
      for (const Choice &candidate : candidates)
        if (candidate.kind == kind && candidate.start <= earliest)
          return candidate;
    return std::nullopt;
  }

  /// Runs `choice`: it ends one time unit after it starts.
  void start(const Choice &choice) {
    double finish = choice.start + 1;
    end[choice.kind][choice.stage][choice.microbatch] = finish;
    ++next[choice.kind][choice.stage];
    rankFree[choice.rank] = finish;
    inFlight[choice.rank] += choice.kind == F ? 1 : choice.kind == I ? -1 : 0;
    pendingWeights[choice.rank] += choice.kind == I   ? 1
                                   : choice.kind == W ? -1
                                                      : 0;
  }

  const PipelineLayout &layout;
  const MessageGraph &messages;
  std::vector<int64_t> maxInFlight, maxPendingWeights;
  /// Per half (F, I, W) and stage: the next microbatch, and when each ends.
  std::vector<std::vector<int64_t>> next;
  std::vector<std::vector<std::vector<double>>> end;
  std::vector<double> rankFree;
  std::vector<int64_t> inFlight, pendingWeights;
};

/// The list-scheduled order with the given bounds, loosened by one
/// microbatch on every rank until no rank is left waiting. Without bounds
/// that only happens when the messages wait on each other in a cycle.
ComputeOrder listScheduled(const PipelineLayout &layout,
                           const MessageGraph &messages,
                           std::vector<int64_t> maxInFlight,
                           const std::vector<int64_t> &maxPendingWeights) {
  int64_t unbounded = layout.stages() * layout.microbatches;
  for (int64_t loosened = 0; loosened <= unbounded; ++loosened) {
    ListScheduler scheduler(layout, messages, maxInFlight, maxPendingWeights);
    if (std::optional<ComputeOrder> order = scheduler.run())
      return *order;
    for (int64_t &bound : maxInFlight)
      ++bound;
  }
  throw std::invalid_argument(
      "no order runs every action: the stages' messages wait on each other "
      "in a cycle; a forward takes messages from earlier stages only, a "
      "backward from later ones");
}

/// ZB-H1: the forwards and input halves in 1F1B's order; a rank with k
/// stages before it runs each weight half k input halves late, so that the
/// last k + 1 fill the wait for the input gradients of the drain (the
/// ranks before it still run their input halves then). A rank holds at
/// most S - k microbatches until their input halves and k + 1 until their
/// weight halves: S in all, 1F1B's peak.
ComputeOrder zeroBubbleH1Order(const PipelineLayout &layout) {
  ComputeOrder order(layout.ranks);
  int64_t m = layout.microbatches;
  for (int64_t rank = 0; rank < layout.ranks; ++rank) {
    std::vector<int64_t> stages = layout.stagesOf(rank);
    // One stage per rank: its index counts the stages before it.
    int64_t stage = stages.front();
    int64_t warmup = std::min(layout.stages() - stage - 1, m);
    int64_t weights = 0;
    for (const Action &action : alternate(
             overMicrobatches(ActionKind::Forward, stages, m),
             overMicrobatches(ActionKind::BackwardInput, stages, m), warmup)) {
      order[rank].push_back(action);
      if (action.kind == ActionKind::BackwardInput &&
          action.microbatch >= stage)
        order[rank].push_back(
            compute(ActionKind::BackwardWeight, stage, weights++));
    }
    while (weights < m)
      order[rank].push_back(
          compute(ActionKind::BackwardWeight, stage, weights++));
  }
  return order;
}

/// ZB-V: each rank's two chunks hold half a 1F1B stage's activations each,
/// so 2N chunk microbatches in flight match 1F1B's first rank.
ComputeOrder zeroBubbleVOrder(const PipelineLayout &layout,
                              const MessageGraph &messages) {
  std::vector<int64_t> maxInFlight(layout.ranks, 2 * layout.ranks);
  std::vector<int64_t> maxPendingWeights(layout.ranks, layout.ranks - 1);
  return listScheduled(layout, messages, maxInFlight, maxPendingWeights);
}

/// `order` with each compute action's Recv before it and Send after it
/// where its messages cross ranks, and an Optimizer last on every rank
/// when `training`.
ScheduleTable withMessages(const PipelineLayout &layout,
                           const MessageGraph &messages,
                           const ComputeOrder &order, bool training) {
  ScheduleTable table(layout.ranks);
  for (int64_t rank = 0; rank < layout.ranks; ++rank) {
    auto crossesRanks = [&](const std::set<int64_t> &peers) {
      return std::any_of(peers.begin(), peers.end(), [&](int64_t peer) {
        return layout.stageRanks[peer] != rank;
      });
    };
    for (const Action &action : order[rank]) {
      Action message = action;
      message.of = action.kind;
      if (crossesRanks(messageSources(messages, action.stage, action.kind))) {
        message.kind = ActionKind::Recv;
        table[rank].push_back(message);
      }
      table[rank].push_back(action);
      if (crossesRanks(messageTargets(messages, action.stage, action.kind))) {
        message.kind = ActionKind::Send;
        table[rank].push_back(message);
      }
    }
    if (training)
      table[rank].push_back(Action{ActionKind::Optimizer});
  }
  return table;
}

/// Whether `layout` places stage s on rank placeStages(...)[s].
bool isPlaced(const PipelineLayout &layout, int64_t virtualStages,
              Placement placement) {
  return layout.stageRanks ==
         placeStages(layout.ranks, virtualStages, placement);
}

} // namespace

std::string scheduleProblem(ScheduleKind kind, const PipelineLayout &layout,
                            bool splitBackward) {
  if (std::string problem = layoutProblem(layout); !problem.empty())
    return problem;
  std::string name = scheduleName(kind);
  if (needsSplitBackward(kind) && !splitBackward)
    return name +
           " needs a split backward (its input- and weight-gradient halves "
           "run apart); compile with split-backward=true (pp-run does this "
           "for zb-h1/zb-v)";
  int64_t n = layout.ranks, stages = layout.stages();
  std::string where = "the package places " + std::to_string(stages) +
                      (stages == 1 ? " stage" : " stages") + " on " +
                      std::to_string(n) + (n == 1 ? " rank" : " ranks");
  switch (kind) {
  case ScheduleKind::OneForwardOneBackward:
  case ScheduleKind::ZeroBubbleH1:
    if (stages != n)
      return name + " runs one stage per rank, but " + where +
             "; compile with virtual-stages=1, or use --schedule gpipe or "
             "interleaved-1f1b";
    break;
  case ScheduleKind::Interleaved1F1B:
    if (stages % n != 0 || !isPlaced(layout, stages / n, Placement::Loop))
      return name +
             " needs loop placement (stage s on rank s mod N, the same "
             "number of stages on every rank), but " +
             where +
             " otherwise; compile with placement=loop, or use --schedule "
             "gpipe";
    break;
  case ScheduleKind::ZeroBubbleV:
    if (stages != 2 * n || !isPlaced(layout, 2, Placement::V))
      return name +
             " needs two stages per rank in V placement (stage s on rank s "
             "for s < N, on rank 2N-1-s after), but " +
             where + " otherwise; compile with virtual-stages=2 placement=v";
    break;
  case ScheduleKind::GPipe:
  case ScheduleKind::Eval:
    break;
  }
  return "";
}

ScheduleTable buildSchedule(ScheduleKind kind, const PipelineLayout &layout,
                            const MessageGraph &messages, bool splitBackward) {
  std::string problem = scheduleProblem(kind, layout, splitBackward);
  if (problem.empty())
    problem = messageGraphProblem(messages, layout.stages());
  if (!problem.empty())
    throw std::invalid_argument(problem);
  auto build = [&](const ComputeOrder &order) {
    return withMessages(layout, messages, order, kind != ScheduleKind::Eval);
  };
  switch (kind) {
  case ScheduleKind::GPipe:
    return build(gpipeOrder(layout, ActionKind::Forward, ActionKind::Backward));
  case ScheduleKind::Eval:
    return build(gpipeOrder(layout, ActionKind::Eval, std::nullopt));
  case ScheduleKind::OneForwardOneBackward:
    return build(oneForwardOneBackwardOrder(layout));
  case ScheduleKind::Interleaved1F1B:
    return build(layout.stages() == layout.ranks
                     ? oneForwardOneBackwardOrder(layout)
                     : interleavedOrder(layout));
  case ScheduleKind::ZeroBubbleH1:
    return build(zeroBubbleH1Order(layout));
  case ScheduleKind::ZeroBubbleV:
    return build(zeroBubbleVOrder(layout, messages));
  }
  throw std::invalid_argument("unknown schedule kind");
}

} // namespace pp::runtime
