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
//   bool addBias(int64_t rows, float *logits) const;
//     // the bias added to each of `rows` rows of logits, in f32 as nn.add
//     // adds it (called only with a bias)
//   bool losses(int64_t first, int64_t rows, const float *logits) const;
//     // the losses of rows [first, first + rows), whose logits `logits`
//     // holds
//   bool gradient(int64_t first, int64_t rows, float *logits) const;
//     // their logits' gradient (cross_entropy_grad's), in place
//   bool sumBiasGradient(int64_t rows, const float *gradient) const;
//     // each column of `rows` rows of the logits' gradient added into the
//     // bias gradient's double sums, in row order as nn.sum_to adds them
//     // (called only with a bias; nothing where no bias gradient is made)

/// `logits` (rows x V) = rows [first, first + rows) of the product, plus
/// the bias.
template <typename Target>
bool chunkLogits(const Target &target, const LinearCrossEntropyOperands &ops,
                 int64_t first, int64_t rows, float *logits) {
  const LinearCrossEntropyGeometry &g = ops.geometry;
  return target.gemm(false, g.transposeWeight, rows, g.classes, g.depth,
                     ops.hidden + first * g.depth, g.depth, ops.weight,
                     g.weightStride(), 0.0f, logits, g.classes) &&
         (!g.hasBias || target.addBias(rows, logits));
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

/// The hidden states' gradient into `hiddenGrad`, the weight's into
/// `weightGrad` (added to what it holds when `addToWeightGrad`, else
/// overwritten; none with a null `weightGrad`) and the bias's sums
/// (Target::sumBiasGradient, with a bias), a chunk's logits and their
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
    return target.gemm(true, false, g.weightRows(), g.weightStride(), 0,
                       ops.hidden, 1, logits, 1, 0.0f, weightGrad,
                       g.weightStride());
  for (int64_t first = 0; first < g.rows; first += g.chunkRows) {
    int64_t rows = g.rowsFrom(first);
    const float *hidden = ops.hidden + first * g.depth;
    float beta = addToWeightGrad || first > 0 ? 1.0f : 0.0f;
    // Logits L = H op(W) + b: dH = dL op(W)^T, dW = dL^T H ([V, D]) or
    // H^T dL ([D, V]), and db the column sums of dL, over this chunk's rows.
    if (!chunkLogits(target, ops, first, rows, logits) ||
        !target.gradient(first, rows, logits) ||
        (g.hasBias && !target.sumBiasGradient(rows, logits)) ||
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
/// kernels' ABI passes them (bias null without one).
struct LinearCrossEntropyGradArgs {
  pp_tensor *grad, *hidden, *weight, *labels, *bias;
  int64_t chunkRows, ignoreIndex;
  int reduction, transposeWeight;
};

/// Where a gradient call puts the head's parameter gradients: the weight's
/// and the bias's (null: none), added into what they hold when `added`,
/// else overwritten.
struct HeadGradients {
  pp_tensor *weight = nullptr, *bias = nullptr;
  bool added = false;
};

// A target's GradientsInto is
//   bool(const LinearCrossEntropyGeometry &, const LinearCrossEntropyGradArgs
//        &, pp_tensor *hiddenGrad, const HeadGradients &)
// which runs linearCrossEntropyGradients on the target and stores the
// bias's gradient from its sums.

/// The geometry of the gradient call `args`, or nullopt with the error in
/// `frame`.
inline std::optional<LinearCrossEntropyGeometry>
gradCallGeometry(pp_frame *frame, const LinearCrossEntropyGradArgs &args) {
  return linearCrossEntropyGradCall(frame, args.grad, args.hidden, args.weight,
                                    args.labels, args.bias, args.chunkRows,
                                    args.reduction, args.transposeWeight);
}

/// The hidden states' gradient, made by `create`, and `parameters` through
/// `into`; null (nothing made) on failure.
template <typename GradientsInto>
pp_tensor *hiddenGradWith(pp_frame *frame, TensorFactory create,
                          const LinearCrossEntropyGeometry &geometry,
                          const LinearCrossEntropyGradArgs &args,
                          const HeadGradients &parameters, GradientsInto into) {
  pp_tensor *hiddenGrad = create(frame, PP_DTYPE_F32, shapeOf(args.hidden));
  if (hiddenGrad && !into(geometry, args, hiddenGrad, parameters)) {
    pp_tensor_destroy(hiddenGrad);
    return nullptr;
  }
  return hiddenGrad;
}

/// pp_<target>_linear_cross_entropy_grad: every gradient into `results`
/// (the bias's third, with one), made by `create` in result order, as the
/// memory plan places them (all null on failure).
template <typename GradientsInto>
void linearCrossEntropyGradResults(pp_frame *frame, TensorFactory create,
                                   const LinearCrossEntropyGradArgs &args,
                                   pp_tensor **results, GradientsInto into) {
  pp_tensor *shapes[] = {args.hidden, args.weight, args.bias};
  int count = args.bias ? 3 : 2;
  for (int i = 0; i < count; ++i)
    results[i] = nullptr;
  std::optional<LinearCrossEntropyGeometry> geometry =
      gradCallGeometry(frame, args);
  if (!geometry)
    return;
  for (int i = 0; i < count; ++i)
    if (!(results[i] = create(frame, PP_DTYPE_F32, shapeOf(shapes[i])))) {
      discardResults(results, count);
      return;
    }
  HeadGradients parameters{results[1], args.bias ? results[2] : nullptr,
                           /*added=*/false};
  if (!into(*geometry, args, results[0], parameters))
    discardResults(results, count);
}

/// pp_<target>_linear_cross_entropy_hidden_grad: the hidden states'
/// gradient alone, made by `create` and returned (null on failure).
template <typename GradientsInto>
pp_tensor *linearCrossEntropyHiddenGrad(pp_frame *frame, TensorFactory create,
                                        const LinearCrossEntropyGradArgs &args,
                                        GradientsInto into) {
  std::optional<LinearCrossEntropyGeometry> geometry =
      gradCallGeometry(frame, args);
  if (!geometry)
    return nullptr;
  return hiddenGradWith(frame, create, *geometry, args, HeadGradients(), into);
}

/// pp_<target>_linear_cross_entropy_grad_add: the weight's gradient added
/// into `sum` and the bias's into `biasSum` (each skipped where null: a
/// frozen parameter, or no bias); the hidden states' made by `create` and
/// returned (null on failure).
template <typename GradientsInto>
pp_tensor *linearCrossEntropyGradAdded(pp_frame *frame, TensorFactory create,
                                       pp_tensor *sum, pp_tensor *biasSum,
                                       const LinearCrossEntropyGradArgs &args,
                                       GradientsInto into) {
  std::optional<LinearCrossEntropyGeometry> geometry =
      gradCallGeometry(frame, args);
  if (!geometry ||
      (sum && !checkGradientSum(frame, "weight", sum, args.weight)) ||
      (biasSum && !checkGradientSum(frame, "bias", biasSum, args.bias)))
    return nullptr;
  return hiddenGradWith(frame, create, *geometry, args,
                        {sum, args.bias ? biasSum : nullptr, /*added=*/true},
                        into);
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_LINEARCROSSENTROPYCHUNKS_H
