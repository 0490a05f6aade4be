//===- LinearCrossEntropyChunks.h - an LM head loss by chunks ---*- C++ -*-===//
//
// pp_<target>_linear_cross_entropy and its gradient, one chunk of rows at a
// time, once for every target: the GEMMs are the ones pp-autodiff makes for
// the LM head's nn.matmul (the logits' per batch, the hidden gradient's
// dC op(W)^T, and the weight gradient's over the rows flattened, added into
// the sum chunk after chunk); the CPU and CUDA kernels differ only in their
// GEMM and in how they turn a chunk's logits into losses or into their
// gradient.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_LINEARCROSSENTROPYCHUNKS_H
#define PP_RUNTIME_KERNELS_LINEARCROSSENTROPYCHUNKS_H

#include "runtime/kernels/Frame.h"
#include "runtime/kernels/LinearCrossEntropyGeometry.h"
#include "runtime/kernels/Matmul.h"

#include <optional>

namespace pp::runtime {

/// One call's operands (host or device memory), read as `geometry` says.
struct LinearCrossEntropyOperands {
  const LinearCrossEntropyGeometry &geometry;
  const float *hidden, *weight;
};

/// What the steps below need of a target besides its rows: the frame that
/// records errors and the f32 GEMM (pp_gemm_f32, pp_cuda_gemm_f32).
struct LinearCrossEntropyTarget {
  pp_frame *frame;
  F32GemmFunction gemmFunction;

  /// C = op(A) x op(B) + beta C; false with the error recorded on failure.
  bool gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
            const float *a, int64_t lda, const float *b, int64_t ldb,
            float beta, float *c, int64_t ldc) const {
    if (gemmFunction(transA, transB, m, n, k, 1.0f, a, lda, b, ldb, beta, c,
                     ldc) == PP_OK)
      return true;
    failFrame(frame, pp_last_error());
    return false;
  }
};

// A Target is a LinearCrossEntropyTarget with, each false with the error
// recorded in its frame on failure:
//   bool losses(int64_t first, int64_t rows, const float *logits) const;
//     // the losses of rows [first, first + rows), whose logits `logits`
//     // holds
//   bool gradient(int64_t first, int64_t rows, float *logits) const;
//     // their logits' gradient (cross_entropy_grad's), in place

/// `logits` (rows x V) = rows [first, first + rows) of the product.
template <typename Target>
bool chunkLogits(const Target &target, const LinearCrossEntropyOperands &ops,
                 int64_t first, int64_t rows, float *logits) {
  const LinearCrossEntropyGeometry &g = ops.geometry;
  return target.gemm(false, g.transposeWeight, rows, g.classes, g.depth,
                     ops.hidden + first * g.depth, g.depth, ops.weight,
                     g.weightStride(), 0.0f, logits, g.classes);
}

/// Every row's loss, a chunk's logits at a time in `logits` (scratch of
/// geometry.chunkElements()).
template <typename Target>
bool linearCrossEntropyLosses(const Target &target,
                              const LinearCrossEntropyOperands &ops,
                              float *logits) {
  const LinearCrossEntropyGeometry &g = ops.geometry;
  for (int64_t first = 0; first < g.rows; first += g.chunkRows) {
    int64_t rows = g.rowsFrom(first);
    if (!chunkLogits(target, ops, first, rows, logits) ||
        !target.losses(first, rows, logits))
      return false;
  }
  return true;
}

/// The hidden states' gradient into `hiddenGrad` and the weight's into
/// `weightGrad` (added to what it holds when `addToWeightGrad`, else
/// overwritten; none with a null `weightGrad`), a chunk's logits and their
/// gradient at a time in `logits` (scratch of geometry.chunkElements()).
template <typename Target>
bool linearCrossEntropyGradients(const Target &target,
                                 const LinearCrossEntropyOperands &ops,
                                 float *logits, float *hiddenGrad,
                                 float *weightGrad, bool addToWeightGrad) {
  const LinearCrossEntropyGeometry &g = ops.geometry;
  // No rows: a made weight gradient is zero (a GEMM over k = 0 scales C by
  // beta).
  if (g.rows == 0 && weightGrad && !addToWeightGrad)
    return target.gemm(true, false, g.weightRows(), g.weightColumns(), 0,
                       ops.hidden, 1, logits, 1, 0.0f, weightGrad,
                       g.weightColumns());
  for (int64_t first = 0; first < g.rows; first += g.chunkRows) {
    int64_t rows = g.rowsFrom(first);
    const float *hidden = ops.hidden + first * g.depth;
    float beta = addToWeightGrad || first > 0 ? 1.0f : 0.0f;
    // Logits L = H op(W): dH = dL op(W)^T, and dW = dL^T H ([V, D]) or
    // H^T dL ([D, V]), over this chunk's rows.
    if (!chunkLogits(target, ops, first, rows, logits) ||
        !target.gradient(first, rows, logits) ||
        !target.gemm(false, !g.transposeWeight, rows, g.depth, g.classes,
                     logits, g.classes, ops.weight, g.weightStride(), 0.0f,
                     hiddenGrad + first * g.depth, g.depth))
      return false;
    if (!weightGrad)
      continue;
    bool added =
        g.transposeWeight
            ? target.gemm(true, false, g.classes, g.depth, rows, logits,
                          g.classes, hidden, g.depth, beta, weightGrad, g.depth)
            : target.gemm(true, false, g.depth, g.classes, rows, hidden,
                          g.depth, logits, g.classes, beta, weightGrad,
                          g.classes);
    if (!added)
      return false;
  }
  return true;
}

/// A linear_cross_entropy_grad call's operands and attributes, as the
/// kernels' ABI passes them.
struct LinearCrossEntropyGradArgs {
  pp_tensor *grad, *hidden, *weight, *labels;
  int64_t chunkRows, ignoreIndex;
  int reduction, transposeWeight;
};

// A target's GradientsInto is
//   bool(const LinearCrossEntropyGeometry &, const LinearCrossEntropyGradArgs
//        &, pp_tensor *hiddenGrad, pp_tensor *weightGrad, bool addToWeightGrad)
// which runs linearCrossEntropyGradients on the target.

/// pp_<target>_linear_cross_entropy_grad: both gradients into `results`,
/// made by `create` (both null on failure).
template <typename GradientsInto>
void linearCrossEntropyGradResults(pp_frame *frame, TensorFactory create,
                                   const LinearCrossEntropyGradArgs &args,
                                   pp_tensor **results, GradientsInto into) {
  results[0] = results[1] = nullptr;
  std::optional<LinearCrossEntropyGeometry> geometry =
      linearCrossEntropyGradCall(frame, args.grad, args.hidden, args.weight,
                                 args.labels, args.chunkRows, args.reduction,
                                 args.transposeWeight);
  if (!geometry)
    return;
  results[0] = create(frame, PP_DTYPE_F32, shapeOf(args.hidden));
  results[1] =
      results[0] ? create(frame, PP_DTYPE_F32, shapeOf(args.weight)) : nullptr;
  if (!results[1] ||
      !into(*geometry, args, results[0], results[1], /*addToWeightGrad=*/false))
    discardResults(results, 2);
}

/// pp_<target>_linear_cross_entropy_hidden_grad: the hidden states'
/// gradient alone, made by `create` and returned (null on failure).
template <typename GradientsInto>
pp_tensor *linearCrossEntropyHiddenGrad(pp_frame *frame, TensorFactory create,
                                        const LinearCrossEntropyGradArgs &args,
                                        GradientsInto into) {
  std::optional<LinearCrossEntropyGeometry> geometry =
      linearCrossEntropyGradCall(frame, args.grad, args.hidden, args.weight,
                                 args.labels, args.chunkRows, args.reduction,
                                 args.transposeWeight);
  if (!geometry)
    return nullptr;
  pp_tensor *hiddenGrad = create(frame, PP_DTYPE_F32, shapeOf(args.hidden));
  if (hiddenGrad && !into(*geometry, args, hiddenGrad, nullptr,
                          /*addToWeightGrad=*/false)) {
    pp_tensor_destroy(hiddenGrad);
    return nullptr;
  }
  return hiddenGrad;
}

/// pp_<target>_linear_cross_entropy_grad_add: the weight's gradient added
/// into `sum`; the hidden states' made by `create` and returned (null on
/// failure).
template <typename GradientsInto>
pp_tensor *linearCrossEntropyGradAdded(pp_frame *frame, TensorFactory create,
                                       pp_tensor *sum,
                                       const LinearCrossEntropyGradArgs &args,
                                       GradientsInto into) {
  std::optional<LinearCrossEntropyGeometry> geometry =
      linearCrossEntropyGradCall(frame, args.grad, args.hidden, args.weight,
                                 args.labels, args.chunkRows, args.reduction,
                                 args.transposeWeight);
  if (!geometry || !checkWeightGradientSum(frame, sum, args.weight))
    return nullptr;
  pp_tensor *hiddenGrad = create(frame, PP_DTYPE_F32, shapeOf(args.hidden));
  if (hiddenGrad &&
      !into(*geometry, args, hiddenGrad, sum, /*addToWeightGrad=*/true)) {
    pp_tensor_destroy(hiddenGrad);
    return nullptr;
  }
  return hiddenGrad;
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_LINEARCROSSENTROPYCHUNKS_H
