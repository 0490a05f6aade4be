//===- AttentionHeads.h - nn.attention's steps for one head -----*- C++ -*-===//
//
// The GEMMs of one head of pp_<target>_attention and _attention_grad, with
// the arguments pp_<target>_matmul gives each batch of the unfused ops'
// matmuls (MatmulOp's gradient rule for the backward), once for every
// target: the CPU and CUDA kernels differ only in their GEMM and in how
// they turn a head's scores into probabilities and a probabilities'
// gradient into the scores'.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_ATTENTIONHEADS_H
#define PP_RUNTIME_KERNELS_ATTENTIONHEADS_H

#include "runtime/kernels/AttentionGeometry.h"
#include "runtime/kernels/Frame.h"
#include "runtime/kernels/Matmul.h"

namespace pp::runtime {

/// One attention call's operands (host or device memory), read as
/// `geometry` says; bias and mask null where absent.
struct AttentionOperands {
  const AttentionGeometry &geometry;
  const float *query, *key, *value, *bias;
  const uint8_t *mask;

  AttentionOperands(const AttentionGeometry &geometry, pp_tensor *query,
                    pp_tensor *key, pp_tensor *value, pp_tensor *bias,
                    pp_tensor *mask)
      : geometry(geometry), query(floats(query)), key(floats(key)),
        value(floats(value)), bias(floats(bias)),
        mask(mask ? static_cast<const uint8_t *>(pp_tensor_data(mask))
                  : nullptr) {}

private:
  static const float *floats(pp_tensor *tensor) {
    return tensor ? static_cast<const float *>(pp_tensor_data(tensor))
                  : nullptr;
  }
};

/// What the steps below need of a target besides its softmax: the frame
/// that records errors, the operands, and the GEMM pp_<target>_matmul calls
/// per batch (hostGemm, deviceGemm).
struct AttentionTarget {
  pp_frame *frame;
  const AttentionOperands &ops;
  GemmFunction gemmFunction;

  /// C = op(A) x op(B) on f32; false with the error recorded on failure.
  bool gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
            const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
            int64_t ldc) const {
    if (gemmFunction(PP_DTYPE_F32, transA, transB, m, n, k, a, lda, b, ldb, c,
                     ldc) == PP_OK)
      return true;
    failFrame(frame, pp_last_error());
    return false;
  }
};

// A Target is an AttentionTarget with, each false with the error recorded
// in its frame on failure:
//   bool softmax(int64_t head, float *scores) const;
//     // the transform (ScoreTransform::apply) and the softmax of each row,
//     // in place
//   bool scoresGradient(int64_t head, const float *probabilities,
//                       float *gradient) const;
//     // softmax_grad's rows and the transform's gradient, in place

/// `probabilities` (Sq x Sk) = head `head`'s: its scores' GEMM, then the
/// target's transform and softmax.
template <typename Target>
bool headProbabilities(const Target &target, const AttentionOperands &ops,
                       int64_t head, float *probabilities) {
  const AttentionGeometry &g = ops.geometry;
  return target.gemm(false, g.transposeKey, g.queries, g.keys, g.depth,
                     ops.query + head * g.queryBlock(), g.depth,
                     ops.key + head * g.keyBlock(), g.keyStride(),
                     probabilities, g.keys) &&
         target.softmax(head, probabilities);
}

/// Head `head`'s result into `out` (the whole result's elements), its
/// probabilities made in `probabilities` (Sq x Sk scratch).
template <typename Target>
bool attentionHead(const Target &target, const AttentionOperands &ops,
                   int64_t head, float *probabilities, float *out) {
  const AttentionGeometry &g = ops.geometry;
  return headProbabilities(target, ops, head, probabilities) &&
         target.gemm(false, false, g.queries, g.valueDepth, g.keys,
                     probabilities, g.keys, ops.value + head * g.valueBlock(),
                     g.valueDepth, out + head * g.resultBlock(), g.valueDepth);
}

/// Head `head`'s query, key and value gradients into `dQ`, `dK` and `dV`
/// (the whole results' elements) from the result's gradient `dO`, with two
/// Sq x Sk scratch buffers.
template <typename Target>
bool attentionGradHead(const Target &target, const AttentionOperands &ops,
                       int64_t head, const float *dO, float *probabilities,
                       float *scoresGradient, float *dQ, float *dK, float *dV) {
  const AttentionGeometry &g = ops.geometry;
  const float *q = ops.query + head * g.queryBlock();
  const float *k = ops.key + head * g.keyBlock();
  const float *v = ops.value + head * g.valueBlock();
  const float *dOut = dO + head * g.resultBlock();
  float *p = probabilities, *dS = scoresGradient;
  // The weighted sum O = P V: dV = P^T dO and dP = dO V^T.
  if (!headProbabilities(target, ops, head, p) ||
      !target.gemm(true, false, g.keys, g.valueDepth, g.queries, p, g.keys,
                   dOut, g.valueDepth, dV + head * g.valueBlock(),
                   g.valueDepth) ||
      !target.gemm(false, true, g.queries, g.keys, g.valueDepth, dOut,
                   g.valueDepth, v, g.valueDepth, dS, g.keys) ||
      !target.scoresGradient(head, p, dS))
    return false;
  // The scores S = Q K (Q K^T with transposeKey): dQ = dS K^T (dS K), and
  // dK = Q^T dS (dS^T Q).
  if (!target.gemm(false, !g.transposeKey, g.queries, g.depth, g.keys, dS,
                   g.keys, k, g.keyStride(), dQ + head * g.queryBlock(),
                   g.depth))
    return false;
  return g.transposeKey
             ? target.gemm(true, false, g.keys, g.depth, g.queries, dS, g.keys,
                           q, g.depth, dK + head * g.keyBlock(), g.depth)
             : target.gemm(true, false, g.depth, g.keys, g.queries, q, g.depth,
                           dS, g.keys, dK + head * g.keyBlock(), g.keys);
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_ATTENTIONHEADS_H
