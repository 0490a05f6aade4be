//===- LossScaler.h - dynamic loss scaling for fp16 training ----*- C++ -*-===//
//
// fp16 has 5 exponent bits: gradients below 2^-24 flush to zero. The loss's
// gradient seed is multiplied by a scale S so that they stay representable,
// and the update divides the f32 gradients by S again (S is a power of two:
// exact). A step whose gradients overflowed (the global gradient norm is
// not finite) is skipped and S halves; after `growthInterval` clean steps
// in a row S doubles. These are torch.amp.GradScaler's rules and defaults.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_LOSSSCALER_H
#define PP_RUNTIME_TRAINING_LOSSSCALER_H

#include "runtime/core/LossScaleState.h"

#include <cstdint>

namespace pp::runtime {

struct LossScalerOptions {
  /// The first scale (GradScaler's init_scale).
  double initialScale = 65536.0;
  /// Clean steps in a row after which the scale doubles (growth_interval).
  int64_t growthInterval = 2000;
};

class LossScaler {
public:
  /// Growth and backoff factors, as GradScaler's defaults.
  static constexpr double kGrowthFactor = 2.0, kBackoffFactor = 0.5;

  explicit LossScaler(const LossScalerOptions &options)
      : options(options), current{options.initialScale, 0} {}

  /// The scale of the step about to run.
  double scale() const { return current.scale; }
  const LossScaleState &state() const { return current; }
  /// Continues from a checkpoint's state.
  void restore(const LossScaleState &state) { current = state; }

  /// Records the step just run: `finite` when its gradients were all
  /// finite. Returns whether the step is taken (true) or skipped.
  bool update(bool finite);

private:
  LossScalerOptions options;
  LossScaleState current;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_LOSSSCALER_H
