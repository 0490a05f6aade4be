//===- OffloadActions.cpp - moving saved values out until their backward --===//
//
// Lowers a training table to one that also says when each microbatch's
// saved values leave the stage functions' memory and when they come back:
// the copies are schedule actions, so the check proves them, the simulator
// times them and counts the memory they free, and the trace shows them.
//
//===----------------------------------------------------------------------===//

#include "runtime/schedules/ActionMessages.h"
#include "runtime/schedules/Schedule.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// Whether `action` is the backward that first takes the saved values of
/// `forward`.
bool takesSavedValuesOf(const Action &action, const Action &forward) {
  return takesSavedValues(action.kind) && action.stage == forward.stage &&
         action.microbatch == forward.microbatch;
}

/// Where in `row` the offload actions go.
RowInsertions insertionsFor(const std::vector<Action> &row) {
  RowInsertions at(row.size());
  // A reload comes one compute action ahead of its backward, which with
  // the forward there makes two microbatches: stages that hold no more
  // gain nothing.
  std::map<int64_t, bool> gains;
  for (const Action &action : row)
    if (action.kind == ActionKind::Forward && !gains.count(action.stage))
      gains[action.stage] = inFlightMicrobatches(row, action.stage) > 2;
  for (size_t f = 0; f < row.size(); ++f) {
    if (row[f].kind != ActionKind::Forward || !gains.at(row[f].stage))
      continue;
    // The compute actions after the forward up to its backward.
    std::vector<size_t> between;
    size_t backward = f;
    for (size_t i = f + 1; i < row.size(); ++i) {
      if (!isCompute(row[i].kind))
        continue;
      if (takesSavedValuesOf(row[i], row[f])) {
        backward = i;
        break;
      }
      between.push_back(i);
    }
    // With one compute action between, the reload would start as the
    // offload ends: nothing to gain.
    if (backward == f || between.size() < 2)
      continue;
    at.after[afterSends(row, f)].push_back(
        {ActionKind::OffloadActivations, row[f].stage, row[f].microbatch});
    at.before[beforeRecvs(row, between.back())].push_back(
        {ActionKind::ReloadActivations, row[f].stage, row[f].microbatch});
  }
  return at;
}

} // namespace

bool hasOffloadActions(const ScheduleTable &table) {
  return std::any_of(table.begin(), table.end(), [](const auto &row) {
    return std::any_of(row.begin(), row.end(), [](const Action &action) {
      return isOffload(action.kind);
    });
  });
}

void addOffloadActions(ScheduleTable &table, const PipelineLayout &layout) {
  std::string problem = layoutProblem(layout);
  if (problem.empty() && static_cast<int64_t>(table.size()) != layout.ranks)
    problem = "the schedule lists " + std::to_string(table.size()) +
              " ranks, but the pipeline has " + std::to_string(layout.ranks);
  if (problem.empty() && hasOffloadActions(table))
    problem = "the schedule already has offload actions (offload, reload); "
              "add them to a table without";
  if (problem.empty() && hasDataParallelActions(table))
    problem = "the schedule has data-parallel actions (reduce, gather, "
              "release); add the offload actions first";
  if (!problem.empty())
    throw std::invalid_argument(problem);
  for (std::vector<Action> &row : table)
    row = withInsertions(row, insertionsFor(row));
}

} // namespace pp::runtime
