//===- StepExecutor.cpp - runs a rank's row of an action table ------------===//

#include "runtime/training/StepExecutor.h"

#include "runtime/communication/FlightRecord.h"
#include "runtime/kernels/CollectiveAxes.h"
#include "runtime/schedules/ActionMessages.h"
#include "runtime/training/PipelinePlan.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace pp::runtime {

StepExecutor::StepExecutor(const ExecutionContext &context)
    : context(context),
      router(context.package.stageRanks, context.stages.rank()),
      tensorAxesKey(collectiveAxesKey(context.groups.tensorAxes)),
      offload(context.backend.stateDevice().queue) {
  // Each saved value lives until the last function of its stage that takes
  // it (Package::load checked that an earlier one returns it).
  for (int64_t s : context.stages.stages()) {
    const std::vector<StageFunctionInfo> &functions =
        context.stages.functionsOf(s);
    for (size_t f = 0; f < functions.size(); ++f)
      for (const TensorInfo &arg : functions[f].args)
        if (arg.role == Role::Saved)
          lastUse[{s, arg.name}] = f;
  }
  if (!context.memoryPlan || !context.backend.servesMemoryPlans())
    return;
  // The rank runs its stage functions one at a time: their arenas share
  // one buffer of the largest's size.
  uint64_t largest = 0;
  for (int64_t s : context.stages.stages())
    for (const StageFunctionInfo &function : context.stages.functionsOf(s))
      if (function.memoryPlan)
        largest = std::max(largest, function.memoryPlan->arenaBytes);
  auto buffer = std::make_shared<ArenaBuffer>(largest);
  for (int64_t s : context.stages.stages())
    for (const StageFunctionInfo &function : context.stages.functionsOf(s))
      if (function.memoryPlan)
        arenas[function.symbol] = std::make_unique<MemoryArena>(
            function.symbol, *function.memoryPlan, buffer);
}

void StepExecutor::run(const std::vector<Action> &actions,
                       MicrobatchData &data,
                       const std::function<void()> &optimizer) {
  ParameterStore &parameters = context.parameters;
  ActionTracer &tracer = context.tracer;
  // ZeRO-3: the stages whose gather started and whose first compute, which
  // waits for it, has not come yet.
  std::set<int64_t> gathering;
  for (size_t i = 0; i < actions.size(); ++i) {
    const Action &action = actions[i];
    if (isCompute(action.kind) && gathering.erase(action.stage)) {
      double start = tracer.now();
      auto waitStart = profileNow();
      parameters.awaitGather(action.stage);
      addActionTime(&ActionSeconds::waiting, waitStart);
      tracer.span("gather", action, start);
    }
    double start = tracer.now();
    auto actionStart = profileNow();
    recordFlight(formatAction(action), -1, 0);
    switch (action.kind) {
    case ActionKind::Recv:
      awaitMessages(action, data.batch);
      addActionTime(&ActionSeconds::waiting, actionStart);
      tracer.span("recv", action, start);
      break;
    case ActionKind::Send:
      sendMessages(action, data.batch);
      addActionTime(&ActionSeconds::communication, actionStart);
      tracer.span("send", action, start);
      break;
    case ActionKind::ReduceGradients:
      parameters.reduce(action.stage);
      addActionTime(&ActionSeconds::communication, actionStart);
      tracer.span("reduce", action, start);
      break;
    case ActionKind::GatherParameters:
      parameters.startGather(action.stage);
      gathering.insert(action.stage);
      break;
    case ActionKind::ReleaseParameters:
      parameters.release(action.stage);
      tracer.span("release", action, start);
      break;
    case ActionKind::OffloadActivations: {
      auto saved = data.saved.find({action.stage, action.microbatch});
      SavedValues none;
      offload.offload(action.stage, action.microbatch,
                      saved == data.saved.end() ? none : saved->second);
      if (saved != data.saved.end())
        data.saved.erase(saved);
      tracer.span("offload", action, start);
      break;
    }
    case ActionKind::ReloadActivations:
      offload.reload(action.stage, action.microbatch);
      tracer.span("reload", action, start);
      break;
    case ActionKind::Optimizer:
      if (!optimizer)
        throw std::runtime_error("rank " +
                                 std::to_string(context.stages.rank()) +
                                 ": the table has an optimizer action "
                                 "where the run has no training step");
      optimizer();
      addActionTime(&ActionSeconds::optimizer, actionStart);
      break;
    default: {
      const std::vector<StageFunctionInfo> &functions =
          context.stages.functionsOf(action.stage);
      router.sendAtOnce(i + 1 < actions.size() &&
                        isSendOf(actions[i + 1], action));
      for (size_t f = 0; f < functions.size(); ++f)
        if (actionRunsPhase(action.kind, functions[f].phase))
          runFunction(action, f, data);
      tracer.span(actionKindName(action.kind), action, start);
    }
    }
    if (context.measuresMemory && data.batch.training)
      measureHeld(data);
  }
  if (std::string problem = router.unsent(); !problem.empty())
    throw std::runtime_error(problem);
  context.backend.finishStep();
}

/// The time now with a profile (an action's start); else none, so that a
/// run without one reads no clock for it.
std::chrono::steady_clock::time_point StepExecutor::profileNow() const {
  return context.profile ? std::chrono::steady_clock::now()
                         : std::chrono::steady_clock::time_point{};
}

/// Adds the seconds since `start` to `part` of the action times, with a
/// profile.
void StepExecutor::addActionTime(double ActionSeconds::*part,
                                 std::chrono::steady_clock::time_point start) {
  if (context.profile)
    actionTimes.*part += std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
}

/// Updates the peak with what the rank holds now.
void StepExecutor::measureHeld(const MicrobatchData &data) {
  ResidentBytes resident = context.parameters.residentBytes();
  HeldBytes now;
  now.parameters = static_cast<double>(resident.parameters);
  now.gradients = static_cast<double>(resident.gradients);
  now.optimizerState = static_cast<double>(resident.optimizerState);
  // A compute copy lives as long as its values: counted with them.
  now.parameters += static_cast<double>(resident.computeCopies);
  for (const auto &[key, values] : data.saved)
    for (const auto &[name, tensor] : values)
      now.activations += static_cast<double>(pp_tensor_nbytes(tensor.get()));
  now.activations += static_cast<double>(offload.residentBytes());
  if (now.total() > peak.total())
    peak = now;
  mostActivations = std::max(mostActivations, now.activations);
}

/// Runs one stage function of compute action `action` over `args` for
/// `batch`, passing each result to `onResult` as soon as the function
/// hands it over and giving it the arguments `takeArg` gives up; returns
/// its results (null where `onResult` consumed one).
std::vector<TensorPtr>
StepExecutor::call(const Action &action, const StageFunctionInfo &function,
                   std::vector<pp_tensor *> args, const BatchRef &batch,
                   const ResultHandler &onResult, const ArgTaker &takeArg) {
  int64_t microbatch = action.microbatch;
  Backend &backend = context.backend;
  pp_frame frame;
  frame.profile = context.profile;
  // The collectives name the mesh axes they run over: the tensor axes.
  frame.collectiveGroups[tensorAxesKey] =
      backend.tensorCollectives() ? backend.tensorCollectives()
                                  : context.groups.collectives.get();
  frame.args = std::move(args);
  frame.takeArg = takeArg;
  // The generated code is C: a failure becomes the frame's error.
  frame.onResult = [&](int64_t index, pp_tensor *result) {
    if (static_cast<size_t>(index) >= function.results.size())
      return;
    try {
      if (onResult(static_cast<size_t>(index), result)) {
        frame.results[index] = nullptr;
        pp_tensor_destroy(result);
      }
    } catch (const std::exception &error) {
      failFrame(&frame, error.what());
    }
  };
  // A kernel may add a gradient result straight into its sum.
  auto gradientResult = [&](int64_t index) -> const TensorInfo & {
    if (index < 0 || static_cast<size_t>(index) >= function.results.size() ||
        function.results[index].role != Role::Gradient)
      throw std::runtime_error(
          "result " + std::to_string(index) + " of " + function.symbol +
          " is not a gradient, so it has no sum to add into; the manifest "
          "and the stage library disagree: recompile the model");
    return function.results[index];
  };
  frame.gradientSum = [&](int64_t index) {
    return context.parameters.gradientSum(gradientResult(index));
  };
  frame.gradientAdded = [&](int64_t index) {
    context.parameters.gradientAdded(gradientResult(index));
  };
  backend.configure(frame, batch.messageStep, microbatch);
  router.prepare(frame, batch.messageStep, action);
  frame.channel = &router;
  // Dropout drops in training calls only.
  frame.position = {context.seed, batch.index,
                    context.layout.firstPosition(
                        batch.start, context.groups.dataParallelRank,
                        microbatch),
                    /*training=*/batch.training};
  auto arena = arenas.find(function.symbol);
  if (arena != arenas.end()) {
    frame.arena = arena->second.get();
    frame.arena->begin();
  }
  function.entry(&frame);
  if (frame.error.empty() && frame.arena)
    frame.error = frame.arena->finish();
  heapTensors += frame.heapAllocations;
  if (!frame.error.empty())
    throw std::runtime_error("stage " + std::to_string(action.stage) + " (" +
                             function.symbol + "): " + frame.error);
  std::vector<TensorPtr> results;
  for (pp_tensor *result : frame.results)
    results.emplace_back(result);
  frame.results.clear();
  if (results.size() != function.results.size())
    throw std::runtime_error(function.symbol + " returned " +
                             std::to_string(results.size()) +
                             " results, the manifest lists " +
                             std::to_string(function.results.size()));
  return results;
}

/// Microbatch `microbatch` of the input `info` a stage function takes,
/// from the batch's source.
TensorPtr StepExecutor::input(const TensorInfo &info, const BatchRef &batch,
                              int64_t microbatch) {
  const std::vector<TensorInfo> &inputs = context.package.inputs;
  auto it = std::find_if(
      inputs.begin(), inputs.end(),
      [&](const TensorInfo &input) { return input.name == info.name; });
  if (it == inputs.end())
    throw std::runtime_error("a stage of rank " +
                             std::to_string(context.stages.rank()) +
                             " takes the input '" + info.name +
                             "', which the package does not list");
  TensorPtr tensor = makeTensor(info);
  // The package's entry knows the rows of the table it indexes.
  batch.source->fillInput(*it, batch.start, microbatch, tensor.get());
  return tensor;
}

/// Runs function f of the stage of compute action `action` on its
/// microbatch: feeds its arguments by role, keeps its saved results for the
/// functions after it and accumulates its gradients.
void StepExecutor::runFunction(const Action &action, size_t f,
                               MicrobatchData &data) {
  int64_t stage = action.stage, mb = action.microbatch;
  Backend &backend = context.backend;
  const StageFunctionInfo &function = context.stages.functionsOf(stage)[f];
  SavedValues &saved = data.saved[{stage, mb}];
  offload.take(stage, mb, saved);
  std::vector<TensorPtr> inputs;
  std::vector<Placed> placedInputs;
  placedInputs.reserve(function.args.size());
  std::vector<pp_tensor *> args;
  for (const TensorInfo &arg : function.args) {
    switch (arg.role) {
    case Role::Parameter:
    case Role::Frozen:
    case Role::Constant:
      args.push_back(context.parameters.placed(arg.name));
      break;
    case Role::ComputeCopy:
      args.push_back(context.parameters.computeCopy(arg));
      break;
    case Role::Input:
      inputs.push_back(input(arg, data.batch, mb));
      placedInputs.emplace_back();
      args.push_back(
          backend.place(inputs.back().get(), placedInputs.back().copy));
      break;
    case Role::Label:
      args.push_back(data.labels.at(mb).tensor);
      break;
    case Role::LossScale:
      args.push_back(data.lossScale);
      break;
    case Role::Saved:
      args.push_back(saved.at(arg.name).get());
      break;
    default:
      throw std::runtime_error("argument '" + arg.name + "' of " +
                               function.symbol + " has role '" +
                               roleName(arg.role) +
                               "', which no argument can have");
    }
  }
  // Gradients add up as the function hands them over (the generated code
  // does so right after their last use) and are freed then, so that the
  // last microbatch's are reduced over the replicas while it computes the
  // rest and a backward never holds all its parameters' gradients at once;
  // microbatches arrive in order, so each sum's order is fixed.
  // A saved value that no later function reads: freed after this one, or
  // given up to it when it asks (pp_frame_take_arg; its kernel may
  // overwrite it).
  auto lastReadHere = [&](const TensorInfo &arg) {
    return arg.role == Role::Saved && lastUse.at({stage, arg.name}) == f;
  };
  auto takeSaved = [&](int64_t index) -> pp_tensor * {
    const TensorInfo &arg = function.args.at(static_cast<size_t>(index));
    auto value = saved.find(arg.name);
    if (!lastReadHere(arg) || value == saved.end())
      return nullptr;
    pp_tensor *taken = value->second.release();
    saved.erase(value);
    return taken;
  };
  std::vector<TensorPtr> results = call(
      action, function, std::move(args), data.batch,
      [&](size_t index, pp_tensor *result) {
        if (function.results[index].role != Role::Gradient)
          return false;
        context.parameters.addGradient(function.results[index], result);
        return true;
      },
      takeSaved);
  for (const TensorInfo &arg : function.args)
    if (lastReadHere(arg))
      saved.erase(arg.name);
  for (size_t i = 0; i < results.size(); ++i) {
    const TensorInfo &info = function.results[i];
    if (info.role == Role::Loss) {
      data.lossSum.add(results[i].get());
    } else if (info.role == Role::Saved && lastUse.count({stage, info.name})) {
      saved[info.name] = std::move(results[i]);
    } else if (info.role == Role::Output) {
      // The schedule runs a stage's forwards in microbatch order.
      TensorPtr host = makeTensor(info);
      backend.fetch(results[i].get(), host.get());
      data.outputs[info.name].push_back(std::move(host));
    }
  }
  if (saved.empty())
    data.saved.erase({stage, mb});
}

/// Waits for the messages that `recv`'s compute action takes from stages on
/// other ranks; those from stages of this rank must be there already.
void StepExecutor::awaitMessages(const Action &recv, const BatchRef &batch) {
  pp_frame frame;
  context.backend.configure(frame, batch.messageStep, recv.microbatch);
  router.prepare(frame, batch.messageStep, recv);
  for (const StageFunctionInfo &function :
       context.stages.functionsOf(recv.stage)) {
    if (!actionRunsPhase(recv.of, function.phase))
      continue;
    for (const MessageInfo &message : function.messages) {
      if (message.send)
        continue;
      for (const TensorInfo &tensor : message.tensors)
        if (std::string error = router.await(message.peer, tensor.name);
            !error.empty())
          throw std::runtime_error(
              "rank " + std::to_string(context.stages.rank()) + " at " +
              formatAction(recv) + " (stage " + std::to_string(recv.stage) +
              ", microbatch " + std::to_string(recv.microbatch) +
              "): " + error);
    }
  }
}

/// Hands the messages that `send`'s compute action produced for stages on
/// other ranks, held since, to the transport.
void StepExecutor::sendMessages(const Action &send, const BatchRef &batch) {
  pp_frame frame;
  context.backend.configure(frame, batch.messageStep, send.microbatch);
  router.sendHeld(send, *frame.channel);
}

} // namespace pp::runtime
