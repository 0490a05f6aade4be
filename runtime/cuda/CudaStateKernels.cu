//===- CudaStateKernels.cu - a GPU's work on training state ---------------===//
//
// The kernels of StateKernels on device memory, on the given queue's
// stream. The optimizer is one kernel per flat buffer: each thread finds
// its element's segment (parameter) in a table of segments and applies
// torch.optim's formula as the host does (no FMA contraction: the library
// is compiled with --fmad=false; IEEE division and square root), with the
// bias corrections computed once on the host as the host's loop does: an
// element's update is the host's bits. The sums of squares are one block
// per range, each thread adding a strided slice in order and the block
// adding the threads' sums in a fixed tree: deterministic, without
// atomics. Tables of ranges and segments travel to the GPU in a buffer
// (a few bytes per parameter), the sums back as the step's scalars.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaStateKernels.h"

#include "runtime/cuda/CudaBlockSum.h"
#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/device/Buffer.h"

#include <cuda_runtime.h>

#include <cmath>
#include <string>
#include <vector>

namespace pp::runtime {
namespace {

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

void checkLaunch(const char *kernel) {
  check(cudaGetLastError(), std::string("launching ") + kernel);
}

__global__ void accumulateKernel(float *sum, const float *addend, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    sum[i] += addend[i];
}

__global__ void accumulateScalarKernel(double *sum, const float *value) {
  *sum += *value;
}

__global__ void scaleKernel(float *values, int64_t n, float factor) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    values[i] *= factor;
}

__global__ void roundToBFloat16Kernel(BFloat16 *rounded, const float *values,
                                      int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    rounded[i] = toBFloat16(values[i]);
}

__global__ void widenBFloat16Kernel(float *values, const BFloat16 *rounded,
                                    int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    values[i] = toFloat(rounded[i]);
}

/// Block b sums the squares of range b in double, from its initial value.
__global__ void sumSquaresKernel(const float *values,
                                 const SquaredRange *ranges, double *sums) {
  SquaredRange range = ranges[blockIdx.x];
  double sum = 0;
  for (int64_t i = range.begin + threadIdx.x; i < range.end; i += kThreads)
    sum += static_cast<double>(values[i]) * values[i];
  sum = cuda::blockSum<kThreads>(sum);
  if (threadIdx.x == 0)
    sums[blockIdx.x] = range.initial + sum;
}

/// A segment as the optimizer kernel reads it: its elements, weight decay
/// and step, and AdamW's bias corrections for that step.
struct DeviceSegment {
  int64_t begin, end;
  float weightDecay;
  int step;
  float correction1, correction2;
};

/// The settings every segment shares.
struct OptimizerConstants {
  bool adamw;
  float learningRate, momentum, beta1, beta2, epsilon;
};

/// The segment holding position i: the last whose begin is at most i.
__device__ const DeviceSegment &segmentOf(const DeviceSegment *segments,
                                          int count, int64_t i) {
  int low = 0, high = count - 1;
  while (low < high) {
    int middle = (low + high + 1) / 2;
    if (segments[middle].begin <= i)
      low = middle;
    else
      high = middle - 1;
  }
  return segments[low];
}

/// torch.optim.SGD and AdamW on element i, as CpuStateKernels' loops.
__global__ void optimizerKernel(OptimizerConstants c,
                                const DeviceSegment *__restrict__ segments,
                                int count, int64_t first, int64_t last,
                                float *__restrict__ values,
                                const float *__restrict__ gradients,
                                float *__restrict__ state0,
                                float *__restrict__ state1) {
  int64_t i =
      first + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= last)
    return;
  const DeviceSegment &segment = segmentOf(segments, count, i);
  if (i >= segment.end)
    return;
  float lr = c.learningRate, g = gradients[i];
  if (!c.adamw) {
    if (!state0) {
      values[i] -= lr * (g + segment.weightDecay * values[i]);
      return;
    }
    float decayed = g + segment.weightDecay * values[i];
    state0[i] = segment.step == 1 ? decayed : c.momentum * state0[i] + decayed;
    values[i] -= lr * state0[i];
    return;
  }
  values[i] *= 1.0f - lr * segment.weightDecay;
  state0[i] = c.beta1 * state0[i] + (1.0f - c.beta1) * g;
  state1[i] = c.beta2 * state1[i] + (1.0f - c.beta2) * g * g;
  float mHat = state0[i] / segment.correction1;
  float vHat = state1[i] / segment.correction2;
  values[i] -= lr * mHat / (sqrtf(vHat) + c.epsilon);
}

/// `table` copied to a buffer of `queue`'s device, in its order.
template <typename T>
Buffer upload(Queue &queue, const std::vector<T> &table) {
  size_t bytes = table.size() * sizeof(T);
  Buffer buffer = Buffer::allocate(queue, bytes);
  queue.copy(buffer.data(), table.data(), bytes);
  return buffer;
}

class CudaStateKernels : public StateKernels {
public:
  void accumulate(Queue &queue, float *sum, const float *addend,
                  int64_t n) override {
    if (n == 0)
      return;
    accumulateKernel<<<blocksFor(n), kThreads, 0, streamOf(queue)>>>(
        sum, addend, n);
    checkLaunch("the gradient accumulation");
  }

  void accumulateScalar(Queue &queue, double *sum,
                        const float *value) override {
    accumulateScalarKernel<<<1, 1, 0, streamOf(queue)>>>(sum, value);
    checkLaunch("the loss accumulation");
  }

  void scale(Queue &queue, float *values, int64_t n, float factor) override {
    if (n == 0)
      return;
    scaleKernel<<<blocksFor(n), kThreads, 0, streamOf(queue)>>>(values, n,
                                                                factor);
    checkLaunch("the gradient clip");
  }

  void roundToBFloat16(Queue &queue, BFloat16 *rounded, const float *values,
                       int64_t n) override {
    if (n == 0)
      return;
    roundToBFloat16Kernel<<<blocksFor(n), kThreads, 0, streamOf(queue)>>>(
        rounded, values, n);
    checkLaunch("the gradients' rounding to bf16");
  }

  void widenBFloat16(Queue &queue, float *values, const BFloat16 *rounded,
                     int64_t n) override {
    if (n == 0)
      return;
    widenBFloat16Kernel<<<blocksFor(n), kThreads, 0, streamOf(queue)>>>(
        values, rounded, n);
    checkLaunch("the gradients' widening from bf16");
  }

  std::vector<double>
  sumSquares(Queue &queue, const float *values,
             const std::vector<SquaredRange> &ranges) override {
    std::vector<double> sums(ranges.size());
    if (ranges.empty())
      return sums;
    Buffer table = upload(queue, ranges);
    Buffer results = Buffer::allocate(queue, sums.size() * sizeof(double));
    sumSquaresKernel<<<static_cast<unsigned>(ranges.size()), kThreads, 0,
                       streamOf(queue)>>>(
        values, static_cast<const SquaredRange *>(table.data()),
        static_cast<double *>(results.data()));
    checkLaunch("the gradient norm's squares");
    queue.copy(sums.data(), results.data(), sums.size() * sizeof(double));
    queue.synchronize();
    return sums;
  }

  void stepOptimizer(Queue &queue, const OptimizerOptions &options,
                     const std::vector<SegmentStep> &segments, float *values,
                     const float *gradients, const std::vector<float *> &state,
                     float learningRate) override {
    if (segments.empty())
      return;
    int64_t first = segments.front().begin, last = segments.back().end;
    if (last == first)
      return;
    std::vector<DeviceSegment> table;
    table.reserve(segments.size());
    for (const SegmentStep &segment : segments) {
      // The host loop's expressions, so that the corrections are its bits.
      float correction1 = 1.0f - std::pow(options.beta1, segment.step);
      float correction2 = 1.0f - std::pow(options.beta2, segment.step);
      table.push_back({segment.begin, segment.end, segment.weightDecay,
                       static_cast<int>(segment.step), correction1,
                       correction2});
    }
    OptimizerConstants constants{options.kind != "sgd", learningRate,
                                 options.momentum,        options.beta1,
                                 options.beta2,           options.epsilon};
    Buffer onDevice = upload(queue, table);
    optimizerKernel<<<blocksFor(last - first), kThreads, 0,
                      streamOf(queue)>>>(
        constants, static_cast<const DeviceSegment *>(onDevice.data()),
        static_cast<int>(table.size()), first, last, values, gradients,
        state.empty() ? nullptr : state[0],
        state.size() > 1 ? state[1] : nullptr);
    checkLaunch("the optimizer");
  }
};

} // namespace

StateKernels &cudaStateKernels() {
  static CudaStateKernels kernels;
  return kernels;
}

} // namespace pp::runtime
