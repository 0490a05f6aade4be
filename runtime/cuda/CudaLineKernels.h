//===- CudaLineKernels.h - kernels over an axis's lines ---------*- C++ -*-===//
//
// The launch shape of the elementwise CUDA kernels (kThreads, blocksFor),
// and the kernel that runs a functor on each line along one axis, one
// thread per line (linesKernel), with the line functors of softmax and
// log_softmax and of softmax's gradient. CudaKernels.cu runs them for
// pp_cuda_softmax and its kin; CudaAttention.cu runs the same functors on
// each head's scores, so that the fused attention gives the unfused
// kernels' bits.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CUDA_CUDALINEKERNELS_H
#define PP_RUNTIME_CUDA_CUDALINEKERNELS_H

#include "runtime/core/Shapes.h"
#include "runtime/kernels/FloatElements.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace pp::runtime::cuda {

/// The threads of a block of the elementwise and line kernels.
constexpr int kThreads = 256;

/// The blocks of kThreads threads that give `n` items a thread each.
inline unsigned blocksFor(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

/// The maximum of `n` logits `stride` apart and the sum of exp(logit -
/// maximum): softmax[c] = exp(line[c * stride] - max) / total.
template <typename T>
__device__ void softmaxNormalizer(const T *line, int64_t n, int64_t stride,
                                  double &max, double &total) {
  max = -INFINITY;
  total = 0;
  for (int64_t c = 0; c < n; ++c)
    max = fmax(max, static_cast<double>(loadFloat(line[c * stride])));
  for (int64_t c = 0; c < n; ++c)
    total += exp(loadFloat(line[c * stride]) - max);
}

/// The element offset where line `l` along the axis of `layout` starts;
/// its elements are `layout.inner` apart.
__device__ inline int64_t lineStart(AxisLayout layout, int64_t l) {
  return (l / layout.inner) * layout.size * layout.inner + l % layout.inner;
}

/// One thread per line along the axis of `layout`: `line(start, layout,
/// out, inputs...)` on the line that starts at element `start`.
template <typename Line, typename T, typename... Inputs>
__global__ void linesKernel(Line line, int64_t lines, AxisLayout layout, T *out,
                            const Inputs *...inputs) {
  int64_t l = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (l < lines)
    line(lineStart(layout, l), layout, out, inputs...);
}

// The line kernels (linesKernel) of softmax and log_softmax and of
// softmax's gradient; a line's elements are `layout.inner` apart.

/// softmax, or log_softmax when `logarithm`.
struct SoftmaxLine {
  bool logarithm;

  template <typename T>
  __device__ void operator()(int64_t start, AxisLayout layout, T *out,
                             const T *in) const {
    double max, total;
    softmaxNormalizer(in + start, layout.size, layout.inner, max, total);
    double shift = max + log(total);
    for (int64_t k = 0; k < layout.size; ++k) {
      int64_t at = start + k * layout.inner;
      double x = loadFloat(in[at]);
      out[at] = storeFloat<T>(
          static_cast<float>(logarithm ? x - shift : exp(x - max) / total));
    }
  }
};

/// softmax_grad: `out` = y * (g - dot(g, y)) for the softmax's result `y`
/// and its gradient `g`, the dot product in double.
struct SoftmaxGradLine {
  template <typename T>
  __device__ void operator()(int64_t start, AxisLayout layout, T *out,
                             const T *g, const T *y) const {
    double dot = 0;
    for (int64_t k = 0; k < layout.size; ++k) {
      int64_t at = start + k * layout.inner;
      dot += static_cast<double>(loadFloat(g[at])) * loadFloat(y[at]);
    }
    for (int64_t k = 0; k < layout.size; ++k) {
      int64_t at = start + k * layout.inner;
      out[at] = storeFloat<T>(
          static_cast<float>(loadFloat(y[at]) * (loadFloat(g[at]) - dot)));
    }
  }
};

} // namespace pp::runtime::cuda

#endif // PP_RUNTIME_CUDA_CUDALINEKERNELS_H
