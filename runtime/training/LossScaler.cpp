//===- LossScaler.cpp - dynamic loss scaling for fp16 training ------------===//

#include "runtime/training/LossScaler.h"

#include <sstream>

namespace pp::runtime {

bool LossScaler::update(bool finite) {
  if (!finite) {
    ++current.skippedSteps;
    current.cleanSteps = 0;
    if (current.scale * kBackoffFactor < kMinimumScale)
      stopped = true;
    else
      current.scale *= kBackoffFactor;
    return false;
  }
  current.skippedSteps = 0;
  // At least: a resumed count may exceed a smaller interval.
  if (++current.cleanSteps >= options.growthInterval) {
    current.scale *= kGrowthFactor;
    current.cleanSteps = 0;
  }
  return true;
}

std::string exhaustedMessage(int64_t step, const LossScaleState &state) {
  std::ostringstream message;
  message << "step " << step << ": the gradients overflowed at every loss "
          << "scale down to 2^-24, f16's smallest (" << state.skippedSteps
          << " steps skipped in a row); a smaller scale would flush every "
          << "gradient to zero, so the run stops. The forward is likely "
          << "not finite: a NaN or an infinity in the loss, in the input "
          << "data, or in weights that a diverging learning rate drove past "
          << "f16's largest value (65504). Try --precision bf16 (f32's "
          << "range), a lower --lr, or check the data";
  return message.str();
}

} // namespace pp::runtime
