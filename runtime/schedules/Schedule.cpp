//===- Schedule.cpp - names, layouts and message graphs of schedules ------===//

#include "runtime/schedules/Schedule.h"

#include "runtime/core/EnumNames.h"
#include "runtime/schedules/ActionMessages.h"

#include <algorithm>

namespace pp::runtime {
namespace {

constexpr EnumNames<ScheduleKind, 6> kScheduleNames = {
    {ScheduleKind::GPipe, "gpipe"},
    {ScheduleKind::OneForwardOneBackward, "1f1b"},
    {ScheduleKind::Interleaved1F1B, "interleaved-1f1b"},
    {ScheduleKind::ZeroBubbleH1, "zb-h1"},
    {ScheduleKind::ZeroBubbleV, "zb-v"},
    {ScheduleKind::Eval, "eval"},
};

constexpr EnumNames<Placement, 2> kPlacementNames = {
    {Placement::Loop, "loop"},
    {Placement::V, "v"},
};

constexpr EnumNames<ActionKind, 13> kActionKindNames = {
    {ActionKind::Forward, "F"},
    {ActionKind::Backward, "B"},
    {ActionKind::BackwardInput, "I"},
    {ActionKind::BackwardWeight, "W"},
    {ActionKind::Eval, "E"},
    {ActionKind::Send, "send"},
    {ActionKind::Recv, "recv"},
    {ActionKind::Optimizer, "optimizer"},
    {ActionKind::ReduceGradients, "reduce"},
    {ActionKind::GatherParameters, "gather"},
    {ActionKind::ReleaseParameters, "release"},
    {ActionKind::OffloadActivations, "offload"},
    {ActionKind::ReloadActivations, "reload"},
};

} // namespace

bool Action::operator==(const Action &other) const {
  return kind == other.kind && stage == other.stage &&
         microbatch == other.microbatch && of == other.of;
}

std::vector<int64_t> PipelineLayout::stagesOf(int64_t rank) const {
  std::vector<int64_t> stages;
  for (int64_t s = 0; s < this->stages(); ++s)
    if (stageRanks[s] == rank)
      stages.push_back(s);
  return stages;
}

std::optional<Placement> parsePlacement(const std::string &name) {
  return parseEnum(kPlacementNames, name);
}

const char *placementName(Placement placement) {
  return enumName(kPlacementNames, placement, "unknown");
}

std::vector<int64_t> placeStages(int64_t ranks, int64_t virtualStages,
                                 Placement placement) {
  std::vector<int64_t> stageRanks;
  for (int64_t s = 0; s < ranks * virtualStages; ++s) {
    bool returning = placement == Placement::V && (s / ranks) % 2 == 1;
    stageRanks.push_back(returning ? ranks - 1 - s % ranks : s % ranks);
  }
  return stageRanks;
}

MessageGraph chainMessages(int64_t stages) {
  MessageGraph graph(stages);
  for (int64_t s = 1; s < stages; ++s) {
    for (ActionKind forward : {ActionKind::Forward, ActionKind::Eval}) {
      graph[s - 1].sendsTo[forward].insert(s);
      graph[s].receivesFrom[forward].insert(s - 1);
    }
    for (ActionKind backward :
         {ActionKind::Backward, ActionKind::BackwardInput}) {
      graph[s].sendsTo[backward].insert(s - 1);
      graph[s - 1].receivesFrom[backward].insert(s);
    }
  }
  return graph;
}

std::optional<ScheduleKind> parseScheduleKind(const std::string &name) {
  return parseEnum(kScheduleNames, name);
}

const char *scheduleName(ScheduleKind kind) {
  return enumName(kScheduleNames, kind, "unknown");
}

std::string scheduleNames() {
  std::string names;
  for (auto [kind, name] : kScheduleNames)
    names += (names.empty() ? "" : "|") + std::string(name);
  return names;
}

bool needsSplitBackward(ScheduleKind kind) {
  return kind == ScheduleKind::ZeroBubbleH1 ||
         kind == ScheduleKind::ZeroBubbleV;
}

std::optional<int64_t> requiredVirtualStages(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::OneForwardOneBackward:
  case ScheduleKind::ZeroBubbleH1:
    return 1;
  case ScheduleKind::ZeroBubbleV:
    return 2;
  case ScheduleKind::GPipe:
  case ScheduleKind::Interleaved1F1B:
  case ScheduleKind::Eval:
    break;
  }
  return std::nullopt;
}

Placement placementFor(ScheduleKind kind) {
  return kind == ScheduleKind::ZeroBubbleV ? Placement::V : Placement::Loop;
}

const char *actionKindName(ActionKind kind) {
  return enumName(kActionKindNames, kind, "?");
}

std::string formatAction(const Action &action) {
  if (action.kind == ActionKind::Optimizer)
    return "O";
  if (isDataParallel(action.kind))
    return actionKindName(action.kind) + std::to_string(action.stage);
  if (isOffload(action.kind))
    return actionKindName(action.kind) + std::to_string(action.stage) + "." +
           std::to_string(action.microbatch);
  std::string text = action.kind == ActionKind::Send   ? "s"
                     : action.kind == ActionKind::Recv ? "r"
                                                       : "";
  return text + actionKindName(computeKindOf(action)) +
         std::to_string(action.stage) + "." + std::to_string(action.microbatch);
}

namespace {

/// The most microbatches of `stage` in a state at once over `rankActions`:
/// an action of a kind `enters` says enters it, one `leaves` says leaves.
template <typename Enters, typename Leaves>
int64_t mostAtOnce(const std::vector<Action> &rankActions, int64_t stage,
                   Enters enters, Leaves leaves) {
  int64_t now = 0, most = 0;
  for (const Action &action : rankActions) {
    if (action.stage != stage)
      continue;
    if (enters(action.kind))
      most = std::max(most, ++now);
    else if (leaves(action.kind))
      --now;
  }
  return most;
}

} // namespace

int64_t inFlightMicrobatches(const std::vector<Action> &rankActions,
                             int64_t stage) {
  return mostAtOnce(
      rankActions, stage,
      [](ActionKind kind) {
        return kind == ActionKind::Forward ||
               kind == ActionKind::ReloadActivations;
      },
      [](ActionKind kind) {
        return accumulatesGradients(kind) ||
               kind == ActionKind::OffloadActivations;
      });
}

int64_t offloadedMicrobatches(const std::vector<Action> &rankActions,
                              int64_t stage) {
  return mostAtOnce(
      rankActions, stage,
      [](ActionKind kind) { return kind == ActionKind::OffloadActivations; },
      [](ActionKind kind) { return kind == ActionKind::ReloadActivations; });
}

std::string formatActions(const std::vector<Action> &actions) {
  std::string text;
  for (const Action &action : actions)
    text += (text.empty() ? "" : " ") + formatAction(action);
  return text;
}

} // namespace pp::runtime
