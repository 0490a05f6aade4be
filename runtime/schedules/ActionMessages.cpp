//===- ActionMessages.cpp - what a schedule's actions wait for ------------===//

#include "runtime/schedules/ActionMessages.h"

namespace pp::runtime {
namespace {

/// The stages `side` (a receivesFrom or sendsTo) names for messages of
/// class `cls`.
std::set<int64_t> peersOf(const std::map<ActionKind, std::set<int64_t>> &side,
                          ActionKind cls) {
  std::set<int64_t> peers;
  for (const auto &[key, stages] : side)
    if (messageClass(key) == cls)
      peers.insert(stages.begin(), stages.end());
  return peers;
}

/// The stages compute action `kind` of `stage` receives messages from (or
/// sends them to): those its own side of the graph names, and those whose
/// other side names it.
std::set<int64_t> peerStages(const MessageGraph &messages, int64_t stage,
                             ActionKind kind, bool receiving) {
  std::optional<ActionKind> cls = messageClass(kind);
  if (!cls || stage < 0 || stage >= static_cast<int64_t>(messages.size()))
    return {};
  auto side = [&](const StageMessages &entry, bool receive) -> auto & {
    return receive ? entry.receivesFrom : entry.sendsTo;
  };
  std::set<int64_t> result = peersOf(side(messages[stage], receiving), *cls);
  for (int64_t other = 0; other < static_cast<int64_t>(messages.size());
       ++other)
    if (peersOf(side(messages[other], !receiving), *cls).count(stage))
      result.insert(other);
  return result;
}

} // namespace

bool isCompute(ActionKind kind) {
  return kind == ActionKind::Forward || kind == ActionKind::Backward ||
         kind == ActionKind::BackwardInput ||
         kind == ActionKind::BackwardWeight || kind == ActionKind::Eval;
}

bool accumulatesGradients(ActionKind kind) {
  return kind == ActionKind::Backward || kind == ActionKind::BackwardWeight;
}

bool takesSavedValues(ActionKind kind) {
  return kind == ActionKind::Backward || kind == ActionKind::BackwardInput;
}

bool isDataParallel(ActionKind kind) {
  return kind == ActionKind::ReduceGradients ||
         kind == ActionKind::GatherParameters ||
         kind == ActionKind::ReleaseParameters;
}

bool isOffload(ActionKind kind) {
  return kind == ActionKind::OffloadActivations ||
         kind == ActionKind::ReloadActivations;
}

size_t afterSends(const std::vector<Action> &row, size_t i) {
  while (i + 1 < row.size() && row[i + 1].kind == ActionKind::Send)
    ++i;
  return i;
}

size_t beforeRecvs(const std::vector<Action> &row, size_t i) {
  while (i > 0 && row[i - 1].kind == ActionKind::Recv)
    --i;
  return i;
}

std::vector<Action> withInsertions(const std::vector<Action> &row,
                                   const RowInsertions &insertions) {
  std::vector<Action> result;
  for (size_t i = 0; i < row.size(); ++i) {
    const std::vector<Action> &before = insertions.before[i],
                              &after = insertions.after[i];
    result.insert(result.end(), before.begin(), before.end());
    result.push_back(row[i]);
    result.insert(result.end(), after.begin(), after.end());
  }
  return result;
}

ActionKind computeKindOf(const Action &action) {
  return isCompute(action.kind) ? action.kind : action.of;
}

bool isSendOf(const Action &send, const Action &compute) {
  return send.kind == ActionKind::Send && send.of == compute.kind &&
         send.stage == compute.stage && send.microbatch == compute.microbatch;
}

std::optional<ActionKind> messageClass(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
  case ActionKind::Eval:
  case ActionKind::Backward:
    return kind;
  case ActionKind::BackwardInput:
    return ActionKind::Backward;
  default:
    return std::nullopt;
  }
}

std::set<int64_t> messageSources(const MessageGraph &messages, int64_t stage,
                                 ActionKind kind) {
  return peerStages(messages, stage, kind, /*receiving=*/true);
}

std::set<int64_t> messageTargets(const MessageGraph &messages, int64_t stage,
                                 ActionKind kind) {
  return peerStages(messages, stage, kind, /*receiving=*/false);
}

std::string messageGraphProblem(const MessageGraph &messages, int64_t stages) {
  if (static_cast<int64_t>(messages.size()) != stages)
    return "the message graph has " + std::to_string(messages.size()) +
           " stages, the layout " + std::to_string(stages);
  for (int64_t s = 0; s < stages; ++s)
    for (const auto *side : {&messages[s].receivesFrom, &messages[s].sendsTo})
      for (const auto &[kind, peers] : *side) {
        if (!messageClass(kind))
          return "the message graph gives stage " + std::to_string(s) +
                 " messages of " + actionKindName(kind) +
                 ", which exchanges none; use F, B, I or E";
        for (int64_t peer : peers)
          if (peer < 0 || peer >= stages || peer == s)
            return "the message graph gives stage " + std::to_string(s) +
                   " a " + actionKindName(kind) + " message with stage " +
                   std::to_string(peer) + "; peers are the other stages 0.." +
                   std::to_string(stages - 1);
      }
  return "";
}

std::string layoutProblem(const PipelineLayout &layout) {
  if (layout.ranks < 1)
    return "a pipeline needs at least one rank, not " +
           std::to_string(layout.ranks);
  if (layout.microbatches < 1)
    return "a step needs at least one microbatch, not " +
           std::to_string(layout.microbatches);
  std::vector<bool> used(layout.ranks, false);
  for (int64_t s = 0; s < layout.stages(); ++s) {
    int64_t rank = layout.stageRanks[s];
    if (rank < 0 || rank >= layout.ranks)
      return "stage " + std::to_string(s) + " is placed on rank " +
             std::to_string(rank) + ", but the pipeline has ranks 0.." +
             std::to_string(layout.ranks - 1);
    used[rank] = true;
  }
  for (int64_t rank = 0; rank < layout.ranks; ++rank)
    if (!used[rank])
      return "rank " + std::to_string(rank) +
             " runs no stage; place at least one stage on every rank of the "
             "pipeline";
  return "";
}

std::string describeAction(const Action &action) {
  if (action.kind == ActionKind::Optimizer)
    return "optimizer";
  if (isDataParallel(action.kind))
    return actionKindName(action.kind) + std::string(" s") +
           std::to_string(action.stage);
  if (isOffload(action.kind))
    return actionKindName(action.kind) + std::string(" s") +
           std::to_string(action.stage) + " m" +
           std::to_string(action.microbatch);
  std::string text = isCompute(action.kind)
                         ? ""
                         : actionKindName(action.kind) + std::string(" ");
  return text + actionKindName(computeKindOf(action)) + " s" +
         std::to_string(action.stage) + " m" +
         std::to_string(action.microbatch);
}

} // namespace pp::runtime
