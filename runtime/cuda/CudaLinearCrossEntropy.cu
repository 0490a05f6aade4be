//===- CudaLinearCrossEntropy.cu - an LM head loss by chunks on the GPU ---===//
//
// pp_cuda_linear_cross_entropy and its gradient, the CUDA twins of
// CpuLinearCrossEntropyKernels.cpp: each chunk of rows runs the logits'
// GEMM into one chunk of scratch (the cuBLAS call pp_cuda_matmul makes per
// batch, on the frame's stream), then pp_cuda_cross_entropy's row kernel
// into the rows' losses, which its reduce kernel adds up at the end; the
// gradient recomputes a chunk's logits, runs pp_cuda_cross_entropy_grad's
// kernel over them in place, and multiplies them into the hidden states'
// gradient and into the weight's (LinearCrossEntropyChunks.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaCrossEntropyKernels.h"
#include "runtime/cuda/CudaFrame.h"
#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/cuda/pp_runtime_cuda.h"

#include "runtime/kernels/Frame.h"
#include "runtime/kernels/LinearCrossEntropyChunks.h"

#include <cuda_runtime.h>

#include <optional>
#include <string>

using namespace pp::runtime;
using namespace pp::runtime::cuda;

namespace {

float *elementsOf(pp_tensor *tensor) {
  return tensor ? static_cast<float *>(pp_tensor_data(tensor)) : nullptr;
}

/// One thread per logit: the bias added in f32, as the add kernel adds it.
__global__ void addBiasKernel(float *logits, const float *bias, int64_t n,
                              int64_t classes) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n)
    logits[i] = logits[i] + bias[i % classes];
}

/// One thread per class: its column of `rows` rows of the logits' gradient
/// added into its double sum in row order, as sum_to's kernel adds a group.
__global__ void sumColumnsKernel(const float *gradient, double *sums,
                                 int64_t rows, int64_t classes) {
  int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= classes)
    return;
  double sum = sums[c];
  for (int64_t r = 0; r < rows; ++r)
    sum += gradient[r * classes + c];
  sums[c] = sum;
}

/// One thread per class: the bias gradient rounded once to f32, added to
/// what `out` holds when `added` (a gradient into its sum).
__global__ void storeSumsKernel(const double *sums, float *out, int64_t classes,
                                bool added) {
  int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c < classes)
    out[c] = added ? out[c] + static_cast<float>(sums[c])
                   : static_cast<float>(sums[c]);
}

/// The device target of LinearCrossEntropyChunks.h: the row kernels of
/// pp_cuda_cross_entropy and pp_cuda_cross_entropy_grad.
struct DeviceLinearCrossEntropy : LinearCrossEntropyTarget {
  const LinearCrossEntropyGeometry &geometry;
  /// The checked labels (device, i64), all of the call's.
  const int64_t *labels;
  int64_t ignoreIndex;
  int reduction;
  /// Each row's loss (the forward; device, f32).
  float *rowLosses = nullptr;
  /// The loss's gradient (the backward; device).
  const float *lossGrad = nullptr;
  /// The bias (null without one) and its gradient's sums (the backward;
  /// device).
  const float *bias = nullptr;
  double *biasSums = nullptr;

  bool addBias(int64_t rows, float *logits) const {
    int64_t n = rows * geometry.classes;
    addBiasKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        logits, bias, n, geometry.classes);
    return pp_cuda_launched(frame, "linear_cross_entropy's bias");
  }

  bool sumBiasGradient(int64_t rows, const float *gradient) const {
    if (!biasSums)
      return true;
    sumColumnsKernel<<<blocksFor(geometry.classes), kThreads, 0,
                       kernelStream(frame)>>>(gradient, biasSums, rows,
                                              geometry.classes);
    return pp_cuda_launched(frame, "linear_cross_entropy_grad's bias sums");
  }

  bool losses(int64_t first, int64_t rows, const float *logits) const {
    crossEntropyRowsKernel<float, float>
        <<<blocksFor(rows), kThreads, 0, kernelStream(frame)>>>(
            logits, labels + first, rowLosses + first, rows, geometry.classes,
            ignoreIndex);
    return pp_cuda_launched(frame, "linear_cross_entropy's losses");
  }

  bool gradient(int64_t first, int64_t rows, float *logits) const {
    crossEntropyGradKernel<float><<<1, kThreads, 0, kernelStream(frame)>>>(
        reduction == 2 ? lossGrad + first : lossGrad, logits, labels + first,
        logits, rows, geometry.classes, ignoreIndex, reduction, labels,
        geometry.rows);
    return pp_cuda_launched(frame, "linear_cross_entropy_grad's rows");
  }
};

/// The labels and one chunk's scratch of a call: both null, the error
/// recorded, when either cannot be made.
struct CallBuffers {
  pp_tensor *labels = nullptr, *logits = nullptr;

  CallBuffers(pp_frame *frame, const char *kernel,
              const LinearCrossEntropyGeometry &geometry, pp_tensor *labels,
              int64_t ignoreIndex)
      : labels(deviceLabels(frame, kernel, geometry.logitsShape, labels,
                            ignoreIndex)) {
    if (this->labels)
      logits = newDeviceTensor(frame, PP_DTYPE_F32, {geometry.chunkElements()});
  }
  /// Freed in stream order, after the work.
  ~CallBuffers() {
    pp_tensor_destroy(logits);
    pp_tensor_destroy(labels);
  }
  bool made() const { return logits != nullptr; }
  const int64_t *labelValues() const {
    return static_cast<const int64_t *>(pp_tensor_data(labels));
  }
};

/// The gradients of the hidden states into `hiddenGrad` and of the head's
/// parameters into `parameters`: the device's GradientsInto.
bool gradientsInto(const LinearCrossEntropyGeometry &geometry,
                   const LinearCrossEntropyGradArgs &args,
                   pp_tensor *hiddenGrad, const HeadGradients &parameters,
                   pp_frame *frame) {
  CallBuffers buffers(frame, "linear_cross_entropy_grad", geometry, args.labels,
                      args.ignoreIndex);
  if (!buffers.made())
    return false;
  // The bias gradient's sums, zeroed in stream order.
  pp_tensor *biasSums =
      parameters.bias ? newDeviceTensor(frame, PP_DTYPE_F64, {geometry.classes})
                      : nullptr;
  if (parameters.bias &&
      (!biasSums ||
       cudaMemsetAsync(pp_tensor_data(biasSums), 0, pp_tensor_nbytes(biasSums),
                       kernelStream(frame)) != cudaSuccess)) {
    failFrame(frame, "linear_cross_entropy_grad: cannot make the bias "
                     "gradient's sums");
    pp_tensor_destroy(biasSums);
    return false;
  }
  DeviceLinearCrossEntropy target{{frame, pp_cuda_gemm_f32},
                                  geometry,
                                  buffers.labelValues(),
                                  args.ignoreIndex,
                                  args.reduction};
  target.lossGrad = elementsOf(args.grad);
  target.bias = elementsOf(args.bias);
  target.biasSums =
      biasSums ? static_cast<double *>(pp_tensor_data(biasSums)) : nullptr;
  LinearCrossEntropyOperands ops{geometry, elementsOf(args.hidden),
                                 elementsOf(args.weight)};
  bool ok;
  {
    ScopedGemmStream onFrameQueue(kernelStream(frame));
    ok = linearCrossEntropyGradients(
        target, ops, elementsOf(buffers.logits), elementsOf(hiddenGrad),
        elementsOf(parameters.weight), parameters.added);
  }
  if (ok && parameters.bias) {
    storeSumsKernel<<<blocksFor(geometry.classes), kThreads, 0,
                      kernelStream(frame)>>>(
        target.biasSums, elementsOf(parameters.bias), geometry.classes,
        parameters.added);
    ok = pp_cuda_launched(frame, "linear_cross_entropy_grad's bias gradient");
  }
  pp_tensor_destroy(biasSums); // Freed in stream order, after the work.
  return ok;
}

/// gradientsInto for the calls of `frame`.
auto deviceGradientsInto(pp_frame *frame) {
  return [frame](const LinearCrossEntropyGeometry &geometry,
                 const LinearCrossEntropyGradArgs &args, pp_tensor *hiddenGrad,
                 const HeadGradients &parameters) {
    return gradientsInto(geometry, args, hiddenGrad, parameters, frame);
  };
}

} // namespace

extern "C" {

pp_tensor *pp_cuda_linear_cross_entropy(pp_frame *frame, pp_tensor *hidden,
                                        pp_tensor *weight, pp_tensor *labels,
                                        pp_tensor *bias, int64_t chunk_rows,
                                        int64_t ignore_index, int reduction,
                                        int transpose_weight) {
  std::optional<LinearCrossEntropyGeometry> geometry = linearCrossEntropyCall(
      frame, "linear_cross_entropy", hidden, weight, labels, bias, chunk_rows,
      reduction, transpose_weight);
  if (!geometry)
    return nullptr;
  CallBuffers buffers(frame, "linear_cross_entropy", *geometry, labels,
                      ignore_index);
  if (!buffers.made())
    return nullptr;
  // The rows' losses: the result for reduction none, else what the reduce
  // kernel adds up.
  pp_tensor *rowLosses = newDeviceTensor(
      frame, PP_DTYPE_F32,
      Shape(geometry->logitsShape.begin(), geometry->logitsShape.end() - 1));
  bool reduced = reduction != 2;
  pp_tensor *result = rowLosses && reduced
                          ? newDeviceTensor(frame, PP_DTYPE_F32, {})
                          : rowLosses;
  if (!result) {
    pp_tensor_destroy(rowLosses);
    return nullptr;
  }
  DeviceLinearCrossEntropy target{{frame, pp_cuda_gemm_f32},
                                  *geometry,
                                  buffers.labelValues(),
                                  ignore_index,
                                  reduction};
  target.rowLosses = elementsOf(rowLosses);
  target.bias = elementsOf(bias);
  LinearCrossEntropyOperands ops{*geometry, elementsOf(hidden),
                                 elementsOf(weight)};
  bool ok;
  {
    ScopedGemmStream onFrameQueue(kernelStream(frame));
    ok = linearCrossEntropyLosses(target, ops, elementsOf(buffers.logits));
  }
  if (ok && reduced) {
    crossEntropyReduceKernel<float><<<1, kThreads, 0, kernelStream(frame)>>>(
        elementsOf(rowLosses), buffers.labelValues(), elementsOf(result),
        geometry->rows, ignore_index, reduction);
    ok = pp_cuda_launched(frame, "linear_cross_entropy's sum");
  }
  if (result != rowLosses)
    pp_tensor_destroy(rowLosses); // Freed in stream order, after the work.
  if (ok)
    return result;
  pp_tensor_destroy(result);
  return nullptr;
}

void pp_cuda_linear_cross_entropy_grad(pp_frame *frame, pp_tensor *grad,
                                       pp_tensor *hidden, pp_tensor *weight,
                                       pp_tensor *labels, pp_tensor *bias,
                                       int64_t chunk_rows, int64_t ignore_index,
                                       int reduction, int transpose_weight,
                                       pp_tensor **results) {
  linearCrossEntropyGradResults(frame, newDeviceTensor,
                                {grad, hidden, weight, labels, bias, chunk_rows,
                                 ignore_index, reduction, transpose_weight},
                                results, deviceGradientsInto(frame));
}

pp_tensor *pp_cuda_linear_cross_entropy_grad_add(
    pp_frame *frame, pp_tensor *sum, pp_tensor *bias_sum, pp_tensor *grad,
    pp_tensor *hidden, pp_tensor *weight, pp_tensor *labels, pp_tensor *bias,
    int64_t chunk_rows, int64_t ignore_index, int reduction,
    int transpose_weight) {
  return linearCrossEntropyGradAdded(frame, newDeviceTensor, sum, bias_sum,
                                     {grad, hidden, weight, labels, bias,
                                      chunk_rows, ignore_index, reduction,
                                      transpose_weight},
                                     deviceGradientsInto(frame));
}

pp_tensor *pp_cuda_linear_cross_entropy_hidden_grad(
    pp_frame *frame, pp_tensor *grad, pp_tensor *hidden, pp_tensor *weight,
    pp_tensor *labels, pp_tensor *bias, int64_t chunk_rows,
    int64_t ignore_index, int reduction, int transpose_weight) {
  return linearCrossEntropyHiddenGrad(frame, newDeviceTensor,
                                      {grad, hidden, weight, labels, bias,
                                       chunk_rows, ignore_index, reduction,
                                       transpose_weight},
                                      deviceGradientsInto(frame));
}

} // extern "C"
