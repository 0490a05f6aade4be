//===- StepExecutor.h - runs a rank's row of an action table ----*- C++ -*-===//
//
// Executes a schedule action by action on the rank's backend: a compute
// action runs the stage functions of its phase, feeding their arguments by
// role and keeping their saved values for the later phases, a recv waits
// for its messages, a send hands the messages its compute produced for
// other ranks to the transport, and the optimizer action calls back into
// the trainer.
// It knows nothing of GPipe or 1F1B.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_STEPEXECUTOR_H
#define PP_RUNTIME_TRAINING_STEPEXECUTOR_H

#include "runtime/kernels/MemoryArena.h"
#include "runtime/kernels/OpProfile.h"
#include "runtime/package/Package.h"
#include "runtime/schedules/Schedule.h"
#include "runtime/schedules/ScheduleSimulation.h"
#include "runtime/training/ActionTracer.h"
#include "runtime/training/ActivationOffload.h"
#include "runtime/training/Backend.h"
#include "runtime/training/BatchRef.h"
#include "runtime/training/HostTensors.h"
#include "runtime/training/LossSum.h"
#include "runtime/training/ParameterStore.h"
#include "runtime/training/RankGroups.h"
#include "runtime/training/RankStages.h"
#include "runtime/training/StageRouter.h"
#include "runtime/training/StepBreakdown.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// What the stage functions of a batch share: the batch, its labels and
/// loss scale (as the functions see them), the loss so far (where they
/// run) and, per (stage, microbatch), the saved values later phases take by
/// name.
struct MicrobatchData {
  BatchRef batch;
  const std::vector<Placed> &labels;
  pp_tensor *lossScale;
  LossSum lossSum;
  std::map<std::pair<int64_t, int64_t>, SavedValues> saved;
  /// Forward-only: per output of this stage, its microbatches in order.
  std::map<std::string, std::vector<TensorPtr>> outputs;
};

/// Where a rank's stage functions run and what they draw on.
struct ExecutionContext {
  const Package &package;
  const RankStages &stages;
  RankGroups &groups;
  Backend &backend;
  ParameterStore &parameters;
  ActionTracer &tracer;
  /// Seconds per op kind; null without --profile.
  OpProfile *profile;
  /// Keys dropout masks and sample positions.
  uint64_t seed;
  const BatchLayout &layout;
  /// Serve each stage function's tensors from its arena by the package's
  /// memory plan (where the backend's kernels allocate through the frame).
  bool memoryPlan;
  /// Measure what the rank holds after each action (peakHeld), for the
  /// metrics.
  bool measuresMemory;
};

class StepExecutor {
public:
  explicit StepExecutor(const ExecutionContext &context);

  /// Runs this rank's `actions` (its row of an action table) over the
  /// batch's microbatches: a compute action runs the stage functions of
  /// its phase, a recv waits for the messages its compute takes from other
  /// ranks, a send hands the messages its compute produced for other ranks,
  /// held until then, to the transport (a row that ends holding some is an
  /// error naming rank, stage and microbatch), an offload moves a
  /// microbatch's saved values to host memory and a reload starts bringing
  /// them back for its backward, a reduce starts the
  /// data-parallel reduction of its stage's gradients, a gather starts
  /// gathering its stage's parameters (ZeRO-3; the stage's next compute
  /// waits for it), a release frees them, and the optimizer action runs
  /// `optimizer`.
  void run(const std::vector<Action> &actions, MicrobatchData &data,
           const std::function<void()> &optimizer = nullptr);

  /// Whether the stage functions' tensors come from arenas.
  bool usesArenas() const { return !arenas.empty(); }
  /// Tensors the stage functions allocated on their own (not from an
  /// arena) so far.
  int64_t heapAllocations() const { return heapTensors; }
  /// The most this rank held in training steps so far, measured after each
  /// action: its parameters, gradients and optimizer state as resident in
  /// memory (ParameterStore::residentBytes) and the saved values alive.
  const HeldBytes &peakHeld() const { return peak; }
  /// The most saved values this rank held at once in training steps so
  /// far, measured after each action (at whatever point; peakHeld's
  /// activations are those at the peak of everything).
  double mostActivationsHeld() const { return mostActivations; }
  /// The most saved values this rank held offloaded at once so far.
  int64_t mostActivationsOffloaded() const { return offload.mostHeldBytes(); }
  /// The seconds spent in actions outside stage functions so far; zero
  /// without a profile.
  const ActionSeconds &actionSeconds() const { return actionTimes; }

private:
  /// Takes a result as the stage function hands it over; true when it has
  /// consumed it (a gradient added to its sum), which frees it at once.
  using ResultHandler = std::function<bool(size_t index, pp_tensor *result)>;
  /// Gives argument `index` up to the stage function (pp_frame_take_arg),
  /// or returns null where the caller keeps it.
  using ArgTaker = std::function<pp_tensor *(int64_t index)>;
  std::vector<TensorPtr>
  call(const Action &action, const StageFunctionInfo &function,
       std::vector<pp_tensor *> args, const BatchRef &batch,
       const ResultHandler &onResult, const ArgTaker &takeArg);
  TensorPtr input(const TensorInfo &info, const BatchRef &batch,
                  int64_t microbatch);
  void runFunction(const Action &action, size_t f, MicrobatchData &data);
  void awaitMessages(const Action &recv, const BatchRef &batch);
  void sendMessages(const Action &send, const BatchRef &batch);
  void measureHeld(const MicrobatchData &data);
  std::chrono::steady_clock::time_point profileNow() const;
  void addActionTime(double ActionSeconds::*part,
                     std::chrono::steady_clock::time_point start);

  ExecutionContext context;
  /// Moves the stage functions' messages between stages.
  StageRouter router;
  /// The key of the tensor axes' group in a frame (collectiveAxesKey).
  std::string tensorAxesKey;
  /// Per (stage, saved value), the index of the last function of the stage
  /// that takes it.
  std::map<std::pair<int64_t, std::string>, size_t> lastUse;
  /// The arena of each stage function with a memory plan, by symbol.
  std::map<std::string, std::unique_ptr<MemoryArena>> arenas;
  /// The saved values the offload actions moved out.
  ActivationOffload offload;
  int64_t heapTensors = 0;
  HeldBytes peak;
  double mostActivations = 0;
  ActionSeconds actionTimes;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_STEPEXECUTOR_H
