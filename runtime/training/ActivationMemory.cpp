//===- ActivationMemory.cpp - what a stage holds for its backward ---------===//

#include "runtime/training/ActivationMemory.h"

#include "runtime/core/PlacedTensor.h"
#include "runtime/training/Trainer.h"

#include <algorithm>

namespace pp::runtime {

StageMemory stageMemory(const Package &package, int64_t stage,
                        ScheduleKind kind, int64_t microbatches) {
  StageMemory memory;
  const StageInfo &info = package.stages[stage];
  for (const TensorInfo &result : info.functions.front().results)
    if (result.role == Role::Saved)
      memory.savedBytesPerMicrobatch +=
          tensorBytes(result.dtype, result.shape).value_or(0);
  for (const StageFunctionInfo &function : info.functions)
    if (function.memoryPlan)
      memory.arenaBytes += function.memoryPlan->arenaBytes;
  int64_t inFlight = 0;
  ScheduleTable table = packageSchedule(package, kind, microbatches);
  for (const Action &action : table[stage]) {
    // A backward action (or its first part) ends a microbatch's stay.
    if (action.kind == ActionKind::Forward)
      memory.inFlightMicrobatches =
          std::max(memory.inFlightMicrobatches, ++inFlight);
    else if (action.kind == ActionKind::Backward ||
             action.kind == ActionKind::BackwardInput)
      --inFlight;
  }
  if (stage < static_cast<int64_t>(package.estimatedSavedBytes.size()))
    memory.estimatedSavedBytes = package.estimatedSavedBytes[stage];
  return memory;
}

} // namespace pp::runtime
