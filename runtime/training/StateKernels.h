//===- StateKernels.h - work on a rank's training state ---------*- C++ -*-===//
//
// What the trainer computes on its flat buffers (FlatParameters.h) where
// they live, queued on a queue of that device: gradient sums over
// microbatches, their rounding to bf16 and back (a bf16 data-parallel
// reduction), the clip, the squares of the global gradient norm, the
// loss over a step and the optimizer's update, one pass over a flat buffer
// for all of its parameters. The host's implementation
// (cpuStateKernels) runs each as one vectorizable loop on the caller's
// thread; a GPU's (runtime/cuda/CudaStateKernels.cu) as kernels on the
// queue's stream. Every element's arithmetic is torch.optim's formula,
// written in one order, so the result does not depend on how elements are
// grouped.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_STATEKERNELS_H
#define PP_RUNTIME_TRAINING_STATEKERNELS_H

#include "runtime/core/ElementTypes.h"
#include "runtime/device/Queue.h"
#include "runtime/training/OptimizerOptions.h"

#include <cstdint>
#include <vector>

namespace pp::runtime {

/// The elements [begin, end) of a flat buffer whose squares add up to one
/// sum, starting from `initial` (a running sum that an earlier share of
/// the buffer passes on).
struct SquaredRange {
  int64_t begin = 0, end = 0;
  double initial = 0;
};

/// One parameter's segment [begin, end) of the flat buffers the optimizer
/// steps, with its weight decay and the step it takes now (from 1).
struct SegmentStep {
  int64_t begin = 0, end = 0;
  float weightDecay = 0;
  int64_t step = 1;
};

class StateKernels {
public:
  virtual ~StateKernels() = default;

  /// `sum[i] += addend[i]` for i < n, on `queue`.
  virtual void accumulate(Queue &queue, float *sum, const float *addend,
                          int64_t n) = 0;
  /// `*sum += *value` in double (a microbatch's loss into the step's), on
  /// `queue`.
  virtual void accumulateScalar(Queue &queue, double *sum,
                                const float *value) = 0;
  /// `values[i] *= factor` for i < n, on `queue`.
  virtual void scale(Queue &queue, float *values, int64_t n,
                     float factor) = 0;
  /// `rounded[i] = toBFloat16(values[i])` (to nearest even) for i < n, on
  /// `queue`: a gradient as a bf16 reduction carries it.
  virtual void roundToBFloat16(Queue &queue, BFloat16 *rounded,
                               const float *values, int64_t n) = 0;
  /// `values[i] = toFloat(rounded[i])` (exact) for i < n, on `queue`.
  virtual void widenBFloat16(Queue &queue, float *values,
                             const BFloat16 *rounded, int64_t n) = 0;
  /// Per range of `values`, its `initial` plus the sum of its elements'
  /// squares, in double: on the host added in element order; on a GPU in
  /// a fixed order of its own (the same bits run after run). Waits for
  /// `queue` and returns the sums to the host: the step's scalars.
  virtual std::vector<double>
  sumSquares(Queue &queue, const float *values,
             const std::vector<SquaredRange> &ranges) = 0;
  /// One step of `options`' optimizer over each segment of the flat
  /// buffers `values` and `gradients` at `learningRate`, with the state
  /// buffers `state` (optimizerBufferNames(options) order, laid out as the
  /// values); SGD's momentum buffer starts as a segment's first gradient
  /// (step 1). The segments are in ascending order and do not overlap;
  /// positions between them are left alone.
  virtual void stepOptimizer(Queue &queue, const OptimizerOptions &options,
                             const std::vector<SegmentStep> &segments,
                             float *values, const float *gradients,
                             const std::vector<float *> &state,
                             float learningRate) = 0;
};

/// The host's StateKernels.
StateKernels &cpuStateKernels();

/// Where a rank's training state lives: a queue of its device, on which
/// the work on the state runs, and that device's kernels.
struct StateDevice {
  Queue &queue;
  StateKernels &kernels;
};

/// The host's default queue and kernels.
StateDevice hostStateDevice();

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_STATEKERNELS_H
