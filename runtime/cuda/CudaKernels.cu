//===- CudaKernels.cu - device kernels for generated stage code -----------===//
//
// Same semantics as runtime/CpuKernels.cpp on device tensors. Reductions
// use one fixed-size block and no atomics, so results are deterministic.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/cuda/pp_runtime_cuda.h"

#include "runtime/core/Error.h"
#include "runtime/kernels/Frame.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/core/Shapes.h"

#include <cuda_runtime.h>

#include <cstring>
#include <string>

using namespace pp::runtime;

namespace {

constexpr int kMaxRank = 8;
constexpr int kThreads = 256;

// Stream-ordered on the default stream: freeing never waits for the whole
// device, which could wait for a peer through a pending NCCL send.
void *allocateDevice(size_t bytes) {
  void *data = nullptr;
  if (cudaMallocAsync(&data, bytes == 0 ? 1 : bytes, 0) != cudaSuccess)
    return nullptr;
  return data;
}

void releaseDevice(void *data) { cudaFreeAsync(data, 0); }

const pp_allocator deviceAllocator = {allocateDevice, releaseDevice};

pp_tensor *newDeviceTensor(pp_frame *frame, pp_dtype dtype,
                           const Shape &shape) {
  pp_tensor *tensor = nullptr;
  if (pp_tensor_create_in(&deviceAllocator, dtype,
                          static_cast<int64_t>(shape.size()), shape.data(),
                          &tensor) != PP_OK) {
    failFrame(frame, pp_last_error());
    return nullptr;
  }
  return tensor;
}

/// Records a failed launch; true when the last launch succeeded.
bool checkLaunch(pp_frame *frame, const char *kernel) {
  cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess)
    return true;
  failFrame(frame, std::string(kernel) + ": " + cudaGetErrorString(error));
  return false;
}

unsigned blocksFor(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

float *deviceFloats(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

/// Output shape and per-operand strides of a broadcast elementwise op.
struct BroadcastMap {
  int rank;
  int64_t shape[kMaxRank];
  int64_t lhs[kMaxRank];
  int64_t rhs[kMaxRank];
};

struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Sub {
  __device__ float operator()(float a, float b) const { return a - b; }
};
struct Mul {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct Div {
  __device__ float operator()(float a, float b) const { return a / b; }
};
struct ReluGrad {
  __device__ float operator()(float g, float x) const { return x > 0 ? g : 0; }
};
struct SigmoidGrad {
  __device__ float operator()(float g, float y) const {
    return g * y * (1.0f - y);
  }
};
struct TanhGrad {
  __device__ float operator()(float g, float y) const {
    return g * (1.0f - y * y);
  }
};
struct Neg {
  __device__ float operator()(float x) const { return -x; }
};
struct Relu {
  __device__ float operator()(float x) const { return x > 0 ? x : 0.0f; }
};
struct Sigmoid {
  __device__ float operator()(float x) const {
    return static_cast<float>(1.0 / (1.0 + exp(-static_cast<double>(x))));
  }
};
struct Tanh {
  __device__ float operator()(float x) const { return tanhf(x); }
};
struct Exp {
  __device__ float operator()(float x) const { return expf(x); }
};

template <typename F>
__global__ void unaryKernel(const float *in, float *out, int64_t n, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    out[i] = f(in[i]);
}

template <typename F>
__global__ void binaryKernel(const float *a, const float *b, float *out,
                             int64_t n, BroadcastMap map, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  int64_t rest = i, aOffset = 0, bOffset = 0;
  for (int d = map.rank - 1; d >= 0; --d) {
    int64_t coordinate = rest % map.shape[d];
    rest /= map.shape[d];
    aOffset += coordinate * map.lhs[d];
    bOffset += coordinate * map.rhs[d];
  }
  out[i] = f(a[aOffset], b[bOffset]);
}

__global__ void accumulateKernel(float *sum, const float *addend, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    sum[i] += addend[i];
}

__global__ void fillKernel(float *out, int64_t n, float value) {
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

__global__ void sumToKernel(const float *in, float *out, int64_t outputs,
                            SumToMap map) {
  int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= outputs)
    return;
  double sum = 0;
  for (int64_t r = 0; r < map.reduced; ++r) {
    // Walk the input in row-major order, keeping those that land on `o`.
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
    sum += in[offset];
  }
  out[o] = static_cast<float>(sum);
}

/// The maximum of `n` logits `stride` apart and the sum of exp(logit -
/// maximum): softmax[c] = exp(line[c * stride] - max) / total.
__device__ void softmaxNormalizer(const float *line, int64_t n, int64_t stride,
                                  double &max, double &total) {
  max = -INFINITY;
  total = 0;
  for (int64_t c = 0; c < n; ++c)
    max = fmax(max, static_cast<double>(line[c * stride]));
  for (int64_t c = 0; c < n; ++c)
    total += exp(line[c * stride] - max);
}

/// The element offset where line `l` along the axis of `layout` starts;
/// its elements are `layout.inner` apart.
__device__ int64_t lineStart(AxisLayout layout, int64_t l) {
  return (l / layout.inner) * layout.size * layout.inner + l % layout.inner;
}

/// One thread per line along the axis.
__global__ void softmaxKernel(const float *in, float *out, int64_t lines,
                              AxisLayout layout) {
  int64_t l = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (l >= lines)
    return;
  int64_t start = lineStart(layout, l);
  double max, total;
  softmaxNormalizer(in + start, layout.size, layout.inner, max, total);
  for (int64_t k = 0; k < layout.size; ++k) {
    int64_t at = start + k * layout.inner;
    out[at] = static_cast<float>(exp(in[at] - max) / total);
  }
}

__global__ void softmaxGradKernel(const float *g, const float *y, float *out,
                                  int64_t lines, AxisLayout layout) {
  int64_t l = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (l >= lines)
    return;
  int64_t start = lineStart(layout, l);
  double dot = 0;
  for (int64_t k = 0; k < layout.size; ++k) {
    int64_t at = start + k * layout.inner;
    dot += static_cast<double>(g[at]) * y[at];
  }
  for (int64_t k = 0; k < layout.size; ++k) {
    int64_t at = start + k * layout.inner;
    out[at] = static_cast<float>(y[at] * (g[at] - dot));
  }
}

/// A StridedCopy for the device.
struct StridedCopyMap {
  int rank;
  int64_t shape[kMaxRank];
  int64_t source[kMaxRank];
  int64_t dest[kMaxRank];
  int64_t sourceOffset, destOffset;
};

/// One thread per element; moves `elementSize` bytes.
__global__ void stridedCopyKernel(const char *from, char *to, int64_t n,
                                  StridedCopyMap map, int elementSize) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  int64_t rest = i, fromOffset = map.sourceOffset, toOffset = map.destOffset;
  for (int d = map.rank - 1; d >= 0; --d) {
    int64_t coordinate = rest % map.shape[d];
    rest /= map.shape[d];
    fromOffset += coordinate * map.source[d];
    toOffset += coordinate * map.dest[d];
  }
  for (int b = 0; b < elementSize; ++b)
    to[toOffset * elementSize + b] = from[fromOffset * elementSize + b];
}

/// One block sums `values` (double) in a fixed order.
__device__ double blockSum(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  return partial[0];
}

__global__ void mseLossKernel(const float *x, const float *t, float *out,
                              int64_t n, int reduction) {
  double local = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    double diff = static_cast<double>(x[i]) - t[i];
    local += diff * diff;
  }
  double sum = blockSum(local);
  if (threadIdx.x == 0)
    out[0] = static_cast<float>(reduction == 0 && n > 0 ? sum / n : sum);
}

__global__ void mseLossNoneKernel(const float *x, const float *t, float *out,
                                  int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    out[i] = (x[i] - t[i]) * (x[i] - t[i]);
}

__global__ void mseLossGradKernel(const float *g, const float *x,
                                  const float *t, float *out, int64_t n,
                                  int reduction) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  float scale = reduction == 0 && n > 0 ? 2.0f / n : 2.0f;
  out[i] = scale * (x[i] - t[i]) * g[reduction == 2 ? i : 0];
}

__global__ void crossEntropyRowsKernel(const float *z, const int64_t *y,
                                       float *rowLoss, int64_t rows,
                                       int64_t classes, int64_t ignore) {
  int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= rows)
    return;
  if (y[r] == ignore || y[r] < 0 || y[r] >= classes) {
    rowLoss[r] = 0;
    return;
  }
  const float *row = z + r * classes;
  double max, total;
  softmaxNormalizer(row, classes, 1, max, total);
  rowLoss[r] = static_cast<float>(log(total) + max - row[y[r]]);
}

__global__ void crossEntropyReduceKernel(const float *rowLoss, const int64_t *y,
                                         float *out, int64_t rows,
                                         int64_t ignore, int reduction) {
  double local = 0, count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) {
    local += rowLoss[r];
    count += y[r] != ignore;
  }
  double sum = blockSum(local);
  __syncthreads();
  double counted = blockSum(count);
  if (threadIdx.x == 0)
    out[0] = static_cast<float>(
        reduction == 0 ? (counted > 0 ? sum / counted : 0.0) : sum);
}

__global__ void crossEntropyGradKernel(const float *g, const float *z,
                                       const int64_t *y, float *out,
                                       int64_t rows, int64_t classes,
                                       int64_t ignore, int reduction) {
  __shared__ double counted;
  double count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads)
    count += y[r] != ignore;
  double total = blockSum(count);
  if (threadIdx.x == 0)
    counted = total;
  __syncthreads();
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) {
    const float *row = z + r * classes;
    float *grad = out + r * classes;
    if (y[r] == ignore) {
      for (int64_t c = 0; c < classes; ++c)
        grad[c] = 0;
      continue;
    }
    double scale = reduction == 2 ? g[r] : g[0];
    if (reduction == 0)
      scale /= counted;
    double max, sum;
    softmaxNormalizer(row, classes, 1, max, sum);
    for (int64_t c = 0; c < classes; ++c)
      grad[c] = static_cast<float>(
          (exp(row[c] - max) / sum - (c == y[r] ? 1.0 : 0.0)) * scale);
  }
}

bool present(std::initializer_list<pp_tensor *> tensors) {
  for (pp_tensor *tensor : tensors)
    if (!tensor)
      return false;
  return true;
}

template <typename F>
pp_tensor *unary(pp_frame *frame, const char *kernel, pp_tensor *input, F f) {
  if (!present({input}))
    return nullptr;
  pp_tensor *result = newDeviceTensor(frame, PP_DTYPE_F32, shapeOf(input));
  int64_t n = pp_tensor_numel(input);
  if (!result || n == 0)
    return result;
  unaryKernel<<<blocksFor(n), kThreads>>>(deviceFloats(input),
                                          deviceFloats(result), n, f);
  return checkLaunch(frame, kernel) ? result : nullptr;
}

template <typename F>
pp_tensor *binary(pp_frame *frame, const char *kernel, pp_tensor *lhs,
                  pp_tensor *rhs, F f) {
  if (!present({lhs, rhs}))
    return nullptr;
  Shape lhsShape = shapeOf(lhs), rhsShape = shapeOf(rhs);
  std::optional<Shape> shape = broadcastShapes(lhsShape, rhsShape);
  if (!shape || shape->size() > kMaxRank) {
    failFrame(frame, std::string(kernel) + ": shapes " + formatShape(lhsShape) +
                         " and " + formatShape(rhsShape) +
                         " do not broadcast (or exceed rank 8)");
    return nullptr;
  }
  pp_tensor *result = newDeviceTensor(frame, PP_DTYPE_F32, *shape);
  int64_t n = numElements(*shape);
  if (!result || n == 0)
    return result;
  BroadcastMap map{};
  map.rank = static_cast<int>(shape->size());
  Shape lhsStrides = broadcastStrides(lhsShape, *shape);
  Shape rhsStrides = broadcastStrides(rhsShape, *shape);
  for (int d = 0; d < map.rank; ++d) {
    map.shape[d] = (*shape)[d];
    map.lhs[d] = lhsStrides[d];
    map.rhs[d] = rhsStrides[d];
  }
  binaryKernel<<<blocksFor(n), kThreads>>>(deviceFloats(lhs), deviceFloats(rhs),
                                           deviceFloats(result), n, map, f);
  return checkLaunch(frame, kernel) ? result : nullptr;
}

/// A new f32 device tensor of `shape` for a kernel over the lines along
/// `axis`, with their `layout`; null (the error recorded) on failure.
pp_tensor *newLinesResult(pp_frame *frame, const char *kernel,
                          const Shape &shape, int64_t axis,
                          AxisLayout &layout) {
  std::string error;
  std::optional<AxisLayout> found = axisLayout(shape, axis, kernel, error);
  if (!found) {
    failFrame(frame, error);
    return nullptr;
  }
  layout = *found;
  return newDeviceTensor(frame, PP_DTYPE_F32, shape);
}

/// `result` when the last launch succeeded; else null, `result` destroyed.
pp_tensor *launched(pp_frame *frame, const char *kernel, pp_tensor *result) {
  if (checkLaunch(frame, kernel))
    return result;
  pp_tensor_destroy(result);
  return nullptr;
}

/// Runs `copy` from `source` into `result` (already shaped and, where the
/// copy does not reach, filled); destroys `result` on failure.
pp_tensor *stridedCopy(pp_frame *frame, const char *kernel,
                       const StridedCopy &copy, pp_tensor *source,
                       pp_tensor *result) {
  if (copy.shape.size() > kMaxRank) {
    failFrame(frame, std::string(kernel) + ": rank " +
                         std::to_string(copy.shape.size()) +
                         " is above the CUDA kernels' limit of 8");
    pp_tensor_destroy(result);
    return nullptr;
  }
  StridedCopyMap map{};
  map.rank = static_cast<int>(copy.shape.size());
  for (int d = 0; d < map.rank; ++d) {
    map.shape[d] = copy.shape[d];
    map.source[d] = copy.sourceStrides[d];
    map.dest[d] = copy.destStrides[d];
  }
  map.sourceOffset = copy.sourceOffset;
  map.destOffset = copy.destOffset;
  int64_t n = numElements(copy.shape);
  if (n > 0)
    stridedCopyKernel<<<blocksFor(n), kThreads>>>(
        static_cast<const char *>(pp_tensor_data(source)),
        static_cast<char *>(pp_tensor_data(result)), n, map,
        static_cast<int>(pp_dtype_size(pp_tensor_dtype(source))));
  return launched(frame, kernel, result);
}

pp_tensor *copyTo(pp_frame *frame, pp_tensor *input, const Shape &shape) {
  pp_tensor *result = newDeviceTensor(frame, pp_tensor_dtype(input), shape);
  if (result && cudaMemcpy(pp_tensor_data(result), pp_tensor_data(input),
                           pp_tensor_nbytes(input),
                           cudaMemcpyDeviceToDevice) != cudaSuccess) {
    failFrame(frame, "copy: cudaMemcpy failed");
    pp_tensor_destroy(result);
    return nullptr;
  }
  return result;
}

} // namespace

extern "C" {

const pp_allocator *pp_cuda_tensor_allocator(void) { return &deviceAllocator; }

pp_status pp_cuda_accumulate_f32(pp_tensor *sum, pp_tensor *addend) {
  int64_t n = pp_tensor_numel(sum);
  if (pp_tensor_numel(addend) != n)
    return failWith(PP_ERROR_INVALID_ARGUMENT, "pp_cuda_accumulate_f32: ", n,
                    " and ", pp_tensor_numel(addend), " elements");
  if (n > 0)
    accumulateKernel<<<blocksFor(n), kThreads>>>(deviceFloats(sum),
                                                 deviceFloats(addend), n);
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return failWith(PP_ERROR_INTERNAL,
                    "pp_cuda_accumulate_f32: ", cudaGetErrorString(error));
  return PP_OK;
}

pp_tensor *pp_cuda_copy(pp_frame *frame, pp_tensor *input) {
  return input ? copyTo(frame, input, shapeOf(input)) : nullptr;
}

pp_tensor *pp_cuda_fill_f32(pp_frame *frame, float value, int64_t rank,
                            const int64_t *shape) {
  pp_tensor *result =
      newDeviceTensor(frame, PP_DTYPE_F32, Shape(shape, shape + rank));
  int64_t n = result ? pp_tensor_numel(result) : 0;
  if (n > 0) {
    fillKernel<<<blocksFor(n), kThreads>>>(deviceFloats(result), n, value);
    if (!checkLaunch(frame, "fill_f32"))
      return nullptr;
  }
  return result;
}

pp_tensor *pp_cuda_constant_f32(pp_frame *frame, int64_t rank,
                                const int64_t *shape, const float *values) {
  pp_tensor *result =
      newDeviceTensor(frame, PP_DTYPE_F32, Shape(shape, shape + rank));
  if (result &&
      cudaMemcpy(pp_tensor_data(result), values, pp_tensor_nbytes(result),
                 cudaMemcpyHostToDevice) != cudaSuccess) {
    failFrame(frame, "constant_f32: cudaMemcpy failed");
    pp_tensor_destroy(result);
    return nullptr;
  }
  return result;
}

pp_tensor *pp_cuda_matmul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs,
                          int transpose_lhs, int transpose_rhs) {
  if (!present({lhs, rhs}))
    return nullptr;
  return batchedMatmul(frame, lhs, rhs, transpose_lhs, transpose_rhs,
                       newDeviceTensor, pp_cuda_gemm_f32);
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
  if (!present({input}))
    return nullptr;
  AxisLayout layout;
  pp_tensor *result =
      newLinesResult(frame, "softmax", shapeOf(input), axis, layout);
  int64_t lines = layout.outer * layout.inner;
  if (!result || lines == 0)
    return result;
  softmaxKernel<<<blocksFor(lines), kThreads>>>(
      deviceFloats(input), deviceFloats(result), lines, layout);
  return launched(frame, "softmax", result);
}

pp_tensor *pp_cuda_softmax_grad(pp_frame *frame, pp_tensor *grad,
                                pp_tensor *result_value, int64_t axis) {
  if (!present({grad, result_value}))
    return nullptr;
  Shape shape = shapeOf(grad);
  if (shapeOf(result_value) != shape) {
    failFrame(frame, "softmax_grad: grad " + formatShape(shape) +
                         " and result " + formatShape(shapeOf(result_value)) +
                         " differ");
    return nullptr;
  }
  AxisLayout layout;
  pp_tensor *result =
      newLinesResult(frame, "softmax_grad", shape, axis, layout);
  int64_t lines = layout.outer * layout.inner;
  if (!result || lines == 0)
    return result;
  softmaxGradKernel<<<blocksFor(lines), kThreads>>>(
      deviceFloats(grad), deviceFloats(result_value), deviceFloats(result),
      lines, layout);
  return launched(frame, "softmax_grad", result);
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
  if (!input)
    return nullptr;
  Shape target(shape, shape + rank), inputShape = shapeOf(input);
  std::string error = sumToError(inputShape, target);
  if (error.empty() && inputShape.size() > kMaxRank)
    error = "sum_to: rank " + std::to_string(inputShape.size()) +
            " is above the CUDA kernels' limit of 8";
  if (!error.empty()) {
    failFrame(frame, error);
    return nullptr;
  }
  pp_tensor *result = newDeviceTensor(frame, PP_DTYPE_F32, target);
  int64_t outputs = numElements(target);
  if (!result || outputs == 0)
    return result;
  SumToMap map{};
  map.rank = static_cast<int>(inputShape.size());
  Shape outputStrides = broadcastStrides(target, inputShape);
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
  sumToKernel<<<blocksFor(outputs), kThreads>>>(
      deviceFloats(input), deviceFloats(result), outputs, map);
  return checkLaunch(frame, "sum_to") ? result : nullptr;
}

pp_tensor *pp_cuda_split(pp_frame *frame, pp_tensor *input, int64_t axis,
                         int64_t num_sizes, const int64_t *sizes,
                         int64_t result_index) {
  std::optional<StridedCopy> copy =
      splitCopy(frame, input, axis, num_sizes, sizes, result_index);
  pp_tensor *result =
      copy ? newDeviceTensor(frame, pp_tensor_dtype(input), copy->shape)
           : nullptr;
  return result ? stridedCopy(frame, "split", *copy, input, result) : nullptr;
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
  if (cudaMemsetAsync(pp_tensor_data(result), 0, pp_tensor_nbytes(result), 0) !=
      cudaSuccess) {
    failFrame(frame, "slice_grad: cudaMemsetAsync failed");
    pp_tensor_destroy(result);
    return nullptr;
  }
  return stridedCopy(frame, "slice_grad", *copy, grad, result);
}

pp_tensor *pp_cuda_mse_loss(pp_frame *frame, pp_tensor *input,
                            pp_tensor *target, int reduction) {
  if (!present({input, target}))
    return nullptr;
  int64_t n = pp_tensor_numel(input);
  if (reduction == 2) {
    pp_tensor *result = newDeviceTensor(frame, PP_DTYPE_F32, shapeOf(input));
    if (result && n > 0)
      mseLossNoneKernel<<<blocksFor(n), kThreads>>>(
          deviceFloats(input), deviceFloats(target), deviceFloats(result), n);
    return checkLaunch(frame, "mse_loss") ? result : nullptr;
  }
  pp_tensor *result = newDeviceTensor(frame, PP_DTYPE_F32, {});
  if (!result)
    return nullptr;
  mseLossKernel<<<1, kThreads>>>(deviceFloats(input), deviceFloats(target),
                                 deviceFloats(result), n, reduction);
  return checkLaunch(frame, "mse_loss") ? result : nullptr;
}

pp_tensor *pp_cuda_mse_loss_grad(pp_frame *frame, pp_tensor *grad,
                                 pp_tensor *input, pp_tensor *target,
                                 int reduction) {
  if (!present({grad, input, target}))
    return nullptr;
  int64_t n = pp_tensor_numel(input);
  pp_tensor *result = newDeviceTensor(frame, PP_DTYPE_F32, shapeOf(input));
  if (result && n > 0)
    mseLossGradKernel<<<blocksFor(n), kThreads>>>(
        deviceFloats(grad), deviceFloats(input), deviceFloats(target),
        deviceFloats(result), n, reduction);
  return checkLaunch(frame, "mse_loss_grad") ? result : nullptr;
}

pp_tensor *pp_cuda_cross_entropy(pp_frame *frame, pp_tensor *logits,
                                 pp_tensor *labels, int64_t ignore_index,
                                 int reduction) {
  if (!present({logits, labels}))
    return nullptr;
  Shape shape = shapeOf(logits);
  int64_t rows = pp_tensor_numel(labels), classes = shape.back();
  const int64_t *y = static_cast<const int64_t *>(pp_tensor_data(labels));
  pp_tensor *perRow = newDeviceTensor(frame, PP_DTYPE_F32,
                                      Shape(shape.begin(), shape.end() - 1));
  if (!perRow)
    return nullptr;
  if (rows > 0)
    crossEntropyRowsKernel<<<blocksFor(rows), kThreads>>>(
        deviceFloats(logits), y, deviceFloats(perRow), rows, classes,
        ignore_index);
  if (!checkLaunch(frame, "cross_entropy") || reduction == 2)
    return perRow;
  pp_tensor *result = newDeviceTensor(frame, PP_DTYPE_F32, {});
  if (result)
    crossEntropyReduceKernel<<<1, kThreads>>>(deviceFloats(perRow), y,
                                              deviceFloats(result), rows,
                                              ignore_index, reduction);
  pp_tensor_destroy(perRow);
  return checkLaunch(frame, "cross_entropy") ? result : nullptr;
}

pp_tensor *pp_cuda_cross_entropy_grad(pp_frame *frame, pp_tensor *grad,
                                      pp_tensor *logits, pp_tensor *labels,
                                      int64_t ignore_index, int reduction) {
  if (!present({grad, logits, labels}))
    return nullptr;
  Shape shape = shapeOf(logits);
  pp_tensor *result = newDeviceTensor(frame, PP_DTYPE_F32, shape);
  if (!result)
    return nullptr;
  crossEntropyGradKernel<<<1, kThreads>>>(
      deviceFloats(grad), deviceFloats(logits),
      static_cast<const int64_t *>(pp_tensor_data(labels)),
      deviceFloats(result), pp_tensor_numel(labels), shape.back(), ignore_index,
      reduction);
  return checkLaunch(frame, "cross_entropy_grad") ? result : nullptr;
}

} // extern "C"
