//===- ActivationMemory.cpp - what a stage holds for its backward ---------===//

#include "runtime/training/ActivationMemory.h"

#include "runtime/core/PlacedTensor.h"

#include <algorithm>

namespace pp::runtime {

StageMemory &StageMemory::operator+=(const StageMemory &other) {
  savedBytesPerMicrobatch += other.savedBytesPerMicrobatch;
  inFlightMicrobatches = std::max(inFlightMicrobatches,
                                  other.inFlightMicrobatches);
  heldBytes += other.activationBytes();
  arenaBytes += other.arenaBytes;
  if (other.estimatedSavedBytes)
    estimatedSavedBytes =
        estimatedSavedBytes.value_or(0) + *other.estimatedSavedBytes;
  return *this;
}

StageMemory stageMemory(const Package &package, int64_t stage,
                        const std::vector<Action> &rankActions) {
  StageMemory memory;
  const StageInfo &info = package.stages[stage];
  for (const TensorInfo &result : info.functions.front().results)
    if (result.role == Role::Saved)
      memory.savedBytesPerMicrobatch +=
          tensorBytes(result.dtype, result.shape).value_or(0);
  for (const StageFunctionInfo &function : info.functions)
    if (function.memoryPlan)
      memory.arenaBytes += function.memoryPlan->arenaBytes;
  memory.inFlightMicrobatches = inFlightMicrobatches(rankActions, stage);
  memory.heldBytes = memory.savedBytesPerMicrobatch *
                     static_cast<uint64_t>(memory.inFlightMicrobatches);
  if (stage < static_cast<int64_t>(package.estimatedSavedBytes.size()))
    memory.estimatedSavedBytes = package.estimatedSavedBytes[stage];
  return memory;
}

} // namespace pp::runtime
