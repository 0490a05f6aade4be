//===- ParameterStore.h - a rank's parameters, gradients and update -*- C++ -*-===//
//
// Holds what the stages of one pipeline rank train: their parameters (the
// trained ones in a flat buffer per stage, FlatParameters.h), the gradient sums
// the stage functions' results add up into over a step's microbatches,
// the data-parallel reduction of those sums, the tied parameters' parts,
// the global gradient norm and the optimizer's update at the rank's ZeRO
// level. All of it lives where the stages run (the backend's
// stateDevice): the stage functions take views of the flat buffers and
// their gradients add up in place; the host sees copies made on demand
// (hostValues, hostGradients) for checkpoints, hashes and saved files.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_PARAMETERSTORE_H
#define PP_RUNTIME_TRAINING_PARAMETERSTORE_H

#include "runtime/checkpoints/CheckpointShards.h"
#include "runtime/package/Package.h"
#include "runtime/training/Backend.h"
#include "runtime/training/ComputeCopies.h"
#include "runtime/training/FlatParameters.h"
#include "runtime/training/GradientReduction.h"
#include "runtime/training/HostTensors.h"
#include "runtime/training/ModelWeights.h"
#include "runtime/training/ParameterUpdate.h"
#include "runtime/training/RankGroups.h"
#include "runtime/training/RankStages.h"
#include "runtime/training/TiedParameters.h"
#include "runtime/training/TrainerOptions.h"

#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pp::runtime {

/// Throws std::runtime_error, naming the first one, unless every tensor
/// `package` lists as a parameter, frozen or constant is f32.
void checkParameterDtypes(const Package &package);

/// Throws std::runtime_error, naming the first parameter and element,
/// when a value of `values` (a rank's parameters, host copies) is finite
/// but rounds to infinity in f16 (|x| >= 65520: 65504, f16's largest, up
/// to 65520 round to 65504): an fp16 run computes with f16 copies of them,
/// which would be infinite from step 1. An infinity or a NaN is kept (f16
/// holds it as it is: the cast adds no overflow).
void checkHalfRange(const std::map<std::string, TensorPtr> &values);

/// The parameters of the model (every stage's) whose gradients some stage
/// computes: those the optimizer updates.
std::vector<ParameterInfo> trainedParameters(const Package &package);

/// Bytes of a rank's training state as resident in memory.
struct ResidentBytes {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizerState = 0;
  /// The compute-type copies held (ComputeCopies).
  int64_t computeCopies = 0;
};

class ParameterStore {
public:
  /// The parameters of `stages`, trained with `options` (optimizer, ZeRO
  /// level, init) over `groups`' data-parallel replicas, placed where
  /// `backend` runs; a `forwardOnly` store keeps no gradients.
  ParameterStore(const Package &package, const RankStages &stages,
                 RankGroups &groups, Backend &backend,
                 const TrainerOptions &options, bool forwardOnly);
  ~ParameterStore();
  ParameterStore(const ParameterStore &) = delete;
  ParameterStore &operator=(const ParameterStore &) = delete;

  /// Creates this rank's parameters with the values of `saved` (a resumed
  /// checkpoint's, checked to fit), else those `weights` gives, else the
  /// model's (or random draws, with --init random): the global tensor,
  /// then this rank's slice, so that every layout starts from the same
  /// weights.
  void initialize(const CheckpointTensors *saved, const ModelWeights &weights);
  /// Connects the tied parameters' holders and lists the gradient sums for
  /// the data-parallel reduction; after initialize, before the first step.
  void prepareTraining();

  /// Where the stage functions see the parameter (frozen, constant tensor)
  /// `name`.
  pp_tensor *placed(const std::string &name) const {
    return placedParameters.at(name).tensor;
  }
  /// The compute-type copy `copy` (a stage function argument of role
  /// ComputeCopy) of the parameter of its name: converted at its first use
  /// since the values last changed (an optimizer step, initialize, a ZeRO-3
  /// release), then held.
  pp_tensor *computeCopy(const TensorInfo &copy) {
    return copies.copyOf(copy.name, placed(copy.name), copy.dtype);
  }
  /// The conversions into compute copies so far, and their bytes.
  int64_t computeCopyConversions() const { return copies.conversions(); }
  int64_t computeCopyBytes() const { return copies.convertedBytes(); }
  /// The values and gradient sums by name (sharded parameters' shards) on
  /// the host, copied there from the stages' device now where it is
  /// another.
  const std::map<std::string, TensorPtr> &hostValues();
  const std::map<std::string, TensorPtr> &hostGradients();

  /// Starts a step: its gradient sums await their contributions, and its
  /// reduction begins.
  void beginStep();
  /// Adds a microbatch's `contribution`, the stage function result
  /// `result`, to its gradient sum in place (gradientSum, then
  /// gradientAdded).
  void addGradient(const TensorInfo &result, pp_tensor *contribution);
  /// The sum (where the stages see it) that the stage function result
  /// `result` adds into, zeroed before the step's first contribution: a
  /// kernel may add the result into it directly.
  pp_tensor *gradientSum(const TensorInfo &result);
  /// Says that a microbatch's `result` has been added into its
  /// gradientSum; once its step's last contribution is in, hands the sum
  /// to the data-parallel reduction, whose bucket may start while the
  /// backward goes on.
  void gradientAdded(const TensorInfo &result);
  /// A ReduceGradients action: the data-parallel reduction of the gradient
  /// sums that stage `stage` computes has started (on the reduction's
  /// thread, bucket by bucket); throws std::logic_error when a sum still
  /// awaits contributions (the table placed the reduce before the stage's
  /// last backward).
  void reduce(int64_t stage);
  /// Completes the data-parallel reduction that started during the
  /// backward and adds up the gradients that come in parts.
  void finishReduction();
  /// The global gradient norm: one sum of squares per parameter (in
  /// double), summed over the tensor-parallel group (a sharded parameter's
  /// shards; a replicated one by the first device alone, counted once),
  /// then in manifest order over the pipeline (each parameter counted
  /// once: replicas hold the same sums), so the norm is the same bits on
  /// every rank and for every stage count; a tied parameter by its owner.
  /// ZeRO-2 and up: each replica's share of the sums (the same bits),
  /// summed over the replicas (every sum but one is 0).
  double gradientNorm();
  /// Gathers the gradients' shares (ZeRO-2 and up) so that every replica
  /// holds them whole; nothing below.
  void gatherGradients();
  /// Multiplies the gradients by `clip` (when below 1), steps the
  /// optimizer at `learningRate` and places the new values.
  void apply(float clip, float learningRate);
  /// Ends the step without an update (ParameterUpdate::skip).
  void skip();
  /// Multiplies the gradients every stage holds by `factor`
  /// (ParameterUpdate::scaleGradients): undoes the loss scale.
  void scaleGradients(float factor);

  /// ZeRO-3: whether the values are held in shares between uses.
  bool shardsValues() const { return zeroLevel() >= 3; }
  /// ZeRO-3: starts gathering, on the gathers' own thread and group, the
  /// values stage `stage` uses that no other stage of this rank holds
  /// gathered; the gathers run in the order they start (the same on every
  /// replica, which runs the same actions).
  void startGather(int64_t stage);
  /// ZeRO-3: waits until the values stage `stage` uses, whose gather
  /// startGather started, are whole; rethrows the gather's failure.
  void awaitGather(int64_t stage);
  /// ZeRO-3: releases the values of stage `stage` that no other stage of
  /// this rank still uses.
  void release(int64_t stage);
  /// ZeRO-3: gathers every stage's values over the data-parallel group on
  /// the caller's thread, and releases them all.
  void gatherValues();
  void releaseValues();

  /// Checks that the holders of a tied parameter hold the same values.
  void checkHoldersAgree() { tied->checkHoldersAgree(hostValues()); }

  /// The optimizer state of each trained parameter that has taken a step,
  /// whole on every replica.
  std::map<std::string, ParameterState> gatherOptimizerState();
  /// Sets the optimizer state from a checkpoint's optimizer files `files`,
  /// checked to hold, of every trained parameter that had taken a step,
  /// the buffers whole ("NAME/BUFFER", global shapes) and the step count:
  /// this rank keeps its shards, and its share with ZeRO. A parameter
  /// without a step count had taken none and keeps no state until its
  /// first step.
  void loadOptimizerState(const CheckpointTensors &files);

  ResidentBytes residentBytes() const;
  /// Seconds the reduction spent reducing, and the steps spent waiting for
  /// it after their backward.
  double reducingSeconds() const { return reducer->reducingSeconds(); }
  double reduceWaitSeconds() const { return waitSeconds; }
  /// The bytes of gradient values the reduction sums each step
  /// (GradientReducer::bytesPerStep).
  size_t reduceBytesPerStep() const { return reducer->bytesPerStep(); }

private:
  void layOutTrainedParameters();
  void viewFlat(const TensorInfo &info, float *data, TensorPtr &host,
                Placed &placed);
  void prepareGradientSums(const ParameterInfo &parameter,
                           pp_tensor *gradient, pp_tensor *placedGradient);
  void sumTiedGradients();
  void fillInitialValue(const ParameterInfo &parameter,
                        const CheckpointTensors *saved,
                        const ModelWeights &weights, pp_tensor *local);
  void readShard(const CheckpointTensors &saved, const ParameterInfo &parameter,
                 const std::string &name, float *local) const;
  void prepareGradientReduction();

  const Package &package;
  const RankStages &stages;
  RankGroups &groups;
  Backend &backend;
  /// The stages' device: its queue and kernels.
  StateDevice where;
  const TrainerOptions &options;
  bool forwardOnly;
  /// The flat buffers' collectives over the data-parallel group.
  std::unique_ptr<CollectiveGroup> dataParallelBuffers;
  /// The trained parameters of one stage of this rank: their values,
  /// gradients and optimizer state in flat buffers (a tied parameter with
  /// several holders on this rank in its first holder's), and their
  /// update.
  struct StageParameters {
    int64_t stage = 0;
    std::unique_ptr<FlatParameters> flat;
    std::unique_ptr<ParameterUpdate> update;
    /// ZeRO-3: the stages between their gather and their release that use
    /// these values, the gather that makes them whole, and the point of the
    /// compute queue's work it waits for.
    int users = 0;
    std::shared_future<void> gathered;
    std::unique_ptr<Event> computed;
  };
  /// The ZeRO level in effect (0 with one replica).
  int zeroLevel() const;
  /// The StageParameters of the stage holding trained parameter `name` on
  /// this rank, or null.
  StageParameters *homeOf(const std::string &name);
  /// Those whose values stage `stage` takes.
  std::vector<StageParameters *> usedBy(int64_t stage);
  std::vector<StageParameters> byStage;
  /// Index into byStage of each trained parameter's home, and per stage of
  /// this rank the indices of the buffers whose values it takes.
  std::map<std::string, size_t> home;
  std::map<int64_t, std::vector<size_t>> usedIndices;
  /// ZeRO-3: the data-parallel ranks again, for the parameter gathers that
  /// run ahead of the compute on a thread and a queue of their own; null
  /// below.
  std::unique_ptr<Communicator> valueGathers;
  std::unique_ptr<CollectiveGroup> valueGatherBuffers;
  std::unique_ptr<Queue> gatherQueue;
  /// The last gather started on it.
  std::shared_future<void> lastGather;
  /// Host parameters and gradient sums (on the host, those of trained
  /// parameters are views of their stage's flat buffers; elsewhere copies),
  /// and where the stages see them (views of the flat buffers).
  std::map<std::string, TensorPtr> parameters, gradients;
  std::map<std::string, Placed> placedParameters, placedGradients;
  /// A sum that a step accumulates over its microbatches: a parameter's
  /// gradient, or a part of it (see ParameterInfo::gradientPartStages).
  struct GradientSum {
    /// The host values (the gradient's for one part, else `owned`) and
    /// where the stage functions' results add up (the gradient's view of
    /// its flat buffer for one part).
    pp_tensor *host = nullptr;
    Placed placed;
    TensorPtr owned;
    /// The stage computing it, its place in the reducer's list, and the
    /// results a step adds to it and, this step, those still to come.
    int64_t stage = 0;
    size_t reductionIndex = 0;
    int64_t perStep = 0, left = 0;
  };
  /// The parts of gradients this rank's stages compute, and their host
  /// values.
  std::map<GradientPartKey, GradientSum> sums;
  std::map<GradientPartKey, pp_tensor *> localParts;
  /// The parameters whose gradients some stage's backward returns.
  std::set<std::string> withGradient;
  /// Sums the gradients over the data-parallel replicas during the
  /// backward.
  std::unique_ptr<GradientReducer> reducer;
  double waitSeconds = 0;
  /// Adds up the gradients that come in parts or from several holders.
  std::unique_ptr<TiedParameters> tied;
  /// The stage functions' compute-type copies of the values.
  ComputeCopies copies;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_PARAMETERSTORE_H
