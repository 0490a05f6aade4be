//===- DataParallelActions.cpp - gradient reductions and ZeRO-3 gathers ---===//
//
// Lowers a compute table to one that also says when each stage's
// data-parallel collectives start, as PyTorch's schedule runtime adds
// UNSHARD, RESHARD and REDUCE_GRAD to a compute-only table.
//
//===----------------------------------------------------------------------===//

#include "runtime/schedules/ActionMessages.h"
#include "runtime/schedules/Schedule.h"

#include <algorithm>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// A stage-level action of `kind` for `stage`.
Action stageAction(ActionKind kind, int64_t stage) {
  Action action;
  action.kind = kind;
  action.stage = stage;
  return action;
}

/// Whether `kind` accumulates a stage's weight gradients.
bool accumulatesGradients(ActionKind kind) {
  return kind == ActionKind::Backward || kind == ActionKind::BackwardWeight;
}

/// Where in a row the data-parallel actions of one rank go: `before[i]`
/// are inserted before action i, `after[i]` after it.
struct Insertions {
  std::vector<std::vector<Action>> before, after;
};

/// The index past the Sends right after action `i` of `row`.
size_t afterSends(const std::vector<Action> &row, size_t i) {
  while (i + 1 < row.size() && row[i + 1].kind == ActionKind::Send)
    ++i;
  return i;
}

/// The index of the first of the Recvs right before action `i` of `row`.
size_t beforeRecvs(const std::vector<Action> &row, size_t i) {
  while (i > 0 && row[i - 1].kind == ActionKind::Recv)
    --i;
  return i;
}

Insertions insertionsFor(const std::vector<Action> &row,
                         const std::vector<int64_t> &stages,
                         const DataParallelism &dataParallel) {
  Insertions at{std::vector<std::vector<Action>>(row.size()),
                std::vector<std::vector<Action>>(row.size())};
  // Stages in the order of their first compute, so that gathers issued
  // at one place come in the order they are waited for.
  std::vector<std::pair<size_t, int64_t>> firstUses;
  for (int64_t stage : stages) {
    std::optional<size_t> first, last, lastGradient;
    for (size_t i = 0; i < row.size(); ++i) {
      if (!isCompute(row[i].kind) || row[i].stage != stage)
        continue;
      first = first.value_or(i);
      last = i;
      if (accumulatesGradients(row[i].kind))
        lastGradient = i;
    }
    if (!first)
      continue;
    if (lastGradient && dataParallel.reducesGradients())
      at.after[afterSends(row, *lastGradient)].push_back(
          stageAction(ActionKind::ReduceGradients, stage));
    if (!dataParallel.gathersParameters())
      continue;
    firstUses.push_back({*first, stage});
    at.after[afterSends(row, *last)].push_back(
        stageAction(ActionKind::ReleaseParameters, stage));
  }
  // Prefetch: a gather starts one compute action ahead of the stage's
  // first, before that action's Recvs.
  std::sort(firstUses.begin(), firstUses.end());
  for (auto [first, stage] : firstUses) {
    std::optional<size_t> previous;
    for (size_t i = 0; i < first; ++i)
      if (isCompute(row[i].kind))
        previous = i;
    at.before[beforeRecvs(row, previous.value_or(first))].push_back(
        stageAction(ActionKind::GatherParameters, stage));
  }
  return at;
}

} // namespace

std::string dataParallelProblem(const DataParallelism &dataParallel) {
  if (dataParallel.degree < 1)
    return "the data-parallel degree must be at least 1, not " +
           std::to_string(dataParallel.degree);
  if (dataParallel.zeroLevel < 0 || dataParallel.zeroLevel > kMaxZeroLevel)
    return "the ZeRO level must be 0 to " + std::to_string(kMaxZeroLevel) +
           ", not " + std::to_string(dataParallel.zeroLevel);
  return "";
}

bool hasDataParallelActions(const ScheduleTable &table) {
  return std::any_of(table.begin(), table.end(), [](const auto &row) {
    return std::any_of(row.begin(), row.end(), [](const Action &action) {
      return isDataParallel(action.kind);
    });
  });
}

void addDataParallelActions(ScheduleTable &table, const PipelineLayout &layout,
                            const DataParallelism &dataParallel) {
  std::string problem = dataParallelProblem(dataParallel);
  if (problem.empty())
    problem = layoutProblem(layout);
  if (problem.empty() && static_cast<int64_t>(table.size()) != layout.ranks)
    problem = "the schedule lists " + std::to_string(table.size()) +
              " ranks, but the pipeline has " + std::to_string(layout.ranks);
  if (problem.empty() && hasDataParallelActions(table))
    problem = "the schedule already has data-parallel actions (reduce, "
              "gather, release); add them to a table without";
  if (!problem.empty())
    throw std::invalid_argument(problem);
  for (int64_t rank = 0; rank < layout.ranks; ++rank) {
    std::vector<Action> &row = table[rank];
    Insertions at = insertionsFor(row, layout.stagesOf(rank), dataParallel);
    std::vector<Action> lowered;
    for (size_t i = 0; i < row.size(); ++i) {
      lowered.insert(lowered.end(), at.before[i].begin(), at.before[i].end());
      lowered.push_back(row[i]);
      lowered.insert(lowered.end(), at.after[i].begin(), at.after[i].end());
    }
    row = std::move(lowered);
  }
}

} // namespace pp::runtime
