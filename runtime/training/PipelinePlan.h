//===- PipelinePlan.h - the action tables a package runs --------*- C++ -*-===//
//
// Joins a package (its stages, their ranks and messages) with the chosen
// schedule: the training and eval action tables of every pipeline rank,
// proven before the first step, and their predicted step.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PIPELINEPLAN_H
#define PP_RUNTIME_PIPELINEPLAN_H

#include "runtime/package/Package.h"
#include "runtime/schedules/Schedule.h"
#include "runtime/schedules/ScheduleSimulation.h"
#include "runtime/training/Backend.h"
#include "runtime/training/Optimizer.h"

#include <optional>
#include <string>

namespace pp::runtime {

/// Which schedule a run uses: a built-in one, or a table from a file.
struct ScheduleChoice {
  ScheduleKind kind = ScheduleKind::OneForwardOneBackward;
  /// A schedule file (docs/schedules.md); "" for the built-in `kind`.
  std::string file;
  /// Whether the training table offloads the saved values of the
  /// microbatches a stage holds longest (addOffloadActions), unless it
  /// lists offload actions itself.
  bool offloadActivations = false;
};

struct PipelinePlan {
  PipelineLayout layout;
  MessageGraph messages;
  bool splitBackward = false;
  /// "1f1b", or "schedule file NAME".
  std::string label;
  ScheduleTable training;
  /// Eval actions only (training packages with eval functions).
  ScheduleTable eval;
  /// The training table simulated with equal stages (the schedule's
  /// theoretical bubble), and with the package's estimated costs.
  SimulatedStep ideal, predicted;
};

/// The messages between `package`'s stages, by compute action.
MessageGraph messageGraphOf(const Package &package);

/// The streams of messages between `package`'s stages on different ranks:
/// one for each message class (forwards and evals share one, as they share
/// their tensors' names), sending stage and receiving stage, in that order.
std::vector<MessageStream> crossRankStreams(const Package &package);

/// The package's estimated seconds and state bytes per stage
/// (stage_costs; equal times, forward 1 and each backward half 1, where
/// the manifest has none), with the activation bytes its functions' shapes
/// give (savedBytesOf).
StageCosts estimatedCosts(const Package &package);

/// Builds and checks the tables `choice` gives for `package` with
/// `microbatches` per step, with the actions `dataParallel` needs (the
/// gradient reduces; the parameter gathers and releases of ZeRO-3) added
/// where the table does not list them itself, and predicts its step with
/// them and with the state of `optimizer` (where given; else the state
/// per trained byte the compiler's estimates assumed). Throws
/// std::runtime_error saying what does not fit and how to fix it (a
/// schedule that needs a split backward, a file for another layout, a
/// table that deadlocks, naming rank, stage, microbatch and action).
PipelinePlan planPipeline(const Package &package, const ScheduleChoice &choice,
                          int64_t microbatches,
                          const DataParallelism &dataParallel = {},
                          const OptimizerOptions *optimizer = nullptr);

/// The function phases a compute action runs.
bool actionRunsPhase(ActionKind action, Phase function);

} // namespace pp::runtime

#endif // PP_RUNTIME_PIPELINEPLAN_H
