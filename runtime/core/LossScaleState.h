//===- LossScaleState.h - where an fp16 loss scaler stands ------*- C++ -*-===//
//
// The state of the dynamic loss scaling of an fp16 run (training/
// LossScaler.h) that a checkpoint keeps (state.json's "loss_scale").
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CORE_LOSSSCALESTATE_H
#define PP_RUNTIME_CORE_LOSSSCALESTATE_H

#include <cstdint>

namespace pp::runtime {

struct LossScaleState {
  /// The scale the next step runs with: a power of two.
  double scale = 65536.0;
  /// Clean steps since the scale last changed (GradScaler's growth
  /// tracker).
  int64_t cleanSteps = 0;
  /// Steps skipped in a row since the last taken one.
  int64_t skippedSteps = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_CORE_LOSSSCALESTATE_H
