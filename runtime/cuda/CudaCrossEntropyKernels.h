//===- CudaCrossEntropyKernels.h - cross-entropy over rows ------*- C++ -*-===//
//
// The CUDA kernels of cross-entropy and its gradient over rows of logits,
// shared by pp_cuda_cross_entropy(_grad) (CudaKernels.cu), which run them
// over all of their logits, and pp_cuda_linear_cross_entropy(_grad)
// (CudaLinearCrossEntropy.cu), which run them over one chunk of rows at a
// time: a row's loss or gradient depends on that row alone, and the losses
// are added up at the end, so the chunks give the whole loss's bits.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CUDA_CUDACROSSENTROPYKERNELS_H
#define PP_RUNTIME_CUDA_CUDACROSSENTROPYKERNELS_H

#include "runtime/cuda/CudaBlockSum.h"
#include "runtime/cuda/CudaLineKernels.h"
#include "runtime/kernels/Frame.h"

namespace pp::runtime::cuda {

/// The labels of a cross-entropy kernel whose logits are `logitsShape`,
/// checked on the host (crossEntropyLabels), as a new i64 device tensor;
/// null, the error recorded, on failure.
pp_tensor *deviceLabels(pp_frame *frame, const char *kernel,
                        const Shape &logitsShape, pp_tensor *labels,
                        int64_t ignoreIndex);

/// One thread per row: its loss, of type `Loss` (the logits' T when it is
/// the result, float when crossEntropyReduceKernel sums it).
template <typename T, typename Loss>
__global__ void crossEntropyRowsKernel(const T *z, const int64_t *y,
                                       Loss *rowLoss, int64_t rows,
                                       int64_t classes, int64_t ignore) {
  int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= rows)
    return;
  if (y[r] == ignore) { // The labels were checked on the host.
    rowLoss[r] = Loss();
    return;
  }
  const T *row = z + r * classes;
  double max, total;
  softmaxNormalizer(row, classes, 1, max, total);
  rowLoss[r] = storeFloat<Loss>(
      static_cast<float>(log(total) + max - loadFloat(row[y[r]])));
}

template <typename T>
__global__ void crossEntropyReduceKernel(const float *rowLoss, const int64_t *y,
                                         T *out, int64_t rows, int64_t ignore,
                                         int reduction) {
  double local = 0, count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) {
    local += rowLoss[r];
    count += y[r] != ignore;
  }
  double sum = blockSum<kThreads>(local);
  double counted = blockSum<kThreads>(count);
  if (threadIdx.x == 0)
    out[0] = storeFloat<T>(static_cast<float>(
        reduction == 0 ? (counted > 0 ? sum / counted : 0.0) : sum));
}

/// One block: the gradient of `rows` rows of logits `z` (over `out`, which
/// may be `z`), a mean's count taken over the `countedRows` labels
/// `countedY` (all of the loss's, of which `y` may be a chunk's).
template <typename T>
__global__ void crossEntropyGradKernel(const T *g, const T *z, const int64_t *y,
                                       T *out, int64_t rows, int64_t classes,
                                       int64_t ignore, int reduction,
                                       const int64_t *countedY,
                                       int64_t countedRows) {
  __shared__ double counted;
  double count = 0;
  for (int64_t r = threadIdx.x; r < countedRows; r += kThreads)
    count += countedY[r] != ignore;
  double total = blockSum<kThreads>(count);
  if (threadIdx.x == 0)
    counted = total;
  __syncthreads();
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) {
    const T *row = z + r * classes;
    T *grad = out + r * classes;
    if (y[r] == ignore) {
      for (int64_t c = 0; c < classes; ++c)
        grad[c] = T();
      continue;
    }
    double scale = loadFloat(g[reduction == 2 ? r : 0]);
    if (reduction == 0)
      scale /= counted;
    double max, sum;
    softmaxNormalizer(row, classes, 1, max, sum);
    for (int64_t c = 0; c < classes; ++c)
      grad[c] = storeFloat<T>(static_cast<float>(
          (exp(loadFloat(row[c]) - max) / sum - (c == y[r] ? 1.0 : 0.0)) *
          scale));
  }
}

} // namespace pp::runtime::cuda

#endif // PP_RUNTIME_CUDA_CUDACROSSENTROPYKERNELS_H
