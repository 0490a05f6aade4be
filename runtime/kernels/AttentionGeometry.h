//===- AttentionGeometry.h - the shapes of an nn.attention call -*- C++ -*-===//
//
// nn.attention and nn.attention_grad (dialects/nn/IR/NNOps.td) on one
// target: how many heads, the sizes of one head's query, key, value and
// scores, where each head's block of a broadcast bias or mask starts, and
// the per-score transform before the softmax. The CPU and CUDA kernels
// share it, so that both read their operands the same way.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H
#define PP_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H

#include "runtime/core/HostDevice.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/pp_kernels.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// A bias or mask broadcast to the scores `[..., Sq, Sk]`: the offset of
/// each head's `Sq x Sk` block, and the strides of a row and a column
/// within it (0 along a broadcast dimension).
struct BroadcastScores {
  std::vector<int64_t> headOffsets;
  int64_t rowStride = 0;
  int64_t columnStride = 0;
};

/// The attributes of an attention call: how a score becomes the softmax's
/// input, as the ops it replaces computed it (each step in f32).
struct ScoreTransform {
  float scale = 1.0f;
  bool divide = false;
  float fill = 0.0f;
  /// Whether a score becomes `fill` where the mask is true (else where it
  /// is false); any nonzero mask byte is true, as nn.where reads it.
  bool fillWhereTrue = false;

  /// True when the mask element `mask` (null without a mask) fills.
  PP_HOST_DEVICE bool fills(const uint8_t *mask) const {
    return mask && (*mask != 0) == fillWhereTrue;
  }

  /// The scaled score, biased by `bias` when there is one.
  PP_HOST_DEVICE float scaled(float score) const {
    return divide ? score / scale : score * scale;
  }
  /// The softmax's input for `score`, `bias` and `mask` (null where absent).
  PP_HOST_DEVICE float apply(float score, const float *bias,
                             const uint8_t *mask) const {
    float value = scaled(score);
    if (bias)
      value = value + *bias;
    if (fills(mask))
      value = fill;
    return value;
  }
  /// The gradient of the score from that of the softmax's input: zero
  /// where the mask filled it, then scaled as the score was.
  PP_HOST_DEVICE float gradient(float inputGradient,
                                const uint8_t *mask) const {
    if (fills(mask))
      inputGradient = 0.0f;
    return divide ? inputGradient / scale : inputGradient * scale;
  }
};

/// One attention call's shapes: `heads` independent products over the
/// leading dimensions that query, key and value share.
struct AttentionGeometry {
  int64_t heads = 0;
  int64_t queries = 0;    ///< Sq
  int64_t keys = 0;       ///< Sk
  int64_t depth = 0;      ///< D, of query and key
  int64_t valueDepth = 0; ///< Dv
  bool transposeKey = false;
  std::vector<int64_t> resultShape;
  std::optional<BroadcastScores> bias, mask;
  ScoreTransform transform;

  /// Elements of one head's query, key, value, result and scores.
  int64_t queryBlock() const { return queries * depth; }
  int64_t keyBlock() const { return keys * depth; }
  int64_t valueBlock() const { return keys * valueDepth; }
  int64_t resultBlock() const { return queries * valueDepth; }
  int64_t scoresBlock() const { return queries * keys; }
  /// The row stride of a head's key as stored ([D, Sk], or [Sk, D] with
  /// transposeKey).
  int64_t keyStride() const { return transposeKey ? depth : keys; }
};

/// The geometry of `kernel` ("attention", "attention_grad") on these
/// operands (bias and mask may be null) and attributes, or nullopt with
/// `error` saying which operands disagree: f32 query, key and value of one
/// rank sharing their leading dimensions, a bias (f32) and mask (bool)
/// that broadcast to the scores.
std::optional<AttentionGeometry>
planAttention(const char *kernel, const pp_tensor *query, const pp_tensor *key,
              const pp_tensor *value, const pp_tensor *bias,
              const pp_tensor *mask, int divide, double fill, int fillWhereTrue,
              double scale, int transposeKey, std::string &error);

/// planAttention for a kernel call: the geometry, or nullopt with the error
/// recorded in `frame` (nothing more after an earlier failure, when an
/// operand is null).
std::optional<AttentionGeometry>
attentionCall(pp_frame *frame, const char *kernel, const pp_tensor *query,
              const pp_tensor *key, const pp_tensor *value,
              const pp_tensor *bias, const pp_tensor *mask, int divide,
              double fill, int fillWhereTrue, double scale, int transposeKey);

/// attentionCall for attention_grad, whose `grad` must be f32 of the
/// attention's result shape.
std::optional<AttentionGeometry>
attentionGradCall(pp_frame *frame, const pp_tensor *grad,
                  const pp_tensor *query, const pp_tensor *key,
                  const pp_tensor *value, const pp_tensor *bias,
                  const pp_tensor *mask, int divide, double fill,
                  int fillWhereTrue, double scale, int transposeKey);

/// Makes attention_grad's three results with `create`, like `query`, `key`
/// and `value` in that order; false, every result null, when one fails.
bool newAttentionGradients(pp_frame *frame, TensorFactory create,
                           const pp_tensor *query, const pp_tensor *key,
                           const pp_tensor *value, pp_tensor **results);

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H
