//===- CudaAttention.cu - nn.attention on the GPU, one head at a time -----===//
//
// pp_cuda_attention and pp_cuda_attention_grad, the CUDA twins of
// CpuAttentionKernels.cpp, which run the unfused CUDA kernels' arithmetic
// and so give their bits. Each head runs the scores' GEMM into one Sq x Sk
// scratch buffer (the same cuBLAS call, on the frame's stream, as
// pp_cuda_matmul makes for that batch), then one elementwise kernel that
// applies the ScoreTransform with the head's bias and mask elements (the
// mul or div, add and where kernels' f32 steps) in place, then softmax's
// line functor (SoftmaxLine, CudaLineKernels.h) over the head's rows as
// pp_cuda_softmax runs it, in place, then the weighted sum's GEMM into the
// result. The gradient recomputes a head's probabilities the same way and
// runs the GEMMs pp-autodiff makes for the two matmuls, with softmax_grad's
// line functor (SoftmaxGradLine) and one elementwise kernel for the
// transform's gradient (the where and the mul or div) between them.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaFrame.h"
#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/CudaLineKernels.h"
#include "runtime/cuda/pp_kernels_cuda.h"

#include "runtime/core/Shapes.h"
#include "runtime/kernels/AttentionHeads.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>

#include <cmath>
#include <optional>
#include <string>

using namespace pp::runtime;
using namespace pp::runtime::cuda;

namespace {

/// What the transform's kernels read of one head besides its scores: the
/// head's block of the bias and of the mask (null where absent) with their
/// row and column strides (BroadcastScores), and the transform of a score.
struct HeadScores {
  int64_t keys;
  const float *bias;
  int64_t biasRow, biasColumn;
  const uint8_t *mask;
  int64_t maskRow, maskColumn;
  ScoreTransform transform;

  /// The bias's and mask's elements for score (i, j), or null without one.
  __device__ const float *biasAt(int64_t i, int64_t j) const {
    return bias ? bias + i * biasRow + j * biasColumn : nullptr;
  }
  __device__ const uint8_t *maskAt(int64_t i, int64_t j) const {
    return mask ? mask + i * maskRow + j * maskColumn : nullptr;
  }
};

/// The transform of a head's scores (Sq x Sk) in place, a thread per
/// score: the softmax's input, as the unfused mul (or div), add and where
/// kernels compute it.
__global__ void transformKernel(float *scores, int64_t n, HeadScores head) {
  int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= n)
    return;
  int64_t i = e / head.keys, j = e % head.keys;
  scores[e] =
      head.transform.apply(scores[e], head.biasAt(i, j), head.maskAt(i, j));
}

/// The transform's gradient in place on `gradient` (Sq x Sk), that of a
/// head's softmax input, a thread per score: the unfused where (a zero
/// where the mask filled) and mul (or div) kernels' steps.
__global__ void transformGradientKernel(float *gradient, int64_t n,
                                        HeadScores head) {
  int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= n)
    return;
  gradient[e] = head.transform.gradient(
      gradient[e], head.maskAt(e / head.keys, e % head.keys));
}

/// The elements of device tensor `tensor`.
float *elementsOf(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

/// The device target of AttentionHeads.h: its GEMMs queue on the calling
/// thread's GEMM stream (the caller's ScopedGemmStream), its kernels on the
/// frame's stream.
struct DeviceAttention : AttentionTarget {
  /// The transform, then pp_cuda_softmax(-1)'s lines, in place: SoftmaxLine
  /// reads the whole line (the maximum and the sum) before it writes, and
  /// then reads each element just before writing it.
  bool softmax(int64_t head, float *scores) const {
    const AttentionGeometry &g = ops.geometry;
    int64_t n = g.scoresBlock();
    if (n == 0)
      return true;
    transformKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        scores, n, scoresOf(head));
    if (!pp_cuda_launched(frame, "attention's score transform"))
      return false;
    linesKernel<<<blocksFor(g.queries), kThreads, 0, kernelStream(frame)>>>(
        SoftmaxLine{false}, g.queries, rowsOf(g), scores,
        static_cast<const float *>(scores));
    return pp_cuda_launched(frame, "attention's softmax");
  }

  /// pp_cuda_softmax_grad(-1)'s lines over `gradient` in place
  /// (SoftmaxGradLine reads the whole gradient line, the dot product,
  /// before it writes, and then each element just before writing it),
  /// then the transform's gradient.
  bool scoresGradient(int64_t head, const float *probabilities,
                      float *gradient) const {
    const AttentionGeometry &g = ops.geometry;
    int64_t n = g.scoresBlock();
    if (n == 0)
      return true;
    linesKernel<<<blocksFor(g.queries), kThreads, 0, kernelStream(frame)>>>(
        SoftmaxGradLine(), g.queries, rowsOf(g), gradient,
        static_cast<const float *>(gradient), probabilities);
    if (!pp_cuda_launched(frame, "attention_grad's softmax gradient"))
      return false;
    transformGradientKernel<<<blocksFor(n), kThreads, 0, kernelStream(frame)>>>(
        gradient, n, scoresOf(head));
    return pp_cuda_launched(frame, "attention_grad's transform gradient");
  }

  /// The rows of one head's scores as pp_cuda_softmax(-1) sees them: Sq
  /// lines of Sk elements, one after the other.
  static AxisLayout rowsOf(const AttentionGeometry &g) {
    return AxisLayout{g.queries, g.keys, 1};
  }

  /// What the transform's kernels read of head `head` besides its scores.
  HeadScores scoresOf(int64_t head) const {
    const AttentionGeometry &g = ops.geometry;
    HeadScores scores{g.keys, nullptr, 0, 0, nullptr, 0, 0, g.transform};
    if (ops.bias) {
      scores.bias = ops.bias + g.bias->headOffsets[head];
      scores.biasRow = g.bias->rowStride;
      scores.biasColumn = g.bias->columnStride;
    }
    if (ops.mask) {
      scores.mask = ops.mask + g.mask->headOffsets[head];
      scores.maskRow = g.mask->rowStride;
      scores.maskColumn = g.mask->columnStride;
    }
    return scores;
  }
};

} // namespace

extern "C" {

pp_tensor *pp_cuda_attention(pp_frame *frame, pp_tensor *query, pp_tensor *key,
                             pp_tensor *value, pp_tensor *bias, pp_tensor *mask,
                             int divide, double fill, int fill_where_true,
                             double scale, int transpose_key) {
  std::optional<AttentionGeometry> geometry =
      attentionCall(frame, "attention", query, key, value, bias, mask, divide,
                    fill, fill_where_true, scale, transpose_key);
  if (!geometry)
    return nullptr;
  pp_tensor *result =
      newDeviceTensor(frame, PP_DTYPE_F32, geometry->resultShape);
  if (!result)
    return nullptr;
  // One head's probabilities at a time: scratch, not a result.
  pp_tensor *probabilities =
      newDeviceTensor(frame, PP_DTYPE_F32, {geometry->queries, geometry->keys});
  if (!probabilities) {
    pp_tensor_destroy(result);
    return nullptr;
  }
  AttentionOperands ops(*geometry, query, key, value, bias, mask);
  DeviceAttention target{{frame, ops, deviceGemm}};
  ScopedGemmStream onFrameQueue(kernelStream(frame));
  bool ok = true;
  for (int64_t head = 0; ok && head < geometry->heads; ++head)
    ok = attentionHead(target, ops, head, elementsOf(probabilities),
                       elementsOf(result));
  pp_tensor_destroy(probabilities); // Freed in stream order, after the work.
  if (ok)
    return result;
  pp_tensor_destroy(result);
  return nullptr;
}

void pp_cuda_attention_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *query,
                            pp_tensor *key, pp_tensor *value, pp_tensor *bias,
                            pp_tensor *mask, int divide, double fill,
                            int fill_where_true, double scale,
                            int transpose_key, pp_tensor **results) {
  results[0] = results[1] = results[2] = nullptr;
  std::optional<AttentionGeometry> geometry =
      attentionGradCall(frame, grad, query, key, value, bias, mask, divide,
                        fill, fill_where_true, scale, transpose_key);
  if (!geometry || !newAttentionGradients(frame, newDeviceTensor, query, key,
                                          value, results))
    return;
  // One head's probabilities and their gradient at a time: scratch, not
  // results.
  pp_tensor *scratch = newDeviceTensor(frame, PP_DTYPE_F32,
                                       {2, geometry->queries, geometry->keys});
  if (!scratch) {
    discardResults(results, 3);
    return;
  }
  AttentionOperands ops(*geometry, query, key, value, bias, mask);
  DeviceAttention target{{frame, ops, deviceGemm}};
  ScopedGemmStream onFrameQueue(kernelStream(frame));
  float *p = elementsOf(scratch), *dS = p + geometry->scoresBlock();
  bool ok = true;
  for (int64_t head = 0; ok && head < geometry->heads; ++head)
    ok = attentionGradHead(target, ops, head, elementsOf(grad), p, dS,
                           elementsOf(results[0]), elementsOf(results[1]),
                           elementsOf(results[2]));
  pp_tensor_destroy(scratch); // Freed in stream order, after the work.
  if (!ok)
    discardResults(results, 3);
}

} // extern "C"
