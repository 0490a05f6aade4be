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

/// Where a stage's compute actions are in a row.
struct StageSpan {
  int64_t stage;
  size_t first, last;
  /// Its last B or W, when it has one.
  std::optional<size_t> lastGradient;
};

std::optional<StageSpan> spanOf(const std::vector<Action> &row,
                                int64_t stage) {
  std::optional<StageSpan> span;
  for (size_t i = 0; i < row.size(); ++i) {
    if (!isCompute(row[i].kind) || row[i].stage != stage)
      continue;
    if (!span)
      span = StageSpan{stage, i, i, std::nullopt};
    span->last = i;
    if (accumulatesGradients(row[i].kind))
      span->lastGradient = i;
  }
  return span;
}

/// Where the gather of a stage whose first compute is action `first` of
/// `row` goes: before the compute action ahead of it and that action's
/// Recvs (prefetch one action ahead), or before `first`'s own Recvs when
/// no compute is ahead.
size_t gatherPoint(const std::vector<Action> &row, size_t first) {
  size_t ahead = first;
  for (size_t i = 0; i < first; ++i)
    if (isCompute(row[i].kind))
      ahead = i;
  return beforeRecvs(row, ahead);
}

/// The data-parallel actions of the `stages` of `row`.
RowInsertions insertionsFor(const std::vector<Action> &row,
                            const std::vector<int64_t> &stages,
                            const DataParallelism &dataParallel) {
  RowInsertions at(row.size());
  std::vector<StageSpan> spans;
  for (int64_t stage : stages)
    if (std::optional<StageSpan> span = spanOf(row, stage))
      spans.push_back(*span);
  // In the order of the stages' first computes, so that gathers issued
  // at one place come in the order they are waited for.
  std::sort(spans.begin(), spans.end(),
            [](const StageSpan &a, const StageSpan &b) {
              return a.first < b.first;
            });
  for (const StageSpan &span : spans) {
    if (span.lastGradient && dataParallel.reducesGradients())
      at.after[afterSends(row, *span.lastGradient)].push_back(
          stageAction(ActionKind::ReduceGradients, span.stage));
    if (!dataParallel.gathersParameters())
      continue;
    at.before[gatherPoint(row, span.first)].push_back(
        stageAction(ActionKind::GatherParameters, span.stage));
    at.after[afterSends(row, span.last)].push_back(
        stageAction(ActionKind::ReleaseParameters, span.stage));
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
    row = withInsertions(
        row, insertionsFor(row, layout.stagesOf(rank), dataParallel));
  }
}

} // namespace pp::runtime
