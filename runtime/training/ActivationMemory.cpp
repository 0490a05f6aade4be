//===- ActivationMemory.cpp - what a stage holds for its backward ---------===//

#include "runtime/training/ActivationMemory.h"

#include "runtime/core/PlacedTensor.h"
#include "runtime/schedules/ActionMessages.h"

#include <algorithm>

namespace pp::runtime {

StageMemory &StageMemory::operator+=(const StageMemory &other) {
  savedBytesPerMicrobatch += other.savedBytesPerMicrobatch;
  inFlightMicrobatches = std::max(inFlightMicrobatches,
                                  other.inFlightMicrobatches);
  heldBytes += other.activationBytes();
  offloadedMicrobatches =
      std::max(offloadedMicrobatches, other.offloadedMicrobatches);
  arenaBytes = std::max(arenaBytes, other.arenaBytes);
  if (other.estimatedSavedBytes)
    estimatedSavedBytes =
        estimatedSavedBytes.value_or(0) + *other.estimatedSavedBytes;
  return *this;
}

namespace {

/// The bytes of the Saved results of `function`.
uint64_t savedResultBytes(const StageFunctionInfo &function) {
  uint64_t bytes = 0;
  for (const TensorInfo &result : function.results)
    if (result.role == Role::Saved)
      bytes += tensorBytes(result.dtype, result.shape).value_or(0);
  return bytes;
}

/// Whether `function` takes the value `name`.
bool takes(const StageFunctionInfo &function, const std::string &name) {
  return std::any_of(function.args.begin(), function.args.end(),
                     [&](const TensorInfo &arg) { return arg.name == name; });
}

} // namespace

SavedBytes savedBytesOf(const Package &package, int64_t stage) {
  SavedBytes saved;
  const StageFunctionInfo *forward = nullptr, *input = nullptr,
                          *weight = nullptr;
  for (const StageFunctionInfo &function : package.stages[stage].functions) {
    if (function.phase == Phase::Forward)
      forward = &function;
    if (function.phase == Phase::BackwardInput)
      input = &function;
    if (function.phase == Phase::BackwardWeight)
      weight = &function;
  }
  if (!forward)
    return saved;
  saved.forward = savedResultBytes(*forward);
  if (!input || !weight)
    return saved;
  saved.inputToWeight = savedResultBytes(*input);
  for (const TensorInfo &result : forward->results)
    if (result.role == Role::Saved && !takes(*weight, result.name))
      saved.freedByInputHalf +=
          tensorBytes(result.dtype, result.shape).value_or(0);
  return saved;
}

uint64_t mostOffloadedBytes(const Package &package,
                            const std::vector<Action> &rankActions) {
  uint64_t now = 0, most = 0;
  for (const Action &action : rankActions) {
    if (!isOffload(action.kind))
      continue;
    uint64_t bytes = savedBytesOf(package, action.stage).forward;
    if (action.kind == ActionKind::OffloadActivations)
      most = std::max(most, now += bytes);
    else
      now -= bytes;
  }
  return most;
}

StageMemory stageMemory(const Package &package, int64_t stage,
                        const std::vector<Action> &rankActions) {
  StageMemory memory;
  const StageInfo &info = package.stages[stage];
  memory.savedBytesPerMicrobatch = savedBytesOf(package, stage).forward;
  for (const StageFunctionInfo &function : info.functions)
    if (function.memoryPlan)
      memory.arenaBytes =
          std::max(memory.arenaBytes, function.memoryPlan->arenaBytes);
  memory.inFlightMicrobatches = inFlightMicrobatches(rankActions, stage);
  memory.heldBytes = memory.savedBytesPerMicrobatch *
                     static_cast<uint64_t>(memory.inFlightMicrobatches);
  memory.offloadedMicrobatches = offloadedMicrobatches(rankActions, stage);
  if (stage < static_cast<int64_t>(package.estimatedSavedBytes.size()))
    memory.estimatedSavedBytes = package.estimatedSavedBytes[stage];
  return memory;
}

} // namespace pp::runtime
