//===- LossSum.h - a batch's loss where the stages run ----------*- C++ -*-===//
//
// The last stages' loss results add up where they are computed, so that a
// GPU step fetches one scalar at its end rather than one per microbatch.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_LOSSSUM_H
#define PP_RUNTIME_TRAINING_LOSSSUM_H

#include "runtime/training/Backend.h"
#include "runtime/training/HostTensors.h"

namespace pp::runtime {

/// A batch's loss: its microbatches' losses summed in double where the
/// stage functions run, copied to the host once, at the batch's end.
class LossSum {
public:
  /// A zero sum on `backend`'s device.
  explicit LossSum(Backend &backend);

  /// Adds a microbatch's loss, an f32 scalar where the stage functions
  /// run.
  void add(pp_tensor *loss);
  /// The sum so far, on the host.
  double read();

private:
  Backend &backend;
  TensorPtr host;
  Placed placed;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_LOSSSUM_H
