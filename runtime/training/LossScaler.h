//===- LossScaler.h - dynamic loss scaling for fp16 training ----*- C++ -*-===//
//
// fp16 has 5 exponent bits: gradients below 2^-24 flush to zero. The loss's
// gradient seed is multiplied by a scale S so that they stay representable,
// and the update divides the f32 gradients by S again (S is a power of two:
// exact). A step whose gradients overflowed (the global gradient norm is
// not finite) is skipped and S halves; after `growthInterval` clean steps
// in a row S doubles. These are torch.amp.GradScaler's rules and defaults,
// but for one: GradScaler halves S forever, until it is 0 in f32 and the
// zero gradients of loss x 0 look clean. Here a backoff below
// kMinimumScale stops the run instead (exhausted()).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_LOSSSCALER_H
#define PP_RUNTIME_TRAINING_LOSSSCALER_H

#include "runtime/core/LossScaleState.h"

#include <cstdint>
#include <string>

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
  /// The smallest scale worth a step: 2^-24, f16's smallest subnormal.
  /// Below it the loss's gradient with respect to its f16 input, at most
  /// S in magnitude per element for cross entropy (S times one over the
  /// token count), rounds to zero: the backward computes nothing. A run
  /// reaching 2^-24 from the default 2^16 has skipped 40 steps in a row:
  /// its forward is not finite, which no scale mends.
  static constexpr double kMinimumScale = 0x1p-24;

  explicit LossScaler(const LossScalerOptions &options)
      : options(options), current{options.initialScale, 0} {}

  /// The scale of the step about to run.
  double scale() const { return current.scale; }
  const LossScaleState &state() const { return current; }
  /// Continues from a checkpoint's state.
  void restore(const LossScaleState &state) { current = state; }

  /// Records the step just run: `finite` when its gradients were all
  /// finite. Returns whether the step is taken (true) or skipped. A
  /// skipped step at a scale that cannot halve without going below
  /// kMinimumScale keeps the scale and makes the scaler exhausted.
  bool update(bool finite);
  /// Whether the last step overflowed at the smallest scale: the run must
  /// stop (exhaustedMessage).
  bool exhausted() const { return stopped; }

private:
  LossScalerOptions options;
  LossScaleState current;
  bool stopped = false;
};

/// Why an fp16 run stops after step `step` (counted from 1), whose scaler
/// is exhausted in state `state`: what happened, the likely causes and
/// what to try.
std::string exhaustedMessage(int64_t step, const LossScaleState &state);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_LOSSSCALER_H
