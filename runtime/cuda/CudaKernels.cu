//===- CudaKernels.cu - device kernels for generated stage code -----------===//
//
// Same semantics as runtime/CpuKernels.cpp on device tensors. Reductions
// use one fixed-size block and no atomics, so results are deterministic.
// Each compute kernel is written once over the element type T of its float
// tensors (f32, bf16 or f16: FloatElements.h): it reads every element as a
// float, computes in float, or in double where it accumulates, and rounds
// each result once to T, so an f32 kernel keeps its bits and a bf16 or f16
// kernel gives the f32 kernel's result on the widened operands, rounded.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaBlockSum.h"
#include "runtime/cuda/CudaCollectiveKernels.h"
#include "runtime/cuda/CudaCrossEntropyKernels.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaFrame.h"
#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/CudaLineKernels.h"
#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/cuda/pp_runtime_cuda.h"

#include "runtime/core/Error.h"
#include "runtime/core/Shapes.h"
#include "runtime/device/Queue.h"
#include "runtime/kernels/CollectivePlans.h"
#include "runtime/kernels/CrossEntropyLabels.h"
#include "runtime/kernels/DataMovement.h"
#include "runtime/kernels/DropoutMask.h"
#include "runtime/kernels/ElementwiseFormulas.h"
#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/FloatOperands.h"
#include "runtime/kernels/Frame.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/kernels/ReductionPlans.h"

#include <cuda_runtime.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace pp::runtime;
using namespace pp::runtime::cuda;

namespace {

constexpr int kMaxRank = 8;

/// Records a failed launch; true when the last launch succeeded.
bool checkLaunch(pp_frame *frame, const char *kernel) {
  cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess)
    return true;
  failFrame(frame, std::string(kernel) + ": " + cudaGetErrorString(error));
  return false;
}

/// The elements of device tensor `tensor`, of type T.
template <typename T> T *elementsOf(pp_tensor *tensor) {
  return static_cast<T *>(pp_tensor_data(tensor));
}

/// Output shape and the strides of each of N operands of a broadcast
/// elementwise op.
template <int N> struct BroadcastMap {
  int rank;
  int64_t shape[kMaxRank];
  int64_t strides[N][kMaxRank];

  /// The element offsets in each operand of output element `i`.
  __device__ void offsetsOf(int64_t i, int64_t (&offsets)[N]) const {
    for (int t = 0; t < N; ++t)
      offsets[t] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t coordinate = i % shape[d];
      i /= shape[d];
      for (int t = 0; t < N; ++t)
        offsets[t] += coordinate * strides[t][d];
    }
  }
};

// The functors the elementwise kernels apply: each calls its op's formula
// in ElementwiseFormulas.h, as the CPU kernels and fused code do.
#define PP_UNARY_FUNCTOR(Name, formula)                                        \
  struct Name {                                                                \
    __device__ float operator()(float x) const {                              \
      return elementwise::formula(x);                                          \
    }                                                                          \
  };
#define PP_BINARY_FUNCTOR(Name, formula)                                       \
  struct Name {                                                                \
    __device__ float operator()(float a, float b) const {                     \
      return elementwise::formula(a, b);                                       \
    }                                                                          \
  };
#define PP_OPERAND_GRAD_FUNCTOR(Name, formula)                                 \
  struct Name {                                                                \
    __device__ float operator()(float g, float a, float b,                    \
                                int64_t operand) const {                       \
      return elementwise::formula(g, a, b, operand);                           \
    }                                                                          \
  };
PP_UNARY_FUNCTOR(Neg, neg)
PP_UNARY_FUNCTOR(Relu, relu)
PP_UNARY_FUNCTOR(Sigmoid, sigmoid)
PP_UNARY_FUNCTOR(Tanh, tanh)
PP_UNARY_FUNCTOR(Exp, exp)
PP_UNARY_FUNCTOR(Log, log)
PP_UNARY_FUNCTOR(Sqrt, sqrt)
PP_UNARY_FUNCTOR(Rsqrt, rsqrt)
PP_UNARY_FUNCTOR(Erf, erf)
PP_BINARY_FUNCTOR(Add, add)
PP_BINARY_FUNCTOR(Sub, sub)
PP_BINARY_FUNCTOR(Mul, mul)
PP_BINARY_FUNCTOR(Div, div)
PP_BINARY_FUNCTOR(Pow, pow)
PP_BINARY_FUNCTOR(Maximum, maximum)
PP_BINARY_FUNCTOR(Minimum, minimum)
PP_BINARY_FUNCTOR(ReluGrad, relu_grad)
PP_BINARY_FUNCTOR(SigmoidGrad, sigmoid_grad)
PP_BINARY_FUNCTOR(TanhGrad, tanh_grad)
PP_BINARY_FUNCTOR(SqrtGrad, sqrt_grad)
PP_BINARY_FUNCTOR(RsqrtGrad, rsqrt_grad)
PP_BINARY_FUNCTOR(ErfGrad, erf_grad)
PP_OPERAND_GRAD_FUNCTOR(PowGrad, pow_grad)
PP_OPERAND_GRAD_FUNCTOR(MaximumGrad, maximum_grad)
PP_OPERAND_GRAD_FUNCTOR(MinimumGrad, minimum_grad)
#undef PP_UNARY_FUNCTOR
#undef PP_BINARY_FUNCTOR
#undef PP_OPERAND_GRAD_FUNCTOR
struct Gelu {
  int approximate;
  __device__ float operator()(float x) const {
    return elementwise::gelu(x, approximate);
  }
};
struct GeluGrad {
  int approximate;
  __device__ float operator()(float g, float x) const {
    return elementwise::gelu_grad(g, x, approximate);
  }
};

template <typename T, typename F>
__global__ void unaryKernel(const T *in, T *out, int64_t n, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    out[i] = storeFloat<T>(f(loadFloat(in[i])));
}

template <typename T, typename F>
__global__ void binaryKernel(const T *a, const T *b, T *out, int64_t n,
                             BroadcastMap<2> map, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  int64_t at[2];
  map.offsetsOf(i, at);
  out[i] = storeFloat<T>(f(loadFloat(a[at[0]]), loadFloat(b[at[1]])));
}

/// `f(grad, lhs, rhs, operand)` with the three broadcast to the result.
template <typename T, typename F>
__global__ void operandGradKernel(const T *g, const T *a, const T *b, T *out,
                                  int64_t n, BroadcastMap<3> map,
                                  int64_t operand, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  int64_t at[3];
  map.offsetsOf(i, at);
  out[i] = storeFloat<T>(f(loadFloat(g[at[0]]), loadFloat(a[at[1]]),
                           loadFloat(b[at[2]]), operand));
}

/// Each element takes the gradient of its group (map.strides[0]).
template <typename T>
__global__ void reduceSumGradKernel(const T *g, T *out, int64_t n,
                                    BroadcastMap<1> map) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  int64_t at[1];
  map.offsetsOf(i, at);
  out[i] = g[at[0]];
}

/// `T` moves elements of the values' size (visitBits).
template <typename T>
__global__ void whereKernel(const uint8_t *condition, const T *onTrue,
                            const T *onFalse, T *out, int64_t n,
                            BroadcastMap<3> map) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  int64_t at[3];
  map.offsetsOf(i, at);
  out[i] = condition[at[0]] ? onTrue[at[1]] : onFalse[at[2]];
}

template <typename From, typename To>
__global__ void castKernel(const From *in, To *out, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    out[i] = castElement<To>(in[i]);
}

/// One thread per element of the [outer, count, inner] result, `T` of the
/// data's element size; `rows` holds the checked, non-negative indices.
template <typename T>
__global__ void gatherKernel(const T *data, const int64_t *rows, T *out,
                             int64_t n, AxisLayout layout, int64_t count) {
  int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= n)
    return;
  int64_t i = e % layout.inner, j = (e / layout.inner) % count;
  int64_t o = e / (layout.inner * count);
  out[e] = data[(o * layout.size + rows[j]) * layout.inner + i];
}

/// One thread per element; `T` of the elements' size (visitBits), whose
/// zero has all bits clear.
template <typename T>
__global__ void triluKernel(const T *in, T *out, int64_t n, MatrixStack stack,
                            int64_t diagonal, int upper) {
  int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= n)
    return;
  int64_t column = e % stack.columns, row = (e / stack.columns) % stack.rows;
  out[e] = triluKeeps(row, column, diagonal, upper) ? in[e] : T(0);
}

/// One thread per element of the [outer, size, inner] result: it sums, in
/// double and in index order, the grad slices whose index chose its row
/// (IndexGroups), so the result needs no atomics and is deterministic.
template <typename T>
__global__ void gatherGradKernel(const T *grad, const int64_t *offsets,
                                 const int64_t *positions, T *out, int64_t n,
                                 AxisLayout layout, int64_t count,
                                 bool addToOut) {
  int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= n)
    return;
  int64_t i = e % layout.inner, r = (e / layout.inner) % layout.size;
  int64_t o = e / (layout.inner * layout.size);
  // Adding a row that no index names would add zeros.
  if (addToOut && offsets[r] == offsets[r + 1])
    return;
  double sum = 0;
  for (int64_t k = offsets[r]; k < offsets[r + 1]; ++k)
    sum += loadFloat(grad[(o * count + positions[k]) * layout.inner + i]);
  float value = static_cast<float>(sum);
  out[e] = storeFloat<T>(addToOut ? loadFloat(out[e]) + value : value);
}

/// `T` of the values' size (visitBits).
template <typename T> __global__ void fillKernel(T *out, int64_t n, T value) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    out[i] = value;
}

/// How each output element of sum_to gathers its inputs.
struct SumToMap {
  int rank; // of the input
  int64_t inputShape[kMaxRank];
  int64_t inputStrides[kMaxRank];
  int64_t outputStrides[kMaxRank]; // 0 along summed dimensions
  int64_t reduced;                 // inputs per output element
};

/// The input offset of the `r`-th (in row-major order) of the inputs that
/// land on output element `o`.
__device__ int64_t sumToInput(const SumToMap &map, int64_t o, int64_t r) {
  int64_t restOut = o, restReduced = r, offset = 0;
  for (int d = map.rank - 1; d >= 0; --d) {
    int64_t coordinate;
    if (map.outputStrides[d] == 0) {
      coordinate = restReduced % map.inputShape[d];
      restReduced /= map.inputShape[d];
    } else {
      coordinate = restOut % map.inputShape[d];
      restOut /= map.inputShape[d];
    }
    offset += coordinate * map.inputStrides[d];
  }
  return offset;
}

/// One thread per output element; `scale` multiplies the double sum
/// (1 for sum_to and reduce_sum, 1 / count for reduce_mean).
template <typename T>
__global__ void sumToKernel(const T *in, T *out, int64_t outputs, SumToMap map,
                            double scale) {
  int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= outputs)
    return;
  double sum = 0;
  for (int64_t r = 0; r < map.reduced; ++r)
    sum += loadFloat(in[sumToInput(map, o, r)]);
  out[o] = storeFloat<T>(static_cast<float>(sum * scale));
}

/// One thread per group: its maximum, a NaN winning (PyTorch's amax).
template <typename T>
__global__ void reduceMaxKernel(const T *in, T *out, int64_t groups,
                                SumToMap map) {
  int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= groups)
    return;
  float max = -INFINITY;
  for (int64_t r = 0; r < map.reduced; ++r) {
    float value = loadFloat(in[sumToInput(map, o, r)]);
    if (value > max || value != value)
      max = value;
  }
  out[o] = storeFloat<T>(max);
}

/// One thread per group: its gradient split evenly among the elements equal
/// to its maximum, as mask * (grad / ties) (NaN when none is).
template <typename T>
__global__ void reduceMaxGradKernel(const T *g, const T *x, const T *y, T *out,
                                    int64_t groups, SumToMap map) {
  int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= groups)
    return;
  float max = loadFloat(y[o]), ties = 0;
  for (int64_t r = 0; r < map.reduced; ++r)
    ties += loadFloat(x[sumToInput(map, o, r)]) == max;
  float share = loadFloat(g[o]) / ties;
  for (int64_t r = 0; r < map.reduced; ++r) {
    int64_t at = sumToInput(map, o, r);
    out[at] =
        storeFloat<T>(static_cast<float>(loadFloat(x[at]) == max) * share);
  }
}

/// log_softmax's gradient (a line of linesKernel, CudaLineKernels.h).
struct LogSoftmaxGradLine {
  template <typename T>
  __device__ void operator()(int64_t start, AxisLayout layout, T *out,
                             const T *g, const T *y) const {
    double sum = 0;
    for (int64_t k = 0; k < layout.size; ++k)
      sum += loadFloat(g[start + k * layout.inner]);
    for (int64_t k = 0; k < layout.size; ++k) {
      int64_t at = start + k * layout.inner;
      out[at] = storeFloat<T>(static_cast<float>(
          loadFloat(g[at]) - exp(static_cast<double>(loadFloat(y[at]))) * sum));
    }
  }
};

/// The mean and 1 / sqrt(variance + epsilon) of `size` values (biased
/// variance, two passes in double), as the CPU kernels compute them.
template <typename T>
__device__ void rowStatistics(const T *row, int64_t size, double epsilon,
                              double &mean, double &rstd) {
  double sum = 0, squares = 0;
  for (int64_t j = 0; j < size; ++j)
    sum += loadFloat(row[j]);
  mean = sum / size;
  for (int64_t j = 0; j < size; ++j)
    squares += (loadFloat(row[j]) - mean) * (loadFloat(row[j]) - mean);
  rstd = 1.0 / sqrt(squares / size + epsilon);
}

/// One thread per row; `w` and `b` may be null.
template <typename T>
__global__ void layerNormKernel(const T *x, const T *w, const T *b, T *out,
                                LayerNormPlan plan, double epsilon) {
  int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= plan.rows)
    return;
  const T *row = x + r * plan.size;
  double mean, rstd;
  rowStatistics(row, plan.size, epsilon, mean, rstd);
  for (int64_t j = 0; j < plan.size; ++j) {
    double value = (loadFloat(row[j]) - mean) * rstd;
    if (w)
      value *= loadFloat(w[j]);
    if (b)
      value += loadFloat(b[j]);
    out[r * plan.size + j] = storeFloat<T>(static_cast<float>(value));
  }
}

/// One thread per row: the input gradient.
template <typename T>
__global__ void layerNormInputGradKernel(const T *g, const T *x, const T *w,
                                         T *out, LayerNormPlan plan,
                                         double epsilon) {
  int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= plan.rows)
    return;
  const T *row = x + r * plan.size, *gr = g + r * plan.size;
  double mean, rstd;
  rowStatistics(row, plan.size, epsilon, mean, rstd);
  double meanGw = 0, meanGwXhat = 0;
  for (int64_t j = 0; j < plan.size; ++j) {
    double gw = static_cast<double>(loadFloat(gr[j])) * loadFloat(w[j]);
    meanGw += gw;
    meanGwXhat += gw * ((loadFloat(row[j]) - mean) * rstd);
  }
  meanGw /= plan.size;
  meanGwXhat /= plan.size;
  for (int64_t j = 0; j < plan.size; ++j) {
    double xhat = (loadFloat(row[j]) - mean) * rstd;
    out[r * plan.size + j] = storeFloat<T>(static_cast<float>(
        rstd * (static_cast<double>(loadFloat(gr[j])) * loadFloat(w[j]) -
                meanGw - xhat * meanGwXhat)));
  }
}

/// One thread per feature: the weight gradient, with the rows' (mean, rstd)
/// pairs in `statistics`, or the bias gradient, with null `statistics`;
/// summed over the rows in row order.
template <typename T>
__global__ void layerNormFeatureGradKernel(const T *g, const T *x,
                                           const double *statistics, T *out,
                                           LayerNormPlan plan) {
  int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= plan.size)
    return;
  double sum = 0;
  for (int64_t r = 0; r < plan.rows; ++r) {
    double grad = loadFloat(g[r * plan.size + j]);
    sum += statistics
               ? grad * ((loadFloat(x[r * plan.size + j]) - statistics[2 * r]) *
                         statistics[2 * r + 1])
               : grad;
  }
  out[j] = storeFloat<T>(static_cast<float>(sum));
}

/// One thread per row: its mean and rstd at `statistics[2 r]`, `[2 r + 1]`.
template <typename T>
__global__ void layerNormStatisticsKernel(const T *x, double *statistics,
                                          LayerNormPlan plan, double epsilon) {
  int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= plan.rows)
    return;
  rowStatistics(x + r * plan.size, plan.size, epsilon, statistics[2 * r],
                statistics[2 * r + 1]);
}

/// A StridedCopy for the device.
struct StridedCopyMap {
  int rank;
  int64_t shape[kMaxRank];
  int64_t source[kMaxRank];
  int64_t dest[kMaxRank];
  int64_t sourceOffset, destOffset;
};

/// The source and destination offsets (in elements) of element `i` of the
/// copy `map`.
__device__ void copyOffsets(const StridedCopyMap &map, int64_t i,
                            int64_t &fromOffset, int64_t &toOffset) {
  int64_t rest = i;
  fromOffset = map.sourceOffset;
  toOffset = map.destOffset;
  for (int d = map.rank - 1; d >= 0; --d) {
    int64_t coordinate = rest % map.shape[d];
    rest /= map.shape[d];
    fromOffset += coordinate * map.source[d];
    toOffset += coordinate * map.dest[d];
  }
}

/// One thread per element; moves `elementSize` bytes.
__global__ void stridedCopyKernel(const char *from, char *to, int64_t n,
                                  StridedCopyMap map, int elementSize) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  int64_t fromOffset, toOffset;
  copyOffsets(map, i, fromOffset, toOffset);
  for (int b = 0; b < elementSize; ++b)
    to[toOffset * elementSize + b] = from[fromOffset * elementSize + b];
}

/// One thread per element of the copy `map` from one device's values: the
/// group's `devices` copies of that value, `stride` apart in `gathered`,
/// combined in group order (reduceInOrder) and rounded once to T.
template <typename T>
__global__ void reduceGatheredKernel(const T *gathered, T *out, int64_t n,
                                     StridedCopyMap map, int64_t devices,
                                     int64_t stride, int reduction) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  int64_t fromOffset, toOffset;
  copyOffsets(map, i, fromOffset, toOffset);
  out[toOffset] = storeFloat<T>(
      reduceInOrder(gathered + fromOffset, devices, stride, reduction));
}

template <typename T>
__global__ void mseLossKernel(const T *x, const T *t, T *out, int64_t n,
                              int reduction) {
  double local = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    double diff = static_cast<double>(loadFloat(x[i])) - loadFloat(t[i]);
    local += diff * diff;
  }
  double sum = blockSum<kThreads>(local);
  if (threadIdx.x == 0)
    out[0] = storeFloat<T>(
        static_cast<float>(reduction == 0 && n > 0 ? sum / n : sum));
}

template <typename T>
__global__ void mseLossNoneKernel(const T *x, const T *t, T *out, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  float diff = loadFloat(x[i]) - loadFloat(t[i]);
  out[i] = storeFloat<T>(diff * diff);
}

template <typename T>
__global__ void mseLossGradKernel(const T *g, const T *x, const T *t, T *out,
                                  int64_t n, int reduction) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  float scale = reduction == 0 && n > 0 ? 2.0f / n : 2.0f;
  out[i] = storeFloat<T>(scale * (loadFloat(x[i]) - loadFloat(t[i])) *
                         loadFloat(g[reduction == 2 ? i : 0]));
}

/// Element-wise dropout (DropoutMask.h).
template <typename T>
__global__ void dropoutKernel(const T *in, T *out, int64_t n,
                              DropoutMask mask) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    out[i] = storeFloat<T>(mask.apply(i, loadFloat(in[i])));
}

bool present(std::initializer_list<pp_tensor *> tensors) {
  for (pp_tensor *tensor : tensors)
    if (!tensor)
      return false;
  return true;
}

/// `result` when the last launch succeeded; else null, `result` destroyed.
pp_tensor *launched(pp_frame *frame, const char *kernel, pp_tensor *result) {
  if (checkLaunch(frame, kernel))
    return result;
  pp_tensor_destroy(result);
  return nullptr;
}

/// A new device tensor shaped like the first of `operands`, of the float
/// dtype they share (floatOperandsType), whose `n` elements
/// `launch(T(), out, n)` computes, `out` the result's elements (T *); null,
/// the error recorded, on failure.
template <typename Launch>
pp_tensor *perElement(pp_frame *frame, const char *kernel,
                      std::initializer_list<pp_tensor *> operands,
                      Launch launch) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, kernel, operands);
  pp_tensor *like = *operands.begin();
  pp_tensor *result =
      dtype ? newDeviceTensor(frame, *dtype, shapeOf(like)) : nullptr;
  int64_t n = result ? pp_tensor_numel(like) : 0;
  if (n == 0)
    return result;
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    launch(element, elementsOf<T>(result), n);
  });
  return launched(frame, kernel, result);
}

template <typename F>
pp_tensor *unary(pp_frame *frame, const char *kernel, pp_tensor *input, F f) {
  return perElement(
      frame, kernel, {input}, [&](auto element, auto *out, int64_t n) {
        using T = decltype(element);
        unaryKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
            elementsOf<T>(input), out, n, f);
      });
}

/// True when `shape` is within the CUDA kernels' rank limit; else false,
/// with the error recorded.
bool checkRank(pp_frame *frame, const char *kernel, const Shape &shape) {
  if (shape.size() <= kMaxRank)
    return true;
  failFrame(frame, std::string(kernel) + ": rank " +
                       std::to_string(shape.size()) +
                       " is above the CUDA kernels' limit of 8");
  return false;
}

/// The BroadcastMap of `operands` onto `shape`, their broadcast (at most
/// kMaxRank dimensions).
template <int N>
BroadcastMap<N> broadcastMap(std::initializer_list<pp_tensor *> operands,
                             const Shape &shape) {
  BroadcastMap<N> map{};
  map.rank = static_cast<int>(shape.size());
  for (int d = 0; d < map.rank; ++d)
    map.shape[d] = shape[d];
  int t = 0;
  for (pp_tensor *operand : operands) {
    Shape strides = broadcastStrides(shapeOf(operand), shape);
    for (int d = 0; d < map.rank; ++d)
      map.strides[t][d] = strides[d];
    ++t;
  }
  return map;
}

template <typename F>
pp_tensor *binary(pp_frame *frame, const char *kernel, pp_tensor *lhs,
                  pp_tensor *rhs, F f) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, kernel, {lhs, rhs});
  std::optional<Shape> shape =
      dtype ? broadcastOperands(frame, kernel, {lhs, rhs}) : std::nullopt;
  if (!shape || !checkRank(frame, kernel, *shape))
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, *dtype, *shape);
  int64_t n = numElements(*shape);
  if (!result || n == 0)
    return result;
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    binaryKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        elementsOf<T>(lhs), elementsOf<T>(rhs), elementsOf<T>(result), n,
        broadcastMap<2>({lhs, rhs}, *shape), f);
  });
  return launched(frame, kernel, result);
}

/// `line` (linesKernel) over the lines along `axis` of `input` and of the
/// `others` shaped like it, one thread per line, into a new tensor of its
/// shape and float dtype, which the others share; null, the error
/// recorded, on failure.
template <typename Line, typename... Others>
pp_tensor *overLines(pp_frame *frame, const char *kernel, int64_t axis,
                     Line line, pp_tensor *input, Others *...others) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, kernel, {input, others...});
  if (!dtype)
    return nullptr;
  Shape shape = shapeOf(input);
  std::string error;
  std::optional<AxisLayout> layout = axisLayout(shape, axis, kernel, error);
  if (!layout) {
    failFrame(frame, error);
    return nullptr;
  }
  pp_tensor *result = newDeviceTensor(frame, *dtype, shape);
  int64_t lines = layout->outer * layout->inner;
  if (!result || lines == 0)
    return result;
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    linesKernel<<<blocksFor(lines), kThreads, 0, kernelStream(frame)>>>(
        line, lines, *layout, elementsOf<T>(result),
        static_cast<const T *>(elementsOf<T>(input)),
        static_cast<const T *>(elementsOf<T>(others))...);
  });
  return launched(frame, kernel, result);
}

/// `line` over the lines along `axis` of the gradient of a softmax-like
/// op: of `grad` and of the forward result `resultValue`, which share a
/// shape.
template <typename Line>
pp_tensor *gradOverLines(pp_frame *frame, const char *kernel, pp_tensor *grad,
                         pp_tensor *resultValue, int64_t axis, Line line) {
  if (grad && resultValue && shapeOf(resultValue) != shapeOf(grad)) {
    failFrame(frame, std::string(kernel) + ": grad " +
                         formatShape(shapeOf(grad)) + " and result " +
                         formatShape(shapeOf(resultValue)) + " differ");
    return nullptr;
  }
  return overLines(frame, kernel, axis, line, grad, resultValue);
}

/// The SumToMap of an input of `inputShape` (at most kMaxRank dimensions)
/// whose element lands on the output element at `outputStrides` (0 along
/// summed dimensions).
SumToMap sumToMap(const Shape &inputShape, const Shape &outputStrides) {
  SumToMap map{};
  map.rank = static_cast<int>(inputShape.size());
  map.reduced = 1;
  int64_t stride = 1;
  for (int d = map.rank - 1; d >= 0; --d) {
    map.inputShape[d] = inputShape[d];
    map.inputStrides[d] = stride;
    stride *= inputShape[d];
    map.outputStrides[d] = outputStrides[d];
    if (outputStrides[d] == 0)
      map.reduced *= inputShape[d];
  }
  return map;
}

/// The plan of a reduction (reducePlan) within the CUDA kernels' rank limit.
std::optional<ReducePlan> deviceReducePlan(pp_frame *frame, const char *kernel,
                                           pp_tensor *input, int64_t count,
                                           const int64_t *axes) {
  if (!input)
    return std::nullopt;
  std::optional<ReducePlan> plan =
      reducePlan(frame, kernel, shapeOf(input), count, axes);
  if (!plan || !checkRank(frame, kernel, plan->input))
    return std::nullopt;
  return plan;
}

/// A reduction of `input` over `axes` (reducePlan) into a new tensor of
/// its float dtype, whose groups `launch(in, out, groups, map, groupSize)`
/// fills, `in` and `out` the elements of `input` and of the result (of
/// type T *).
template <typename Launch>
pp_tensor *reduceGroups(pp_frame *frame, const char *kernel, pp_tensor *input,
                        int64_t count, const int64_t *axes, int keepDims,
                        Launch launch) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, kernel, {input});
  std::optional<ReducePlan> plan =
      dtype ? deviceReducePlan(frame, kernel, input, count, axes)
            : std::nullopt;
  pp_tensor *result =
      plan ? newDeviceTensor(frame, *dtype,
                             keepDims ? plan->kept : plan->removed)
           : nullptr;
  if (!result || plan->groups == 0)
    return result;
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    launch(static_cast<const T *>(elementsOf<T>(input)), elementsOf<T>(result),
           plan->groups, sumToMap(plan->input, plan->groupStrides),
           plan->groupSize);
  });
  return launched(frame, kernel, result);
}

/// reduce_sum (`mean` false) or reduce_mean.
pp_tensor *reduceSum(pp_frame *frame, const char *kernel, pp_tensor *input,
                     int64_t count, const int64_t *axes, int keepDims,
                     bool mean) {
  return reduceGroups(
      frame, kernel, input, count, axes, keepDims,
      [&](auto *in, auto *out, int64_t groups, SumToMap map,
          int64_t groupSize) {
        sumToKernel<<<blocksFor(groups), kThreads, 0, kernelStream(frame)>>>(
            in, out, groups, map,
            mean ? 1.0 / static_cast<double>(groupSize) : 1.0);
      });
}

/// The gradient of operand `operand` of a binary op: `f(grad, lhs, rhs,
/// operand)` with the three broadcast.
template <typename F>
pp_tensor *operandGrad(pp_frame *frame, const char *kernel, pp_tensor *grad,
                       pp_tensor *lhs, pp_tensor *rhs, int64_t operand, F f) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, kernel, {grad, lhs, rhs});
  if (!dtype || !math::checkOperand(frame, kernel, operand))
    return nullptr;
  std::optional<Shape> shape =
      broadcastOperands(frame, kernel, {grad, lhs, rhs});
  if (!shape || !checkRank(frame, kernel, *shape))
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, *dtype, *shape);
  int64_t n = numElements(*shape);
  if (!result || n == 0)
    return result;
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    operandGradKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        elementsOf<T>(grad), elementsOf<T>(lhs), elementsOf<T>(rhs),
        elementsOf<T>(result), n, broadcastMap<3>({grad, lhs, rhs}, *shape),
        operand, f);
  });
  return launched(frame, kernel, result);
}

/// `copy` for the device (within the rank limit: checkRank).
StridedCopyMap stridedCopyMap(const StridedCopy &copy) {
  StridedCopyMap map{};
  map.rank = static_cast<int>(copy.shape.size());
  for (int d = 0; d < map.rank; ++d) {
    map.shape[d] = copy.shape[d];
    map.source[d] = copy.sourceStrides[d];
    map.dest[d] = copy.destStrides[d];
  }
  map.sourceOffset = copy.sourceOffset;
  map.destOffset = copy.destOffset;
  return map;
}

/// Runs `copy` from `source` into `result` (already shaped and, where the
/// copy does not reach, filled); destroys `result` on failure.
pp_tensor *stridedCopy(pp_frame *frame, const char *kernel,
                       const StridedCopy &copy, pp_tensor *source,
                       pp_tensor *result) {
  if (!checkRank(frame, kernel, copy.shape)) {
    pp_tensor_destroy(result);
    return nullptr;
  }
  int64_t n = numElements(copy.shape);
  if (n > 0)
    stridedCopyKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        static_cast<const char *>(pp_tensor_data(source)),
        static_cast<char *>(pp_tensor_data(result)), n, stridedCopyMap(copy),
        static_cast<int>(pp_dtype_size(pp_tensor_dtype(source))));
  return launched(frame, kernel, result);
}

/// A new device tensor of `input`'s dtype filled by `copy` from `input`;
/// null when `copy` is (the error is recorded) or on failure.
pp_tensor *copied(pp_frame *frame, const char *kernel,
                  const std::optional<StridedCopy> &copy, pp_tensor *input) {
  pp_tensor *result =
      copy ? newDeviceTensor(frame, pp_tensor_dtype(input), copy->shape)
           : nullptr;
  return result ? stridedCopy(frame, kernel, *copy, input, result) : nullptr;
}

pp_tensor *copyTo(pp_frame *frame, pp_tensor *input, const Shape &shape) {
  pp_tensor *result = newDeviceTensor(frame, pp_tensor_dtype(input), shape);
  if (result &&
      cudaMemcpyAsync(pp_tensor_data(result), pp_tensor_data(input),
                      pp_tensor_nbytes(input), cudaMemcpyDeviceToDevice,
                      kernelStream(frame)) != cudaSuccess) {
    failFrame(frame, "copy: cudaMemcpyAsync failed");
    pp_tensor_destroy(result);
    return nullptr;
  }
  return result;
}

/// The bytes of device tensor `tensor` in host memory, or nullopt with the
/// error recorded.
std::optional<std::vector<char>> toHost(pp_frame *frame, const char *kernel,
                                        pp_tensor *tensor) {
  std::vector<char> bytes(pp_tensor_nbytes(tensor));
  cudaStream_t stream = kernelStream(frame);
  if (!bytes.empty() &&
      (cudaMemcpyAsync(bytes.data(), pp_tensor_data(tensor), bytes.size(),
                       cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
       cudaStreamSynchronize(stream) != cudaSuccess)) {
    failFrame(frame, std::string(kernel) + ": cudaMemcpy to the host failed");
    return std::nullopt;
  }
  return bytes;
}

/// A new i64 device tensor holding `values` (copied from host memory that
/// the caller may free at once: pageable memory is staged before the copy
/// returns); null, the error recorded, on failure.
pp_tensor *toDevice(pp_frame *frame, const char *kernel,
                    const std::vector<int64_t> &values) {
  int64_t count = static_cast<int64_t>(values.size());
  pp_tensor *tensor = newDeviceTensor(frame, PP_DTYPE_I64, {count});
  if (tensor && count > 0 &&
      cudaMemcpyAsync(pp_tensor_data(tensor), values.data(),
                      count * sizeof(int64_t), cudaMemcpyHostToDevice,
                      kernelStream(frame)) != cudaSuccess) {
    failFrame(frame, std::string(kernel) + ": cudaMemcpy to the device failed");
    pp_tensor_destroy(tensor);
    return nullptr;
  }
  return tensor;
}

/// cross_entropy_grad's gradient in a new tensor, or with `inPlace` over
/// `logits`, which the call then owns (each element is read by the thread
/// that then writes it).
pp_tensor *crossEntropyGradInto(pp_frame *frame, pp_tensor *grad,
                                pp_tensor *logits, pp_tensor *labels,
                                int64_t ignore_index, int reduction,
                                bool inPlace) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "cross_entropy_grad", {grad, logits});
  if (!dtype || !labels)
    return failedOverwrite(logits, inPlace);
  pp_tensor *y = deviceLabels(frame, "cross_entropy_grad", shapeOf(logits),
                              labels, ignore_index);
  if (!y)
    return failedOverwrite(logits, inPlace);
  Shape shape = shapeOf(logits);
  pp_tensor *result = inPlace ? logits : newDeviceTensor(frame, *dtype, shape);
  if (result)
    visitFloatType(*dtype, [&](auto element) {
      using T = decltype(element);
      crossEntropyGradKernel<<<1, kThreads, 0, kernelStream(frame)>>>(
          elementsOf<T>(grad), elementsOf<T>(logits),
          elementsOf<const int64_t>(y), elementsOf<T>(result),
          pp_tensor_numel(labels), shape.back(), ignore_index, reduction,
          elementsOf<const int64_t>(y), pp_tensor_numel(labels));
    });
  pp_tensor_destroy(y); // Freed in stream order, after the kernel.
  return result ? launched(frame, "cross_entropy_grad", result) : nullptr;
}

} // namespace

namespace pp::runtime::cuda {

pp_tensor *deviceLabels(pp_frame *frame, const char *kernel,
                        const Shape &logitsShape, pp_tensor *labels,
                        int64_t ignoreIndex) {
  std::optional<std::vector<char>> host = toHost(frame, kernel, labels);
  std::optional<std::vector<int64_t>> values =
      host ? crossEntropyLabels(frame, kernel, logitsShape, labels, ignoreIndex,
                                host->data())
           : std::nullopt;
  return values ? toDevice(frame, kernel, *values) : nullptr;
}

pp_tensor *copyOnDevice(pp_frame *frame, const char *kernel,
                        const StridedCopy &copy, pp_tensor *source,
                        const Shape &shape) {
  pp_tensor *result = newDeviceTensor(frame, pp_tensor_dtype(source), shape);
  return result ? stridedCopy(frame, kernel, copy, source, result) : nullptr;
}

pp_tensor *reduceGathered(pp_frame *frame, const char *kernel,
                          pp_tensor *gathered, const StridedCopy &piece,
                          const Shape &shape, int reduction) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, kernel, {gathered});
  if (!dtype || !checkRank(frame, kernel, piece.shape))
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, *dtype, shape);
  int64_t n = numElements(piece.shape);
  if (!result || n == 0)
    return result;
  int64_t devices = pp_tensor_shape(gathered)[0];
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    reduceGatheredKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        elementsOf<T>(gathered), elementsOf<T>(result), n,
        stridedCopyMap(piece), devices, pp_tensor_numel(gathered) / devices,
        reduction);
  });
  return launched(frame, kernel, result);
}

} // namespace pp::runtime::cuda

extern "C" {

const pp_allocator *pp_cuda_tensor_allocator(void) {
  try {
    return &currentCudaDevice().defaultQueue().tensorAllocator();
  } catch (const std::exception &error) {
    fail(PP_ERROR_INTERNAL, error.what());
    return nullptr;
  }
}

pp_tensor *pp_cuda_copy(pp_frame *frame, pp_tensor *input) {
  return input ? copyTo(frame, input, shapeOf(input)) : nullptr;
}

pp_tensor *pp_cuda_empty(pp_frame *frame, pp_dtype dtype, int64_t rank,
                         const int64_t *shape) {
  return newDeviceTensor(frame, dtype, Shape(shape, shape + rank));
}

int pp_cuda_launched(pp_frame *frame, const char *kernel) {
  return checkLaunch(frame, kernel);
}

pp_tensor *pp_cuda_constant(pp_frame *frame, pp_dtype dtype, int64_t rank,
                            const int64_t *shape, int64_t count,
                            const void *values) {
  Shape target(shape, shape + rank);
  if (!checkConstantCount(frame, target, count))
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, dtype, target);
  int64_t n = numElements(target);
  if (!result || n == 0)
    return result;
  if (count != 1 || n == 1) {
    if (cudaMemcpyAsync(pp_tensor_data(result), values,
                        pp_tensor_nbytes(result), cudaMemcpyHostToDevice,
                        kernelStream(frame)) == cudaSuccess)
      return result;
    failFrame(frame, "constant: cudaMemcpyAsync failed");
    pp_tensor_destroy(result);
    return nullptr;
  }
  visitBits(pp_dtype_size(dtype), [&](auto bits) {
    using T = decltype(bits);
    fillKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        static_cast<T *>(pp_tensor_data(result)), n,
        *static_cast<const T *>(values));
  });
  return launched(frame, "constant", result);
}

pp_tensor *pp_cuda_matmul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs,
                          int transpose_lhs, int transpose_rhs) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "matmul", {lhs, rhs});
  if (!dtype)
    return nullptr;
  ScopedGemmStream onFrameQueue(kernelStream(frame));
  return batchedMatmul(frame, lhs, rhs, transpose_lhs, transpose_rhs,
                       newDeviceTensor, deviceGemm);
}

void pp_cuda_matmul_add(pp_frame *frame, pp_tensor *sum, pp_tensor *lhs,
                        pp_tensor *rhs, int transpose_lhs, int transpose_rhs) {
  ScopedGemmStream onFrameQueue(kernelStream(frame));
  matmulAdd(frame, sum, lhs, rhs, transpose_lhs, transpose_rhs,
            pp_cuda_gemm_f32);
}

pp_tensor *pp_cuda_add(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "add", lhs, rhs, Add());
}

pp_tensor *pp_cuda_sub(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "sub", lhs, rhs, Sub());
}

pp_tensor *pp_cuda_mul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "mul", lhs, rhs, Mul());
}

pp_tensor *pp_cuda_div(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "div", lhs, rhs, Div());
}

pp_tensor *pp_cuda_neg(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "neg", input, Neg());
}

pp_tensor *pp_cuda_relu(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "relu", input, Relu());
}

pp_tensor *pp_cuda_sigmoid(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "sigmoid", input, Sigmoid());
}

pp_tensor *pp_cuda_tanh(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "tanh", input, Tanh());
}

pp_tensor *pp_cuda_exp(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "exp", input, Exp());
}

pp_tensor *pp_cuda_softmax(pp_frame *frame, pp_tensor *input, int64_t axis) {
  return overLines(frame, "softmax", axis, SoftmaxLine{false}, input);
}

pp_tensor *pp_cuda_softmax_grad(pp_frame *frame, pp_tensor *grad,
                                pp_tensor *result_value, int64_t axis) {
  return gradOverLines(frame, "softmax_grad", grad, result_value, axis,
                       SoftmaxGradLine());
}

pp_tensor *pp_cuda_log(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "log", input, Log());
}

pp_tensor *pp_cuda_sqrt(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "sqrt", input, Sqrt());
}

pp_tensor *pp_cuda_rsqrt(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "rsqrt", input, Rsqrt());
}

pp_tensor *pp_cuda_erf(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "erf", input, Erf());
}

pp_tensor *pp_cuda_sqrt_grad(pp_frame *frame, pp_tensor *grad,
                             pp_tensor *result) {
  return binary(frame, "sqrt_grad", grad, result, SqrtGrad());
}

pp_tensor *pp_cuda_rsqrt_grad(pp_frame *frame, pp_tensor *grad,
                              pp_tensor *result) {
  return binary(frame, "rsqrt_grad", grad, result, RsqrtGrad());
}

pp_tensor *pp_cuda_erf_grad(pp_frame *frame, pp_tensor *grad,
                            pp_tensor *input) {
  return binary(frame, "erf_grad", grad, input, ErfGrad());
}

pp_tensor *pp_cuda_gelu(pp_frame *frame, pp_tensor *input, int approximate) {
  return unary(frame, "gelu", input, Gelu{approximate});
}

pp_tensor *pp_cuda_gelu_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *input,
                             int approximate) {
  return binary(frame, "gelu_grad", grad, input, GeluGrad{approximate});
}

pp_tensor *pp_cuda_pow(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "pow", lhs, rhs, Pow());
}

pp_tensor *pp_cuda_maximum(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "maximum", lhs, rhs, Maximum());
}

pp_tensor *pp_cuda_minimum(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "minimum", lhs, rhs, Minimum());
}

pp_tensor *pp_cuda_pow_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *lhs,
                            pp_tensor *rhs, int64_t operand) {
  return operandGrad(frame, "pow_grad", grad, lhs, rhs, operand, PowGrad());
}

pp_tensor *pp_cuda_maximum_grad(pp_frame *frame, pp_tensor *grad,
                                pp_tensor *lhs, pp_tensor *rhs,
                                int64_t operand) {
  return operandGrad(frame, "maximum_grad", grad, lhs, rhs, operand,
                     MaximumGrad());
}

pp_tensor *pp_cuda_minimum_grad(pp_frame *frame, pp_tensor *grad,
                                pp_tensor *lhs, pp_tensor *rhs,
                                int64_t operand) {
  return operandGrad(frame, "minimum_grad", grad, lhs, rhs, operand,
                     MinimumGrad());
}

pp_tensor *pp_cuda_reduce_sum(pp_frame *frame, pp_tensor *input,
                              int64_t axes_count, const int64_t *axes,
                              int keep_dims) {
  return reduceSum(frame, "reduce_sum", input, axes_count, axes, keep_dims,
                   false);
}

pp_tensor *pp_cuda_reduce_mean(pp_frame *frame, pp_tensor *input,
                               int64_t axes_count, const int64_t *axes,
                               int keep_dims) {
  return reduceSum(frame, "reduce_mean", input, axes_count, axes, keep_dims,
                   true);
}

pp_tensor *pp_cuda_reduce_max(pp_frame *frame, pp_tensor *input,
                              int64_t axes_count, const int64_t *axes,
                              int keep_dims) {
  return reduceGroups(
      frame, "reduce_max", input, axes_count, axes, keep_dims,
      [&](auto *in, auto *out, int64_t groups, SumToMap map, int64_t) {
        reduceMaxKernel<<<blocksFor(groups), kThreads, 0,
                          kernelStream(frame)>>>(in, out, groups, map);
      });
}

pp_tensor *pp_cuda_reduce_sum_grad(pp_frame *frame, pp_tensor *grad,
                                   int64_t axes_count, const int64_t *axes,
                                   int64_t input_shape_count,
                                   const int64_t *input_shape) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "reduce_sum_grad", {grad});
  if (!dtype)
    return nullptr;
  std::optional<ReducePlan> plan = reduceGradPlan(
      frame, "reduce_sum_grad", shapeOf(grad),
      Shape(input_shape, input_shape + input_shape_count), axes_count, axes);
  if (!plan || !checkRank(frame, "reduce_sum_grad", plan->input))
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, *dtype, plan->input);
  int64_t n = numElements(plan->input);
  if (!result || n == 0)
    return result;
  BroadcastMap<1> map{};
  map.rank = static_cast<int>(plan->input.size());
  for (int d = 0; d < map.rank; ++d) {
    map.shape[d] = plan->input[d];
    map.strides[0][d] = plan->groupStrides[d];
  }
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    reduceSumGradKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        elementsOf<T>(grad), elementsOf<T>(result), n, map);
  });
  return launched(frame, "reduce_sum_grad", result);
}

pp_tensor *pp_cuda_reduce_max_grad(pp_frame *frame, pp_tensor *grad,
                                   pp_tensor *input, pp_tensor *result_value,
                                   int64_t axes_count, const int64_t *axes) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "reduce_max_grad", {grad, input, result_value});
  if (!dtype)
    return nullptr;
  std::optional<ReducePlan> plan =
      reduceMaxGradPlan(frame, grad, input, result_value, axes_count, axes);
  if (!plan || !checkRank(frame, "reduce_max_grad", plan->input))
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, *dtype, plan->input);
  if (!result || plan->groups == 0)
    return result;
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    reduceMaxGradKernel<<<blocksFor(plan->groups), kThreads, 0,
                          kernelStream(frame)>>>(
        elementsOf<T>(grad), elementsOf<T>(input), elementsOf<T>(result_value),
        elementsOf<T>(result), plan->groups,
        sumToMap(plan->input, plan->groupStrides));
  });
  return launched(frame, "reduce_max_grad", result);
}

pp_tensor *pp_cuda_log_softmax(pp_frame *frame, pp_tensor *input,
                               int64_t axis) {
  return overLines(frame, "log_softmax", axis, SoftmaxLine{true}, input);
}

pp_tensor *pp_cuda_log_softmax_grad(pp_frame *frame, pp_tensor *grad,
                                    pp_tensor *result_value, int64_t axis) {
  return gradOverLines(frame, "log_softmax_grad", grad, result_value, axis,
                       LogSoftmaxGradLine());
}

pp_tensor *pp_cuda_layer_norm(pp_frame *frame, pp_tensor *input,
                              pp_tensor *weight, pp_tensor *bias, int64_t axis,
                              double epsilon) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "layer_norm", {input}, {weight, bias});
  std::optional<LayerNormPlan> plan =
      dtype ? layerNormPlan(frame, "layer_norm", input, weight, bias, nullptr,
                            axis, epsilon)
            : std::nullopt;
  pp_tensor *result =
      plan ? newDeviceTensor(frame, *dtype, shapeOf(input)) : nullptr;
  if (!result || plan->rows == 0)
    return result;
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    layerNormKernel<<<blocksFor(plan->rows), kThreads, 0,
                      kernelStream(frame)>>>(
        elementsOf<T>(input), weight ? elementsOf<T>(weight) : nullptr,
        bias ? elementsOf<T>(bias) : nullptr, elementsOf<T>(result), *plan,
        epsilon);
  });
  return launched(frame, "layer_norm", result);
}

pp_tensor *pp_cuda_layer_norm_grad(pp_frame *frame, pp_tensor *grad,
                                   pp_tensor *input, pp_tensor *weight,
                                   int64_t axis, double epsilon,
                                   int64_t result_index) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "layer_norm_grad", {grad, input, weight});
  std::optional<LayerNormPlan> plan =
      dtype ? layerNormGradPlan(frame, grad, input, weight, axis, epsilon,
                                result_index)
            : std::nullopt;
  pp_tensor *result = plan
                          ? newDeviceTensor(frame, *dtype,
                                            result_index == 0 ? shapeOf(input)
                                                              : shapeOf(weight))
                          : nullptr;
  if (!result)
    return nullptr;
  // The weight gradient needs each row's mean and rstd.
  pp_tensor *statistics = nullptr;
  if (result_index == 1) {
    statistics = newDeviceTensor(frame, PP_DTYPE_F64, {2 * plan->rows});
    if (!statistics) {
      pp_tensor_destroy(result);
      return nullptr;
    }
  }
  double *moments =
      statistics ? static_cast<double *>(pp_tensor_data(statistics)) : nullptr;
  cudaStream_t stream = kernelStream(frame);
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    const T *g = elementsOf<T>(grad), *x = elementsOf<T>(input);
    T *out = elementsOf<T>(result);
    if (result_index == 0) {
      if (plan->rows > 0)
        layerNormInputGradKernel<<<blocksFor(plan->rows), kThreads, 0,
                                   stream>>>(g, x, elementsOf<T>(weight), out,
                                             *plan, epsilon);
      return;
    }
    if (moments && plan->rows > 0)
      layerNormStatisticsKernel<<<blocksFor(plan->rows), kThreads, 0, stream>>>(
          x, moments, *plan, epsilon);
    if (plan->size > 0)
      layerNormFeatureGradKernel<<<blocksFor(plan->size), kThreads, 0,
                                   stream>>>(g, x, moments, out, *plan);
  });
  pp_tensor_destroy(statistics); // Freed in stream order, after the kernels.
  return launched(frame, "layer_norm_grad", result);
}

pp_tensor *pp_cuda_relu_grad(pp_frame *frame, pp_tensor *grad,
                             pp_tensor *input) {
  return binary(frame, "relu_grad", grad, input, ReluGrad());
}

pp_tensor *pp_cuda_sigmoid_grad(pp_frame *frame, pp_tensor *grad,
                                pp_tensor *result) {
  return binary(frame, "sigmoid_grad", grad, result, SigmoidGrad());
}

pp_tensor *pp_cuda_tanh_grad(pp_frame *frame, pp_tensor *grad,
                             pp_tensor *result) {
  return binary(frame, "tanh_grad", grad, result, TanhGrad());
}

pp_tensor *pp_cuda_reshape(pp_frame *frame, pp_tensor *input, int64_t rank,
                           const int64_t *shape) {
  std::optional<Shape> target = reshapeTarget(frame, input, rank, shape);
  return target ? copyTo(frame, input, *target) : nullptr;
}

pp_tensor *pp_cuda_sum_to(pp_frame *frame, pp_tensor *input, int64_t rank,
                          const int64_t *shape) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, "sum_to", {input});
  if (!dtype)
    return nullptr;
  Shape target(shape, shape + rank), inputShape = shapeOf(input);
  if (std::string error = sumToError(inputShape, target); !error.empty()) {
    failFrame(frame, error);
    return nullptr;
  }
  if (!checkRank(frame, "sum_to", inputShape))
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, *dtype, target);
  int64_t outputs = numElements(target);
  if (!result || outputs == 0)
    return result;
  SumToMap map = sumToMap(inputShape, broadcastStrides(target, inputShape));
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    sumToKernel<<<blocksFor(outputs), kThreads, 0, kernelStream(frame)>>>(
        elementsOf<T>(input), elementsOf<T>(result), outputs, map, 1.0);
  });
  return launched(frame, "sum_to", result);
}

pp_tensor *pp_cuda_split(pp_frame *frame, pp_tensor *input, int64_t axis,
                         int64_t num_sizes, const int64_t *sizes,
                         int64_t result_index) {
  return copied(frame, "split",
                splitCopy(frame, input, axis, num_sizes, sizes, result_index),
                input);
}

pp_tensor *pp_cuda_slice_grad(pp_frame *frame, pp_tensor *grad,
                              int64_t input_shape_count,
                              const int64_t *input_shape, int64_t limits_count,
                              const int64_t *limits, int64_t starts_count,
                              const int64_t *starts, int64_t strides_count,
                              const int64_t *strides) {
  std::optional<StridedCopy> copy =
      sliceGradCopy(frame, grad, input_shape_count, input_shape, starts_count,
                    starts, limits_count, limits, strides_count, strides);
  if (!copy)
    return nullptr;
  pp_tensor *result =
      newDeviceTensor(frame, pp_tensor_dtype(grad),
                      Shape(input_shape, input_shape + input_shape_count));
  if (!result)
    return nullptr;
  if (cudaMemsetAsync(pp_tensor_data(result), 0, pp_tensor_nbytes(result),
                      kernelStream(frame)) !=
      cudaSuccess) {
    failFrame(frame, "slice_grad: cudaMemsetAsync failed");
    pp_tensor_destroy(result);
    return nullptr;
  }
  return stridedCopy(frame, "slice_grad", *copy, grad, result);
}

pp_tensor *pp_cuda_cast(pp_frame *frame, pp_tensor *input, int to) {
  if (!input)
    return nullptr;
  std::optional<pp_dtype> target =
      checkCast(frame, pp_tensor_dtype(input), to);
  if (!target)
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, *target, shapeOf(input));
  int64_t n = pp_tensor_numel(input);
  if (!result || n == 0)
    return result;
  visitCastType(pp_tensor_dtype(input), [&](auto from) {
    visitCastType(*target, [&](auto into) {
      using From = decltype(from);
      using To = decltype(into);
      castKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
          static_cast<const From *>(pp_tensor_data(input)),
          static_cast<To *>(pp_tensor_data(result)), n);
    });
  });
  return launched(frame, "cast", result);
}

pp_tensor *pp_cuda_where(pp_frame *frame, pp_tensor *condition,
                         pp_tensor *on_true, pp_tensor *on_false) {
  std::optional<Shape> shape = whereShape(frame, condition, on_true, on_false);
  if (!shape || !checkRank(frame, "where", *shape))
    return nullptr;
  pp_tensor *result =
      newDeviceTensor(frame, pp_tensor_dtype(on_true), *shape);
  int64_t n = numElements(*shape);
  if (!result || n == 0)
    return result;
  BroadcastMap<3> map =
      broadcastMap<3>({condition, on_true, on_false}, *shape);
  visitBits(pp_dtype_size(pp_tensor_dtype(on_true)), [&](auto bits) {
    using T = decltype(bits);
    whereKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        static_cast<const uint8_t *>(pp_tensor_data(condition)),
        static_cast<const T *>(pp_tensor_data(on_true)),
        static_cast<const T *>(pp_tensor_data(on_false)),
        static_cast<T *>(pp_tensor_data(result)), n, map);
  });
  return launched(frame, "where", result);
}

pp_tensor *pp_cuda_gather(pp_frame *frame, pp_tensor *data, pp_tensor *indices,
                          int64_t axis) {
  if (!present({data, indices}))
    return nullptr;
  // The indices are checked, and negative ones resolved, on the host.
  std::optional<std::vector<char>> host = toHost(frame, "gather", indices);
  std::optional<GatherPlan> plan =
      host ? gatherPlan(frame, "gather", shapeOf(data), indices, axis,
                        host->data())
           : std::nullopt;
  if (!plan)
    return nullptr;
  pp_tensor *result =
      newDeviceTensor(frame, pp_tensor_dtype(data), plan->result);
  int64_t n = numElements(plan->result);
  if (!result || n == 0)
    return result;
  pp_tensor *rows = toDevice(frame, "gather", plan->rows);
  if (!rows) {
    pp_tensor_destroy(result);
    return nullptr;
  }
  int64_t count = static_cast<int64_t>(plan->rows.size());
  visitBits(pp_dtype_size(pp_tensor_dtype(data)), [&](auto bits) {
    using T = decltype(bits);
    gatherKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        static_cast<const T *>(pp_tensor_data(data)),
        static_cast<const int64_t *>(pp_tensor_data(rows)),
        static_cast<T *>(pp_tensor_data(result)), n, plan->layout, count);
  });
  pp_tensor_destroy(rows); // Freed in stream order, after the kernel.
  return launched(frame, "gather", result);
}

/// Writes gather_grad's table for `grad` and `indices` into `out` (of
/// data's shape and grad's type), or adds it there; false, with the error
/// recorded, when it cannot.
static bool gatherGradInto(pp_frame *frame, pp_tensor *grad, pp_tensor *indices,
                           int64_t axis, pp_tensor *out, bool addToOut) {
  Shape dataShape = shapeOf(out);
  std::optional<std::vector<char>> host =
      toHost(frame, "gather_grad", indices);
  std::optional<GatherPlan> plan =
      host ? gatherGradPlan(frame, grad, dataShape, indices, axis,
                            host->data())
           : std::nullopt;
  if (!plan)
    return false;
  int64_t n = numElements(dataShape);
  IndexGroups groups = groupIndices(plan->rows, plan->layout.size);
  pp_tensor *offsets = toDevice(frame, "gather_grad", groups.offsets);
  pp_tensor *positions =
      offsets ? toDevice(frame, "gather_grad", groups.positions) : nullptr;
  if (positions)
    visitFloatType(pp_tensor_dtype(out), [&](auto element) {
      using T = decltype(element);
      gatherGradKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
          elementsOf<T>(grad), elementsOf<int64_t>(offsets),
          elementsOf<int64_t>(positions), elementsOf<T>(out), n, plan->layout,
          static_cast<int64_t>(plan->rows.size()), addToOut);
    });
  pp_tensor_destroy(offsets); // Freed in stream order, after the kernel.
  pp_tensor_destroy(positions);
  return positions != nullptr;
}

pp_tensor *pp_cuda_gather_grad(pp_frame *frame, pp_tensor *grad,
                               pp_tensor *indices, int64_t axis,
                               int64_t data_shape_count,
                               const int64_t *data_shape) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "gather_grad", {grad});
  if (!dtype || !indices)
    return nullptr;
  pp_tensor *result = newDeviceTensor(
      frame, *dtype, Shape(data_shape, data_shape + data_shape_count));
  if (!result || pp_tensor_numel(result) == 0)
    return result;
  if (!gatherGradInto(frame, grad, indices, axis, result,
                      /*addToOut=*/false)) {
    pp_tensor_destroy(result);
    return nullptr;
  }
  return launched(frame, "gather_grad", result);
}

void pp_cuda_gather_grad_add(pp_frame *frame, pp_tensor *sum, pp_tensor *grad,
                             pp_tensor *indices, int64_t axis) {
  if (!gatherGradAddOperandsHold(frame, sum, grad, indices))
    return;
  if (pp_tensor_numel(sum) > 0 &&
      gatherGradInto(frame, grad, indices, axis, sum, /*addToOut=*/true))
    checkLaunch(frame, "gather_grad_add");
}

pp_tensor *pp_cuda_transpose(pp_frame *frame, pp_tensor *input,
                             int64_t permutation_count,
                             const int64_t *permutation) {
  return copied(frame, "transpose",
                transposeCopy(frame, input, permutation_count, permutation),
                input);
}

pp_tensor *pp_cuda_slice(pp_frame *frame, pp_tensor *input,
                         int64_t limits_count, const int64_t *limits,
                         int64_t starts_count, const int64_t *starts,
                         int64_t strides_count, const int64_t *strides) {
  return copied(frame, "slice",
                sliceCopy(frame, input, limits_count, limits, starts_count,
                          starts, strides_count, strides),
                input);
}

pp_tensor *pp_cuda_broadcast_to(pp_frame *frame, pp_tensor *input,
                                int64_t shape_count, const int64_t *shape) {
  return copied(frame, "broadcast_to",
                broadcastCopy(frame, input, shape_count, shape), input);
}

pp_tensor *pp_cuda_concat(pp_frame *frame, int64_t inputs_count,
                          pp_tensor *const *inputs, int64_t axis) {
  std::optional<ConcatPlan> plan =
      concatPlan(frame, inputs_count, inputs, axis);
  pp_tensor *result =
      plan ? newDeviceTensor(frame, plan->dtype, plan->shape) : nullptr;
  for (int64_t i = 0; result && i < inputs_count; ++i)
    result = stridedCopy(frame, "concat", plan->copies[i], inputs[i], result);
  return result;
}

pp_tensor *pp_cuda_trilu(pp_frame *frame, pp_tensor *input, int64_t diagonal,
                         int upper) {
  std::optional<MatrixStack> stack = triluMatrices(frame, input);
  pp_tensor *result =
      stack ? newDeviceTensor(frame, pp_tensor_dtype(input), shapeOf(input))
            : nullptr;
  int64_t n = result ? pp_tensor_numel(result) : 0;
  if (n == 0)
    return result;
  visitBits(pp_dtype_size(pp_tensor_dtype(input)), [&](auto bits) {
    using T = decltype(bits);
    triluKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        static_cast<const T *>(pp_tensor_data(input)),
        static_cast<T *>(pp_tensor_data(result)), n, *stack, diagonal, upper);
  });
  return launched(frame, "trilu", result);
}

pp_tensor *pp_cuda_mse_loss(pp_frame *frame, pp_tensor *input,
                            pp_tensor *target, int reduction) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "mse_loss", {input, target});
  pp_tensor *result =
      dtype ? newDeviceTensor(frame, *dtype,
                              reduction == 2 ? shapeOf(input) : Shape())
            : nullptr;
  if (!result)
    return nullptr;
  int64_t n = pp_tensor_numel(input);
  visitFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    const T *x = elementsOf<T>(input), *t = elementsOf<T>(target);
    if (reduction != 2)
      mseLossKernel<<<1, kThreads, 0, kernelStream(frame)>>>(
          x, t, elementsOf<T>(result), n, reduction);
    else if (n > 0)
      mseLossNoneKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
          x, t, elementsOf<T>(result), n);
  });
  return launched(frame, "mse_loss", result);
}

pp_tensor *pp_cuda_mse_loss_grad(pp_frame *frame, pp_tensor *grad,
                                 pp_tensor *input, pp_tensor *target,
                                 int reduction) {
  return perElement(
      frame, "mse_loss_grad", {input, target, grad},
      [&](auto element, auto *out, int64_t n) {
        using T = decltype(element);
        mseLossGradKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
            elementsOf<T>(grad), elementsOf<T>(input), elementsOf<T>(target),
            out, n, reduction);
      });
}

pp_tensor *pp_cuda_cross_entropy(pp_frame *frame, pp_tensor *logits,
                                 pp_tensor *labels, int64_t ignore_index,
                                 int reduction) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "cross_entropy", {logits});
  if (!dtype || !labels)
    return nullptr;
  pp_tensor *y = deviceLabels(frame, "cross_entropy", shapeOf(logits), labels,
                              ignore_index);
  if (!y)
    return nullptr;
  Shape shape = shapeOf(logits);
  int64_t rows = pp_tensor_numel(labels), classes = shape.back();
  const int64_t *ys = elementsOf<const int64_t>(y);
  // The rows' losses: the result, or in f32 for the reduction to add up.
  bool reduced = reduction != 2;
  pp_tensor *perRow = newDeviceTensor(frame, reduced ? PP_DTYPE_F32 : *dtype,
                                      Shape(shape.begin(), shape.end() - 1));
  pp_tensor *result =
      perRow && reduced ? newDeviceTensor(frame, *dtype, {}) : perRow;
  cudaStream_t stream = kernelStream(frame);
  if (result)
    visitFloatType(*dtype, [&](auto element) {
      using T = decltype(element);
      auto lossesInto = [&](auto *rowLoss) {
        if (rows > 0)
          crossEntropyRowsKernel<<<blocksFor(rows), kThreads, 0, stream>>>(
              elementsOf<T>(logits), ys, rowLoss, rows, classes, ignore_index);
      };
      if (!reduced) {
        lossesInto(elementsOf<T>(perRow));
        return;
      }
      lossesInto(elementsOf<float>(perRow));
      crossEntropyReduceKernel<<<1, kThreads, 0, stream>>>(
          elementsOf<float>(perRow), ys, elementsOf<T>(result), rows,
          ignore_index, reduction);
    });
  if (result != perRow)
    pp_tensor_destroy(perRow); // Freed in stream order, after the kernels.
  pp_tensor_destroy(y);
  return result ? launched(frame, "cross_entropy", result) : nullptr;
}

pp_tensor *pp_cuda_cross_entropy_grad(pp_frame *frame, pp_tensor *grad,
                                      pp_tensor *logits, pp_tensor *labels,
                                      int64_t ignore_index, int reduction) {
  return crossEntropyGradInto(frame, grad, logits, labels, ignore_index,
                              reduction, /*inPlace=*/false);
}

pp_tensor *pp_cuda_cross_entropy_grad_in_place(pp_frame *frame, pp_tensor *grad,
                                               pp_tensor *logits,
                                               pp_tensor *labels,
                                               int64_t ignore_index,
                                               int reduction) {
  return crossEntropyGradInto(frame, grad, logits, labels, ignore_index,
                              reduction, /*inPlace=*/true);
}

pp_tensor *pp_cuda_dropout(pp_frame *frame, pp_tensor *input, int64_t key,
                           double ratio) {
  if (!present({input}))
    return nullptr;
  if (!frame->position.training || ratio == 0.0)
    return pp_cuda_copy(frame, input);
  return perElement(
      frame, "dropout", {input}, [&](auto element, auto *out, int64_t n) {
        using T = decltype(element);
        dropoutKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
            elementsOf<T>(input), out, n,
            dropoutMask(frame->position, key, ratio, shapeOf(input)));
      });
}

} // extern "C"
