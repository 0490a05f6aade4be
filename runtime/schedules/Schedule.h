//===- Schedule.h - pipeline schedules as action tables ---------*- C++ -*-===//
//
// A schedule is data: for every rank of a pipeline, the ordered list of the
// actions it runs in one step. The generators below produce it; a schedule
// file (ScheduleFile.h) may give it instead; checkSchedule() proves it
// before the first step; simulateSchedule() (ScheduleSimulation.h) predicts
// its bubble, step time and memory; the trainer executes it action by
// action and knows nothing of GPipe or 1F1B.
//
// Vocabulary. A *stage* is one contiguous piece of the model (a "chunk"):
// the package's stages 0..S-1 in model order. A *rank* is a coordinate of
// the pipeline axis, 0..N-1. Each stage runs on one rank
// (PipelineLayout::stageRanks); with V virtual stages S = N * V, in loop
// placement (stage s on rank s mod N) or V placement (V = 2: stage s on
// rank s for s < N, on rank 2N-1-s after).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_SCHEDULE_H
#define PP_RUNTIME_SCHEDULE_H

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pp::runtime {

/// What an action does.
enum class ActionKind {
  /// The forward of a stage for a microbatch.
  Forward,
  /// The whole backward of a stage (both halves when the package splits it).
  Backward,
  /// The input-gradient half of a split backward: what the previous stage
  /// waits for.
  BackwardInput,
  /// The weight-gradient half of a split backward: any time after its
  /// BackwardInput on the same rank.
  BackwardWeight,
  /// A forward that keeps nothing for a backward: the loss of held-out data.
  Eval,
  /// Hands the messages the compute action `of` (same stage, microbatch)
  /// produced for stages on other ranks to the transport: the rank holds
  /// them from that action until its Send, which may come any time later
  /// in the row.
  Send,
  /// Waits for the messages the compute action `of` (same stage,
  /// microbatch) takes from stages on other ranks.
  Recv,
  /// Clips the gradients over the whole model and updates the parameters:
  /// the last action of a training step, on every rank.
  Optimizer,
  /// Starts reducing a stage's gradients over its data-parallel group
  /// (all-reduce; reduce-scatter from ZeRO-2 on), after the stage's last
  /// backward; the Optimizer waits for it. Stage-level (microbatch -1).
  ReduceGradients,
  /// Starts gathering a stage's parameters over its data-parallel group
  /// (ZeRO-3); the stage's next compute action waits for it. Stage-level.
  GatherParameters,
  /// Frees the gathered parameters of a stage but this replica's share
  /// (ZeRO-3), after the stage's last compute of the step. Stage-level.
  ReleaseParameters,
  /// Starts moving the saved values of a stage's forward of a microbatch
  /// out of the stage functions' memory into host memory, after that
  /// forward: the stage holds them there until their ReloadActivations.
  OffloadActivations,
  /// Starts bringing the values OffloadActivations moved back, before the
  /// backward (B, or I) of that stage and microbatch, which waits for them.
  ReloadActivations,
};

/// One entry of a rank's action list.
struct Action {
  ActionKind kind = ActionKind::Forward;
  /// The stage (chunk) it concerns; -1 for Optimizer.
  int64_t stage = -1;
  /// The microbatch it concerns; -1 for Optimizer and the stage-level
  /// ReduceGradients, GatherParameters and ReleaseParameters.
  int64_t microbatch = -1;
  /// For Send and Recv: the compute action whose messages they move
  /// (Forward, Backward, BackwardInput or Eval).
  ActionKind of = ActionKind::Forward;

  /// Field by field (C++17: the project's standard has no defaulted ==).
  bool operator==(const Action &other) const;
};

/// The action lists of all ranks of a pipeline, indexed by rank.
using ScheduleTable = std::vector<std::vector<Action>>;

/// Where the stages run and how many microbatches a step has.
struct PipelineLayout {
  /// Ranks on the pipeline axis (N).
  int64_t ranks = 1;
  /// stageRanks[s]: the rank running stage s; its size is the stage count.
  std::vector<int64_t> stageRanks = {0};
  int64_t microbatches = 1;

  int64_t stages() const { return static_cast<int64_t>(stageRanks.size()); }
  /// The stages on `rank`, increasing.
  std::vector<int64_t> stagesOf(int64_t rank) const;
};

/// How stages are laid out on ranks when each holds several.
enum class Placement { Loop, V };

/// "loop" or "v".
std::optional<Placement> parsePlacement(const std::string &name);
const char *placementName(Placement placement);

/// The stage -> rank map of `ranks` ranks with `virtualStages` stages each
/// (virtualStages must be 2 for V placement).
std::vector<int64_t> placeStages(int64_t ranks, int64_t virtualStages,
                                 Placement placement);

/// Which stages each stage's compute actions exchange messages with: a
/// stage's Forward receives from `receivesFrom[Forward]` and sends to
/// `sendsTo[Forward]`, and so on. For a package with a split backward the
/// BackwardInput entries hold the backward's messages (BackwardWeight sends
/// and receives nothing); Backward then stands for both halves.
struct StageMessages {
  std::map<ActionKind, std::set<int64_t>> receivesFrom;
  std::map<ActionKind, std::set<int64_t>> sendsTo;
};
/// Indexed by stage.
using MessageGraph = std::vector<StageMessages>;

/// The usual messages of a chain of `stages` stages: forward from s-1 to s,
/// backward (input gradients) from s+1 to s.
MessageGraph chainMessages(int64_t stages);

/// The built-in schedules.
enum class ScheduleKind {
  GPipe,
  OneForwardOneBackward,
  Interleaved1F1B,
  ZeroBubbleH1,
  ZeroBubbleV,
  /// Every stage's eval action of each microbatch in order.
  Eval,
};

/// "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "eval".
std::optional<ScheduleKind> parseScheduleKind(const std::string &name);
const char *scheduleName(ScheduleKind kind);
/// All spellings, "gpipe|1f1b|...", for error messages and --help.
std::string scheduleNames();

/// Whether `kind` needs the compiler to split backwards into
/// BackwardInput and BackwardWeight (zb-h1, zb-v).
bool needsSplitBackward(ScheduleKind kind);
/// The virtual stages per rank `kind` needs (2 for zb-v), or nullopt when
/// any count works (interleaved-1f1b takes --virtual-stages; the others 1).
std::optional<int64_t> requiredVirtualStages(ScheduleKind kind);
/// The placement `kind` runs on (V for zb-v, loop otherwise).
Placement placementFor(ScheduleKind kind);

/// Why `kind` cannot run on `layout` (a package whose backward is split
/// when `splitBackward`), as a message naming the constraint and the fix;
/// "" when it can.
std::string scheduleProblem(ScheduleKind kind, const PipelineLayout &layout,
                            bool splitBackward);

/// The action table of `kind` on `layout`: compute actions in the
/// schedule's order, each Recv just before the compute it feeds and each
/// Send just after the compute that produced it (only where `messages`
/// cross ranks), and Optimizer last on every rank (not in Eval). With
/// `splitBackward`, GPipe, 1F1B and interleaved-1F1B run Backward actions
/// (both halves at once) and the zero-bubble schedules BackwardInput and
/// BackwardWeight. Every stage runs its backward (or its BackwardWeight)
/// in increasing microbatch order, so gradients accumulate in the same
/// order as on one stage. Requires scheduleProblem() == "".
ScheduleTable buildSchedule(ScheduleKind kind, const PipelineLayout &layout,
                            const MessageGraph &messages, bool splitBackward);

/// The highest ZeRO level (pp-run --zero).
inline constexpr int kMaxZeroLevel = 3;

/// Data parallelism around a pipeline: every pipeline rank has `degree`
/// replicas (its data-parallel group), which run the same action row.
struct DataParallelism {
  int64_t degree = 1;
  /// ZeRO level, 0 to 3: 1 shards the optimizer state over the group, 2
  /// the gradients too, 3 the parameters too.
  int zeroLevel = 0;

  /// In a group of one every level is level 0.
  int effectiveLevel() const { return degree > 1 ? zeroLevel : 0; }
  /// Whether a training step reduces gradients over the group.
  bool reducesGradients() const { return degree > 1; }
  /// Whether stages gather their parameters before use (ZeRO-3).
  bool gathersParameters() const { return effectiveLevel() >= 3; }
};

/// Why `dataParallel` is not a data-parallel setup ("" when it is).
std::string dataParallelProblem(const DataParallelism &dataParallel);

/// Whether `table` lists ReduceGradients, GatherParameters or
/// ReleaseParameters actions.
bool hasDataParallelActions(const ScheduleTable &table);

/// Adds the data-parallel actions `dataParallel` needs to `table`, a table
/// on `layout` without them (a built-in one, or a file's): for every
/// stage of a rank that runs backwards, a ReduceGradients right after its
/// last B or W (and that action's Send) when the group has several
/// replicas; at ZeRO-3 (over several replicas), a GatherParameters one
/// compute action before the stage's first compute (before that action's
/// Recv; first on the rank when no compute precedes) and a
/// ReleaseParameters right after its last compute (and its Send), after
/// the ReduceGradients. An eval table gets gathers and releases only.
/// Leaves `table` as it is for one replica. Throws std::invalid_argument
/// when `table` already has such actions or does not fit `layout`.
void addDataParallelActions(ScheduleTable &table, const PipelineLayout &layout,
                            const DataParallelism &dataParallel);

/// Proves `table` runs on `layout`: each rank lists only its stages'
/// actions; every (stage, microbatch) runs its forward once and its
/// backward once (Backward, or BackwardInput then BackwardWeight when
/// `splitBackward`), after its forward; backwards (weight halves) of a
/// stage run in increasing microbatch order; each Recv and Send names a
/// compute action of its rank and every message that crosses ranks has
/// exactly one Send after its producer (anywhere later in the row; a
/// rank's Sends in the order their producers ran) and one Recv before its
/// consumer; Optimizer is last on every rank (training) or absent (eval:
/// Eval actions only); and, simulating all ranks together with blocking
/// receives and sends that never block, each at its place in the row,
/// every rank reaches its end. Data-parallel actions, when the table has
/// them or `dataParallel` asks for them: each stage of a rank has one
/// ReduceGradients after its last backward (training only), and with
/// ZeRO-3 one GatherParameters before its first compute and one
/// ReleaseParameters after its last, no compute of the stage outside them
/// (docs/schedules.md says why they cannot deadlock). Given `dataParallel`, the table must have exactly the
/// actions it needs; without, a table without them is valid. Returns "" or
/// the first violation, naming rank, stage, microbatch and action ("rank 1
/// waits at recv F s2 m0 for stage 1 on rank 0, which waits at ...").
std::string
checkSchedule(const ScheduleTable &table, const PipelineLayout &layout,
              const MessageGraph &messages, bool splitBackward,
              bool training = true,
              const std::optional<DataParallelism> &dataParallel = {});

/// Whether `table` lists OffloadActivations or ReloadActivations actions.
bool hasOffloadActions(const ScheduleTable &table);

/// Adds activation offload to `table`, a training table on `layout`
/// without data-parallel or offload actions. On a stage that holds more
/// than two microbatches at once (inFlightMicrobatches), each forward whose
/// backward (B, or I) comes two or more compute actions later on its rank
/// gets an OffloadActivations right after it (and its Send), and a
/// ReloadActivations one compute action ahead of that backward (before that
/// action's Recv), so that the copy back overlaps that action. Under 1F1B
/// the first stages, which hold the most microbatches, then hold two; the
/// others, already holding two or fewer, offload nothing.
/// Throws std::invalid_argument when `table` already has offload or
/// data-parallel actions or does not fit `layout`.
void addOffloadActions(ScheduleTable &table, const PipelineLayout &layout);

/// The most microbatches of `stage` whose saved values are in the stage
/// functions' memory at once, at any point of `rankActions` (a rank's row
/// of an action table): those whose forward ran and whose backward (its
/// weight half, the last to take saved values, when split) did not, less
/// those offloaded and not yet reloaded. Without offload, 1F1B holds
/// min(m, stages - stage), GPipe m. The runtime's memory figures and the
/// partitioner's memory model both count them this way.
int64_t inFlightMicrobatches(const std::vector<Action> &rankActions,
                             int64_t stage);

/// The most microbatches of `stage` offloaded at once in `rankActions`.
int64_t offloadedMicrobatches(const std::vector<Action> &rankActions,
                              int64_t stage);

/// "F", "B", "I", "W", "E", "send", "recv", "optimizer", "reduce",
/// "gather", "release", "offload", "reload".
const char *actionKindName(ActionKind kind);
/// One action as the schedule file spells it: "F2.0" (forward of stage 2,
/// microbatch 0), "sF2.0" (send of it), "rB1.3" (recv for the backward of
/// stage 1, microbatch 3), "O" (optimizer), "reduce2", "gather2",
/// "release2" (the data-parallel actions of stage 2), "offload2.0",
/// "reload2.0" (the activation offload of stage 2, microbatch 0).
std::string formatAction(const Action &action);
/// A rank's actions separated by spaces.
std::string formatActions(const std::vector<Action> &actions);

} // namespace pp::runtime

#endif // PP_RUNTIME_SCHEDULE_H
