//===- LossScaler.cpp - dynamic loss scaling for fp16 training ------------===//

#include "runtime/training/LossScaler.h"

namespace pp::runtime {

bool LossScaler::update(bool finite) {
  if (!finite) {
    current.scale *= kBackoffFactor;
    current.cleanSteps = 0;
    return false;
  }
  // At least: a resumed count may exceed a smaller interval.
  if (++current.cleanSteps >= options.growthInterval) {
    current.scale *= kGrowthFactor;
    current.cleanSteps = 0;
  }
  return true;
}

} // namespace pp::runtime
