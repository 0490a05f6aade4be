//===- CpuStateKernels.cpp - the host's work on training state ------------===//
//
// Each kernel is one loop over contiguous floats with its constants
// hoisted; the file is compiled with -fno-math-errno so that std::sqrt is
// the sqrtps instruction and the AdamW loop vectorizes (built for AVX-512,
// AVX2 and baseline x86-64: PP_CPU_CLONES). The host's queues run work at
// once: these split the elementwise loops into chunks on the runtime's
// thread pool (--threads), each element computed alone, so the bits do not
// depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/StateKernels.h"

#include "runtime/device/Device.h"
#include "runtime/kernels/CpuKernelLoops.h"

#include <cmath>

namespace pp::runtime {
namespace {

/// torch.optim.SGD over n elements: weight decay joins the gradient; the
/// momentum buffer (null without momentum) starts as the first (decayed)
/// gradient.
PP_CPU_CLONES void stepSgd(float *__restrict values,
                           const float *__restrict gradients,
                           float *__restrict momentumBuffer, int64_t n,
                           float lr, float weightDecay, float momentum,
                           bool firstStep) {
  if (!momentumBuffer) {
    for (int64_t i = 0; i < n; ++i)
      values[i] -= lr * (gradients[i] + weightDecay * values[i]);
    return;
  }
  if (firstStep) {
    for (int64_t i = 0; i < n; ++i) {
      momentumBuffer[i] = gradients[i] + weightDecay * values[i];
      values[i] -= lr * momentumBuffer[i];
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    momentumBuffer[i] = momentum * momentumBuffer[i] +
                        (gradients[i] + weightDecay * values[i]);
    values[i] -= lr * momentumBuffer[i];
  }
}

/// torch.optim.AdamW over n elements at step `steps` (from 1).
PP_CPU_CLONES void stepAdamW(const OptimizerOptions &options,
                             float *__restrict values,
                             const float *__restrict gradients,
                             float *__restrict first, float *__restrict second,
                             int64_t n, float lr, float weightDecay,
                             int64_t steps) {
  float correction1 = 1.0f - std::pow(options.beta1, steps);
  float correction2 = 1.0f - std::pow(options.beta2, steps);
  float shrink = 1.0f - lr * weightDecay;
  float beta1 = options.beta1, beta2 = options.beta2;
  float take1 = 1.0f - beta1, take2 = 1.0f - beta2;
  float epsilon = options.epsilon;
  for (int64_t i = 0; i < n; ++i) {
    values[i] *= shrink;
    first[i] = beta1 * first[i] + take1 * gradients[i];
    second[i] = beta2 * second[i] + take2 * gradients[i] * gradients[i];
    float mHat = first[i] / correction1;
    float vHat = second[i] / correction2;
    values[i] -= lr * mHat / (std::sqrt(vHat) + epsilon);
  }
}

class CpuStateKernels : public StateKernels {
public:
  void accumulate(Queue &, float *sum, const float *addend,
                  int64_t n) override {
    cpu::fillElements(sum, n, [&](int64_t i) { return sum[i] + addend[i]; });
  }

  void accumulateScalar(Queue &, double *sum, const float *value) override {
    *sum += *value;
  }

  void scale(Queue &, float *values, int64_t n, float factor) override {
    cpu::fillElements(values, n, [&](int64_t i) { return values[i] * factor; });
  }

  void roundToBFloat16(Queue &, BFloat16 *rounded, const float *values,
                       int64_t n) override {
    for (int64_t i = 0; i < n; ++i)
      rounded[i] = toBFloat16(values[i]);
  }

  void widenBFloat16(Queue &, float *values, const BFloat16 *rounded,
                     int64_t n) override {
    for (int64_t i = 0; i < n; ++i)
      values[i] = toFloat(rounded[i]);
  }

  std::vector<double>
  sumSquares(Queue &, const float *values,
             const std::vector<SquaredRange> &ranges) override {
    std::vector<double> sums;
    sums.reserve(ranges.size());
    for (const SquaredRange &range : ranges) {
      double sum = range.initial;
      for (int64_t i = range.begin; i < range.end; ++i)
        sum += static_cast<double>(values[i]) * values[i];
      sums.push_back(sum);
    }
    return sums;
  }

  void stepOptimizer(Queue &, const OptimizerOptions &options,
                     const std::vector<SegmentStep> &segments, float *values,
                     const float *gradients, const std::vector<float *> &state,
                     float learningRate) override {
    // Each element's update is its own: chunks of a segment on the thread
    // pool give the same bits at any thread count.
    for (const SegmentStep &segment : segments)
      cpu::forEachChunk(
          segment.end - segment.begin, 1, [&](int64_t first, int64_t last) {
            int64_t begin = segment.begin + first, n = last - first;
            if (options.kind == "sgd")
              stepSgd(values + begin, gradients + begin,
                      state.empty() ? nullptr : state[0] + begin, n,
                      learningRate, segment.weightDecay, options.momentum,
                      segment.step == 1);
            else
              stepAdamW(options, values + begin, gradients + begin,
                        state[0] + begin, state[1] + begin, n, learningRate,
                        segment.weightDecay, segment.step);
          });
  }
};

} // namespace

StateKernels &cpuStateKernels() {
  static CpuStateKernels kernels;
  return kernels;
}

StateDevice hostStateDevice() {
  return {hostDevice().defaultQueue(), cpuStateKernels()};
}

} // namespace pp::runtime
