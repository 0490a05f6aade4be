//===- ActionMessages.h - what a schedule's actions wait for ----*- C++ -*-===//
//
// Shared by the generators, the check and the simulator: which compute
// actions exchange messages, and how actions are named in messages.
//
// A message class groups the compute actions whose messages meet: a
// Forward's go to Forwards, an Eval's to Evals, and a backward's (Backward
// or BackwardInput, whichever each stage runs) to backwards.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_ACTIONMESSAGES_H
#define PP_RUNTIME_ACTIONMESSAGES_H

#include "runtime/schedules/Schedule.h"

#include <cstddef>
#include <vector>

namespace pp::runtime {

/// Whether `kind` runs stage functions (F, B, I, W, E).
bool isCompute(ActionKind kind);

/// Whether `kind` accumulates a stage's weight gradients (B, W).
bool accumulatesGradients(ActionKind kind);

/// Whether `kind` is the backward that first takes a microbatch's saved
/// values (B, or I when split): the one an offloaded microbatch's reload
/// must precede.
bool takesSavedValues(ActionKind kind);

/// Whether `kind` is a stage-level data-parallel action (ReduceGradients,
/// GatherParameters, ReleaseParameters).
bool isDataParallel(ActionKind kind);

/// Whether `kind` moves a microbatch's saved values out of the stage
/// functions' memory or back (OffloadActivations, ReloadActivations).
bool isOffload(ActionKind kind);

/// The index of the last of the Sends right after action `i` of `row` (`i`
/// itself when none follows).
size_t afterSends(const std::vector<Action> &row, size_t i);

/// The index of the first of the Recvs right before action `i` of `row`
/// (`i` itself when none precedes).
size_t beforeRecvs(const std::vector<Action> &row, size_t i);

/// Actions to insert into a row of `size` actions: `before[i]` before
/// action i, `after[i]` after it.
struct RowInsertions {
  explicit RowInsertions(size_t size) : before(size), after(size) {}
  std::vector<std::vector<Action>> before, after;
};

/// `row` with `insertions` in their places.
std::vector<Action> withInsertions(const std::vector<Action> &row,
                                   const RowInsertions &insertions);

/// The compute action `action` concerns: itself, or the one whose messages
/// a Send or Recv moves.
ActionKind computeKindOf(const Action &action);

/// Whether `send` is the Send of compute action `compute`'s messages.
bool isSendOf(const Action &send, const Action &compute);

/// The class of the messages compute action `kind` exchanges: Forward,
/// Eval, or Backward (for Backward and BackwardInput); nullopt for
/// BackwardWeight and non-compute actions, which exchange none.
std::optional<ActionKind> messageClass(ActionKind kind);

/// The stages whose messages compute action `kind` of `stage` takes: those
/// its receivesFrom names and those whose sendsTo names it (of its message
/// class).
std::set<int64_t> messageSources(const MessageGraph &messages, int64_t stage,
                                 ActionKind kind);
/// The stages compute action `kind` of `stage` sends messages to.
std::set<int64_t> messageTargets(const MessageGraph &messages, int64_t stage,
                                 ActionKind kind);

/// Why `messages` does not fit `stages` stages ("" when it does).
std::string messageGraphProblem(const MessageGraph &messages, int64_t stages);

/// Why `layout` is not a pipeline ("" when it is): ranks, stage ranks in
/// range and each rank used, at least one microbatch.
std::string layoutProblem(const PipelineLayout &layout);

/// An action for messages: "F s2 m0", "recv B s1 m3", "optimizer",
/// "reduce s2".
std::string describeAction(const Action &action);

} // namespace pp::runtime

#endif // PP_RUNTIME_ACTIONMESSAGES_H
