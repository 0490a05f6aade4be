//===- ParameterStore.cpp - a rank's parameters, gradients and update -----===//

#include "runtime/training/ParameterStore.h"

#include "runtime/checkpoints/CheckpointState.h"
#include "runtime/communication/CommunicatorCollectives.h"
#include "runtime/core/ElementTypes.h"
#include "runtime/training/ParameterInit.h"
#include "runtime/training/TensorShards.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace pp::runtime {

void checkParameterDtypes(const Package &package) {
  for (const ParameterInfo &parameter : package.parameters)
    if (parameter.tensor.dtype != PP_DTYPE_F32)
      throw std::runtime_error(std::string(roleName(parameter.tensor.role)) +
                               " '" + parameter.tensor.name + "' has dtype " +
                               pp_dtype_name(parameter.tensor.dtype) +
                               "; pp-run supports f32 parameters so far");
}

void checkHalfRange(const std::map<std::string, TensorPtr> &values) {
  for (const auto &[name, tensor] : values) {
    const float *data = floatsOf(tensor.get());
    for (int64_t i = 0, n = pp_tensor_numel(tensor.get()); i < n; ++i)
      // The cast the compute copies go through: a finite value of
      // magnitude 65520 or more rounds to infinity; an infinity or a NaN
      // stays what it is.
      if (std::isfinite(data[i]) && std::isinf(toFloat(toHalf(data[i])))) {
        std::ostringstream value;
        value << std::setprecision(9) << data[i];
        throw std::runtime_error(
            "parameter '" + name + "' holds " + value.str() + " at element " +
            std::to_string(i) +
            ", a finite value that f16 rounds to infinity (|x| >= 65520; "
            "its largest value is 65504): its fp16 "
            "copy would be infinite from step 1. Train with --precision "
            "bf16 (f32's range), or rescale the weight below 65504 (and what "
            "reads it to match)");
      }
  }
}

std::vector<ParameterInfo> trainedParameters(const Package &package) {
  std::set<std::string> computed;
  for (const StageInfo &stage : package.stages)
    for (const StageFunctionInfo &function : stage.functions)
      for (const TensorInfo &result : function.results)
        if (result.role == Role::Gradient)
          computed.insert(result.name);
  std::vector<ParameterInfo> listed;
  for (const ParameterInfo &parameter : package.parameters)
    if (parameter.tensor.role == Role::Parameter &&
        computed.count(parameter.tensor.name))
      listed.push_back(parameter);
  return listed;
}

ParameterStore::ParameterStore(const Package &package,
                               const RankStages &stages, RankGroups &groups,
                               Backend &backend, const TrainerOptions &options,
                               bool forwardOnly)
    : package(package), stages(stages), groups(groups), backend(backend),
      where(backend.stateDevice()), options(options),
      forwardOnly(forwardOnly), copies(backend) {}

void ParameterStore::initialize(const CheckpointTensors *saved,
                                const ModelWeights &weights) {
  // Copies of earlier values would be stale.
  copies.clear();
  // A tied parameter has a gradient when any holder's backward returns
  // part of it.
  for (const StageInfo &any : package.stages)
    for (const StageFunctionInfo &function : any.functions)
      for (const TensorInfo &result : function.results)
        if (result.role == Role::Gradient)
          withGradient.insert(result.name);
  layOutTrainedParameters();
  for (const ParameterInfo &parameter : package.parameters) {
    if (!stages.holdsCopyOf(parameter))
      continue;
    const std::string &name = parameter.tensor.name;
    StageParameters *at = homeOf(name);
    const FlatParameter *trained = at ? at->flat->find(name) : nullptr;
    TensorPtr tensor;
    Placed &placed = placedParameters[name];
    if (trained)
      viewFlat(parameter.tensor, at->flat->values() + trained->offset, tensor,
               placed);
    else
      tensor = makeTensor(parameter.tensor);
    fillInitialValue(parameter, saved, weights, tensor.get());
    if (trained)
      backend.refresh(placed.tensor, tensor.get());
    else
      placed.tensor = backend.place(tensor.get(), placed.copy);
    parameters[name] = std::move(tensor);
    // Frozen and constant tensors get no gradient and no updates, nor does
    // anything in a forward-only run.
    if (parameter.tensor.role != Role::Parameter || forwardOnly)
      continue;
    TensorPtr gradient;
    Placed &placedGradient = placedGradients[name];
    if (trained) {
      viewFlat(parameter.tensor, at->flat->gradients() + trained->offset,
               gradient, placedGradient);
    } else {
      gradient = makeTensor(parameter.tensor);
      placedGradient.tensor = gradient.get();
    }
    prepareGradientSums(parameter, gradient.get(), placedGradient.tensor);
    gradients[name] = std::move(gradient);
  }
}

/// Makes the host tensor `host` and the stages' view `placed` of the flat
/// buffer elements at `data` (on the stages' device) for `info`: one view
/// on the host; elsewhere a host tensor of its own and a device view.
void ParameterStore::viewFlat(const TensorInfo &info, float *data,
                              TensorPtr &host, Placed &placed) {
  Device &device = where.queue.device();
  if (device.deviceKind() == PP_DEVICE_CPU) {
    host = borrowTensor(info, data);
    placed.tensor = host.get();
    return;
  }
  host = makeTensor(info);
  placed.copy = borrowTensorOn(device, info, data);
  placed.tensor = placed.copy.get();
}

/// Creates the sums of the parts of `parameter`'s gradient (host tensor
/// `gradient`, seen by the stages as `placedGradient`) that this rank's
/// stages compute: the first in the gradient itself, each further part (a
/// tied parameter's) in a buffer of its own. TiedParameters adds the parts
/// up after the data-parallel reduction, element by element into the
/// gradient, so one of them may be the gradient: the same bits, one
/// parameter-sized buffer fewer.
void ParameterStore::prepareGradientSums(const ParameterInfo &parameter,
                                         pp_tensor *gradient,
                                         pp_tensor *placedGradient) {
  const std::vector<int64_t> &partStages = parameter.gradientPartStages;
  bool gradientTaken = false;
  for (int64_t part = 0; part < static_cast<int64_t>(partStages.size());
       ++part) {
    if (!stages.holds(partStages[part]))
      continue;
    GradientSum &sum = sums[{parameter.tensor.name, part}];
    sum.stage = partStages[part];
    if (gradientTaken) {
      sum.owned = makeTensor(parameter.tensor);
      sum.host = sum.owned.get();
      sum.placed.tensor = backend.place(sum.host, sum.placed.copy);
    } else {
      sum.host = gradient;
      sum.placed.tensor = placedGradient;
      gradientTaken = true;
    }
    localParts[{parameter.tensor.name, part}] = sum.host;
  }
}

/// Writes `parameter`'s first value into `local` (this rank's shard of
/// it): the global tensor, then this rank's slice. A resumed run takes
/// every tensor from its checkpoint `saved`; otherwise a tensor --weights
/// gives comes from its file, and frozen and constant tensors always from
/// the model.
void ParameterStore::fillInitialValue(const ParameterInfo &parameter,
                                      const CheckpointTensors *saved,
                                      const ModelWeights &weights,
                                      pp_tensor *local) {
  const std::string &name = parameter.tensor.name;
  if (saved) {
    readShard(*saved, parameter, name, floatsOf(local));
    return;
  }
  TensorPtr global;
  pp_tensor *whole = local;
  if (parameter.sharding) {
    TensorInfo info = parameter.tensor;
    info.shape = parameter.globalShape();
    global = makeTensor(info);
    whole = global.get();
  }
  if (weights.read(name, floatsOf(whole))) {
    // From --weights.
  } else if (options.init == ParameterInit::Random &&
             parameter.tensor.role == Role::Parameter) {
    fillRandomParameter(whole, name, options.seed);
  } else if (parameter.fromFile) {
    package.readParameter(parameter, whole);
  } else {
    fillMissingParameter(whole, name);
  }
  if (parameter.sharding)
    sliceShard(*parameter.sharding, groups.tensorParallelRank,
               floatsOf(whole), floatsOf(local));
}

/// Reads the global tensor `name` (of `parameter`'s global shape: the
/// parameter or a buffer of its optimizer state) from the checkpoint files
/// `saved` and writes this rank's shard of it to `local`.
void ParameterStore::readShard(const CheckpointTensors &saved,
                               const ParameterInfo &parameter,
                               const std::string &name, float *local) const {
  if (!parameter.sharding) {
    saved.read(name, local);
    return;
  }
  std::vector<float> global(numElements(parameter.globalShape()));
  saved.read(name, global.data());
  sliceShard(*parameter.sharding, groups.tensorParallelRank, global.data(),
             local);
}

/// Lays out a flat buffer per stage of this rank for the trained
/// parameters it is the first holder of on this rank (in name order, as the
/// optimizer steps them; none in a forward-only run), and the update over
/// each. A parameter the loss does not depend on has no gradient
/// (PyTorch's None) and keeps its value.
void ParameterStore::layOutTrainedParameters() {
  std::map<int64_t, std::vector<FlatParameter>> trained;
  for (int64_t s : stages.stages())
    trained[s];
  if (!forwardOnly)
    for (const ParameterInfo &parameter : package.parameters)
      if (stages.holdsCopyOf(parameter) &&
          parameter.tensor.role == Role::Parameter &&
          withGradient.count(parameter.tensor.name)) {
        int64_t first = *std::find_if(
            parameter.stages.begin(), parameter.stages.end(),
            [&](int64_t s) { return stages.holds(s); });
        trained[first].push_back(
            {parameter.tensor.name,
             static_cast<int64_t>(parameter.tensor.shape.size()),
             numElements(parameter.tensor.shape)});
      }
  Communicator &dataParallel = *groups.dataParallel;
  // One replica reduces and gathers nothing: no device communicator.
  dataParallelBuffers =
      dataParallel.worldSize() > 1
          ? backend.connectCollectives(dataParallel,
                                       "the data-parallel group's buffers")
          : std::make_unique<CommunicatorCollectives>(dataParallel);
  for (auto &[stage, listed] : trained) {
    std::sort(listed.begin(), listed.end(),
              [](const FlatParameter &a, const FlatParameter &b) {
                return a.name < b.name;
              });
    for (const FlatParameter &parameter : listed)
      home[parameter.name] = byStage.size();
    StageParameters &held = byStage.emplace_back();
    held.stage = stage;
    held.flat = std::make_unique<FlatParameters>(
        std::move(listed), dataParallel.worldSize(), where.queue);
    held.update = std::make_unique<ParameterUpdate>(
        options.optimizer, *held.flat, dataParallel, *dataParallelBuffers,
        options.zeroLevel, where);
  }
  // The buffers whose values each stage takes, in stage order.
  for (int64_t s : stages.stages()) {
    std::set<size_t> used;
    for (const StageFunctionInfo &function : stages.functionsOf(s))
      for (const TensorInfo &arg : function.args)
        if (auto it = home.find(arg.name); it != home.end())
          used.insert(it->second);
    usedIndices[s].assign(used.begin(), used.end());
  }
  if (shardsValues()) {
    std::vector<int64_t> all(dataParallel.worldSize());
    std::iota(all.begin(), all.end(), 0);
    valueGathers = dataParallel.split("zero-3 parameter gathers", all);
    valueGatherBuffers =
        backend.connectCollectives(*valueGathers, "the ZeRO-3 gathers");
    gatherQueue = where.queue.device().createQueue();
  }
}

int ParameterStore::zeroLevel() const {
  return groups.dataParallel->worldSize() > 1 ? options.zeroLevel : 0;
}

ParameterStore::StageParameters *
ParameterStore::homeOf(const std::string &name) {
  auto it = home.find(name);
  return it == home.end() ? nullptr : &byStage[it->second];
}

std::vector<ParameterStore::StageParameters *>
ParameterStore::usedBy(int64_t stage) {
  std::vector<StageParameters *> used;
  for (size_t index : usedIndices.at(stage))
    used.push_back(&byStage[index]);
  return used;
}

void ParameterStore::prepareTraining() {
  tied = std::make_unique<TiedParameters>(package, *groups.pipeline,
                                          stages.rank());
  prepareGradientReduction();
}

/// Lists this rank's gradient sums for the data-parallel reduction (in
/// manifest order, each parameter's parts in part order: a part is
/// reduced on its own) and counts the calls per step that add to each.
void ParameterStore::prepareGradientReduction() {
  std::vector<pp_tensor *> listed;
  // ZeRO-2 and up: the sums of a gradient in one part land on the owners
  // of its flat shares; one the tied holders exchange stays whole.
  GradientShares shares;
  for (const ParameterInfo &parameter : package.parameters)
    for (int64_t part = 0;
         part < static_cast<int64_t>(parameter.gradientPartStages.size());
         ++part)
      if (auto it = sums.find({parameter.tensor.name, part});
          it != sums.end()) {
        it->second.reductionIndex = listed.size();
        listed.push_back(it->second.placed.tensor);
        StageParameters *at = homeOf(parameter.tensor.name);
        const FlatParameter *held =
            at ? at->flat->find(parameter.tensor.name) : nullptr;
        bool whole = !held || parameter.gradientPartStages.size() > 1 ||
                     tied->forms(parameter.tensor.name);
        shares.flatOffsets.push_back(whole ? -1 : held->offset);
        shares.shareSizes.push_back(at ? at->update->shareSize() : 0);
      }
  if (zeroLevel() < 2)
    shares = {};
  reducer = std::make_unique<GradientReducer>(
      *dataParallelBuffers, listed, kGradientBucketBytes, std::move(shares),
      where.queue, options.gradReduceDtype, &where.kernels);
  for (int64_t s : stages.stages())
    for (const StageFunctionInfo &function : stages.functionsOf(s))
      for (const TensorInfo &result : function.results)
        if (result.role == Role::Gradient)
          sums.at({result.name, result.part}).perStep += options.microbatches;
}

void ParameterStore::beginStep() {
  for (auto &[key, sum] : sums)
    sum.left = sum.perStep;
  reducer->begin();
}

void ParameterStore::addGradient(const TensorInfo &result,
                                 pp_tensor *contribution) {
  pp_tensor *placed = gradientSum(result);
  where.kernels.accumulate(where.queue, floatsOf(placed),
                           floatsOf(contribution), pp_tensor_numel(placed));
  gradientAdded(result);
}

pp_tensor *ParameterStore::gradientSum(const TensorInfo &result) {
  GradientSum &sum = sums.at({result.name, result.part});
  // Zeroed at the step's first contribution, not before its forwards: a
  // gradient released between steps (ZeRO-2 and up) comes back only when
  // the backward needs it.
  pp_tensor *placed = sum.placed.tensor;
  if (sum.left == sum.perStep)
    where.queue.zero(pp_tensor_data(placed), pp_tensor_nbytes(placed));
  return placed;
}

void ParameterStore::gradientAdded(const TensorInfo &result) {
  GradientSum &sum = sums.at({result.name, result.part});
  if (--sum.left != 0)
    return;
  // The reduction of its bucket may start while the backward goes on.
  reducer->ready(sum.reductionIndex);
}

void ParameterStore::reduce(int64_t stage) {
  for (const auto &[key, sum] : sums)
    if (sum.stage == stage) {
      if (sum.left != 0)
        throw std::logic_error(
            "the reduce of stage " + std::to_string(stage) +
            " comes before its last backward: '" + key.first + "' awaits " +
            std::to_string(sum.left) + " more contributions");
      reducer->ready(sum.reductionIndex);
    }
}

void ParameterStore::finishReduction() {
  auto waitStart = std::chrono::steady_clock::now();
  reducer->finish();
  waitSeconds += std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - waitStart)
                     .count();
  sumTiedGradients();
}

/// Adds up the gradients that come in parts or from several holders
/// (TiedParameters), on the host: the parts this rank computes are copied
/// there and the sums back where the stages are.
void ParameterStore::sumTiedGradients() {
  for (const auto &[key, host] : localParts)
    if (tied->forms(key.first))
      backend.fetch(sums.at(key).placed.tensor, host);
  tied->sumGradients(localParts, gradients);
  // Every holder gets the sum, also one that computes no part of it.
  for (auto &[name, gradient] : gradients)
    if (tied->forms(name))
      backend.refresh(placedGradients.at(name).tensor, gradient.get());
}

double ParameterStore::gradientNorm() {
  std::vector<double> squares(package.parameters.size(), 0.0);
  bool sharded = zeroLevel() >= 2;
  // Each trained parameter's sum of squares (ZeRO-2 and up: of those
  // whose last element lies in this rank's share), with the same bits at
  // every level.
  std::map<std::string, double> held;
  for (StageParameters &stage : byStage)
    held.merge(stage.update->gradientSquares());
  for (size_t i = 0; i < package.parameters.size(); ++i) {
    const ParameterInfo &parameter = package.parameters[i];
    auto it = gradients.find(parameter.tensor.name);
    if (it == gradients.end() || !stages.holds(parameter.stage) ||
        (!parameter.sharding && groups.tensorParallelRank != 0))
      continue;
    // A parameter without a gradient (in no flat buffer) adds nothing.
    auto sum = held.find(parameter.tensor.name);
    squares[i] = sum == held.end() ? 0.0 : sum->second;
  }
  if (sharded)
    groups.dataParallel->allReduceSum(squares);
  groups.tensorParallel->allReduceSum(squares);
  groups.pipeline->allReduceSum(squares);
  double total = 0;
  for (double square : squares)
    total += square;
  return std::sqrt(total);
}

void ParameterStore::gatherGradients() {
  for (StageParameters &held : byStage)
    held.update->gatherGradients();
}

void ParameterStore::apply(float clip, float learningRate) {
  // The stages see the flat buffers the update writes.
  for (StageParameters &held : byStage)
    held.update->apply(clip, learningRate);
  copies.clear();
}

void ParameterStore::skip() {
  for (StageParameters &held : byStage)
    held.update->skip();
}

void ParameterStore::scaleGradients(float factor) {
  for (StageParameters &held : byStage)
    held.update->scaleGradients(factor);
}

const std::map<std::string, TensorPtr> &ParameterStore::hostValues() {
  // Only the trained values change.
  for (const auto &[name, index] : home)
    backend.fetch(placedParameters.at(name).tensor, parameters.at(name).get());
  return parameters;
}

const std::map<std::string, TensorPtr> &ParameterStore::hostGradients() {
  for (auto &[name, gradient] : gradients)
    backend.fetch(placedGradients.at(name).tensor, gradient.get());
  return gradients;
}

ParameterStore::~ParameterStore() {
  // A gather still running uses valueGathers and a stage's buffers (a step
  // that failed meanwhile): wait for it before they go.
  for (StageParameters &held : byStage)
    if (held.gathered.valid())
      held.gathered.wait();
}

void ParameterStore::startGather(int64_t stage) {
  for (StageParameters *held : usedBy(stage)) {
    if (held->users++ > 0)
      continue;
    // One gather at a time on valueGathers, in the order they start; a
    // gather lets go of the one before once it ended, so that the chain
    // does not grow over the run.
    // The gather rewrites the values the compute queue's work so far
    // writes (the first values, an update) or reads: it waits for them.
    if (!held->computed)
      held->computed = where.queue.device().createEvent();
    where.queue.record(*held->computed);
    ParameterUpdate &update = *held->update;
    CollectiveGroup &group = *valueGatherBuffers;
    Queue &queue = *gatherQueue;
    Event &computed = *held->computed;
    held->gathered =
        std::async(std::launch::async, [before = lastGather, &update, &group,
                                        &queue, &computed]() mutable {
          if (before.valid()) {
            before.get();
            before = {};
          }
          queue.device().makeCurrent();
          queue.wait(computed);
          update.gatherValues(group, queue);
          queue.synchronize();
        }).share();
    lastGather = held->gathered;
  }
}

void ParameterStore::awaitGather(int64_t stage) {
  for (StageParameters *held : usedBy(stage))
    held->gathered.get();
}

void ParameterStore::release(int64_t stage) {
  for (StageParameters *held : usedBy(stage)) {
    if (--held->users > 0)
      continue;
    held->gathered.get();
    held->update->releaseValues();
    for (const FlatParameter &released : held->flat->parameters())
      copies.drop(released.name);
  }
}

void ParameterStore::gatherValues() {
  for (StageParameters &held : byStage)
    held.update->gatherValues(*dataParallelBuffers, where.queue);
}

void ParameterStore::releaseValues() {
  for (StageParameters &held : byStage)
    held.update->releaseValues();
  if (shardsValues())
    copies.clear();
}

std::map<std::string, ParameterState> ParameterStore::gatherOptimizerState() {
  std::map<std::string, ParameterState> states;
  for (StageParameters &held : byStage)
    states.merge(held.update->gatherState());
  return states;
}

void ParameterStore::loadOptimizerState(const CheckpointTensors &files) {
  std::map<std::string, ParameterInfo> trained;
  for (const ParameterInfo &parameter : trainedParameters(package))
    trained[parameter.tensor.name] = parameter;
  for (StageParameters &stage : byStage) {
    std::map<std::string, ParameterState> states;
    for (const FlatParameter &held : stage.flat->parameters()) {
      // One that had taken no step keeps none: its state is created at its
      // first step, as in a run that was never interrupted.
      std::optional<int64_t> steps = optimizerStepCount(files, held.name);
      if (!steps)
        continue;
      ParameterState &state = states[held.name];
      state.steps = *steps;
      for (const std::string &buffer :
           optimizerBufferNames(options.optimizer)) {
        std::vector<float> &values = state.buffers[buffer];
        values.resize(held.count);
        readShard(files, trained.at(held.name), held.name + "/" + buffer,
                  values.data());
      }
    }
    stage.update->loadState(states);
  }
}

ResidentBytes ParameterStore::residentBytes() const {
  // The trained parameters' values and gradients as resident in memory
  // (ZeRO-2 and 3 hold shares of them), the others by size.
  ResidentBytes bytes;
  for (const StageParameters &held : byStage) {
    bytes.parameters += held.flat->residentValueBytes();
    bytes.gradients += held.flat->residentGradientBytes();
    bytes.optimizerState += held.update->stateBytes();
  }
  for (const auto &[name, tensor] : parameters)
    if (!home.count(name))
      bytes.parameters += pp_tensor_nbytes(tensor.get());
  for (const auto &[name, tensor] : gradients)
    if (!home.count(name))
      bytes.gradients += pp_tensor_nbytes(tensor.get());
  for (const auto &[key, sum] : sums)
    if (sum.owned)
      bytes.gradients += pp_tensor_nbytes(sum.owned.get());
  bytes.computeCopies = copies.heldBytes();
  return bytes;
}

} // namespace pp::runtime
