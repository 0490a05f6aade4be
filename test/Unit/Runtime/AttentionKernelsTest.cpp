//===- AttentionKernelsTest.cpp - nn.attention against its unfused ops ----===//
//
// pp_cpu_attention and pp_cpu_attention_grad must give the bits of the
// kernels of the ops pp-fuse-attention replaces (matmul, mul or div,
// add, where, softmax, matmul) and of the backward pp-autodiff builds for
// them (the matmuls' gradients, softmax_grad, where, mul or div), which
// is what keeps a fused program's training bit for bit the unfused one's.
//
//===----------------------------------------------------------------------===//

#include "HostTensors.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

Tensor scalar(pp_frame &frame, float value) {
  return Tensor(pp_cpu_constant(&frame, PP_DTYPE_F32, 0, nullptr, 1, &value));
}

/// One attention's operands and attributes.
struct Attention {
  Tensor query, key, value, bias, mask;
  bool divide = false, fillWhereTrue = false, transposeKey = false;
  float scale = 0.125f, fill = -std::numeric_limits<float>::infinity();
};

/// An attention of 2 x 3 heads, 5 queries, 7 keys, depth 4 and value depth
/// 6, the key stored [D, Sk] (or [Sk, D] with `transposeKey`).
Attention attentionOf(bool transposeKey) {
  Attention a;
  a.transposeKey = transposeKey;
  a.query = filled({2, 3, 5, 4}, 0.1f);
  a.key = filled(transposeKey ? std::vector<int64_t>{2, 3, 7, 4}
                              : std::vector<int64_t>{2, 3, 4, 7},
                 0.7f);
  a.value = filled({2, 3, 7, 6}, 1.9f);
  return a;
}

/// The scale, bias and mask of the unfused ops, from the scores to the
/// softmax's input.
Tensor transformed(pp_frame &frame, const Attention &a, Tensor scores) {
  Tensor factor = scalar(frame, a.scale);
  Tensor result(a.divide ? pp_cpu_div(&frame, scores.get(), factor.get())
                         : pp_cpu_mul(&frame, scores.get(), factor.get()));
  if (a.bias)
    result.reset(pp_cpu_add(&frame, result.get(), a.bias.get()));
  if (a.mask) {
    Tensor fill = scalar(frame, a.fill);
    result.reset(
        a.fillWhereTrue
            ? pp_cpu_where(&frame, a.mask.get(), fill.get(), result.get())
            : pp_cpu_where(&frame, a.mask.get(), result.get(), fill.get()));
  }
  return result;
}

Tensor unfusedProbabilities(pp_frame &frame, const Attention &a) {
  Tensor scores(
      pp_cpu_matmul(&frame, a.query.get(), a.key.get(), 0, a.transposeKey));
  Tensor input = transformed(frame, a, std::move(scores));
  return Tensor(pp_cpu_softmax(&frame, input.get(), -1));
}

Tensor fused(pp_frame &frame, const Attention &a) {
  return Tensor(pp_cpu_attention(&frame, a.query.get(), a.key.get(),
                                 a.value.get(), a.bias.get(), a.mask.get(),
                                 a.divide, a.fill, a.fillWhereTrue, a.scale,
                                 a.transposeKey));
}

/// Checks the forward and the three gradients against the unfused ops.
void expectUnfusedBits(const Attention &a) {
  pp_frame frame;
  Tensor probabilities = unfusedProbabilities(frame, a);
  Tensor expected(
      pp_cpu_matmul(&frame, probabilities.get(), a.value.get(), 0, 0));
  Tensor output = fused(frame, a);
  ASSERT_EQ(frame.error, "");
  EXPECT_TRUE(sameBits(output, expected)) << "forward";

  // The backward pp-autodiff builds: the weighted sum's gradients, then
  // softmax_grad, where's and the scale's, then the scores' gradients.
  Tensor dOut = filled({2, 3, 5, 6}, 2.3f);
  Tensor dValue(pp_cpu_matmul(&frame, probabilities.get(), dOut.get(), 1, 0));
  Tensor dProbabilities(pp_cpu_matmul(&frame, dOut.get(), a.value.get(), 0, 1));
  Tensor dScores(pp_cpu_softmax_grad(&frame, dProbabilities.get(),
                                     probabilities.get(), -1));
  if (a.mask) {
    Tensor zero = scalar(frame, 0.0f);
    dScores.reset(
        a.fillWhereTrue
            ? pp_cpu_where(&frame, a.mask.get(), zero.get(), dScores.get())
            : pp_cpu_where(&frame, a.mask.get(), dScores.get(), zero.get()));
  }
  Tensor factor = scalar(frame, a.scale);
  dScores.reset(a.divide ? pp_cpu_div(&frame, dScores.get(), factor.get())
                         : pp_cpu_mul(&frame, dScores.get(), factor.get()));
  Tensor dQuery(
      pp_cpu_matmul(&frame, dScores.get(), a.key.get(), 0, !a.transposeKey));
  Tensor dKey(a.transposeKey
                  ? pp_cpu_matmul(&frame, dScores.get(), a.query.get(), 1, 0)
                  : pp_cpu_matmul(&frame, a.query.get(), dScores.get(), 1, 0));
  pp_tensor *results[3] = {};
  pp_cpu_attention_grad(&frame, dOut.get(), a.query.get(), a.key.get(),
                        a.value.get(), a.bias.get(), a.mask.get(), a.divide,
                        a.fill, a.fillWhereTrue, a.scale, a.transposeKey,
                        results);
  ASSERT_EQ(frame.error, "");
  Tensor gotQuery(results[0]), gotKey(results[1]), gotValue(results[2]);
  EXPECT_TRUE(sameBits(gotQuery, dQuery)) << "query gradient";
  EXPECT_TRUE(sameBits(gotKey, dKey)) << "key gradient";
  EXPECT_TRUE(sameBits(gotValue, dValue)) << "value gradient";
}

TEST(AttentionKernels, ScaledScoresGiveTheUnfusedBits) {
  expectUnfusedBits(attentionOf(/*transposeKey=*/false));
}

TEST(AttentionKernels, BiasBroadcastOverHeadsGivesTheUnfusedBits) {
  Attention a = attentionOf(false);
  // A causal bias of a GPT-2 export: per batch, shared by the heads.
  a.bias = filled({2, 1, 5, 7}, 0.4f);
  expectUnfusedBits(a);
}

TEST(AttentionKernels, MaskedFillWithTransposedKeyGivesTheUnfusedBits) {
  Attention a = attentionOf(/*transposeKey=*/true);
  a.mask = filled({5, 7}, 1.0f, PP_DTYPE_BOOL);
  a.fillWhereTrue = true;
  a.divide = true;
  a.scale = 2.0f;
  expectUnfusedBits(a);
}

TEST(AttentionKernels, BiasThenKeptWhereTrueGivesTheUnfusedBits) {
  Attention a = attentionOf(false);
  a.bias = filled({7}, 0.9f);
  a.mask = filled({1, 3, 5, 7}, 2.0f, PP_DTYPE_BOOL);
  a.fill = -1.0e9f;
  expectUnfusedBits(a);
}

TEST(AttentionKernels, RefusesOperandsThatDisagreeNamingTheirShapes) {
  pp_frame frame;
  Attention a = attentionOf(false);
  a.value = filled({2, 3, 6, 6}, 0.0f);
  EXPECT_EQ(fused(frame, a), nullptr);
  EXPECT_EQ(frame.error,
            "attention: query, key and value disagree on the depth or the key "
            "positions: 2x3x5x4, 2x3x4x7 and 2x3x6x6 (key [..., D, Sk])");
}

TEST(AttentionKernels, RefusesAMaskThatDoesNotBroadcast) {
  pp_frame frame;
  Attention a = attentionOf(false);
  a.mask = filled({3, 7}, 0.0f, PP_DTYPE_BOOL);
  EXPECT_EQ(fused(frame, a), nullptr);
  EXPECT_EQ(frame.error, "attention: the mask 3x7 does not broadcast to "
                         "the scores 2x3x5x7");
}

TEST(AttentionKernels, RefusesHalfPrecisionOperands) {
  pp_frame frame;
  Attention a = attentionOf(false);
  a.query = filled({2, 3, 5, 4}, 0.0f, PP_DTYPE_BF16);
  EXPECT_EQ(fused(frame, a), nullptr);
  EXPECT_EQ(frame.error, "attention: query, key, value and bias must be f32, "
                         "got bf16 (pp-fuse-attention fuses f32 attention "
                         "only)");
}

TEST(AttentionKernels, GradientOfAnotherShapeLeavesNoResults) {
  pp_frame frame;
  Attention a = attentionOf(false);
  Tensor dOut = filled({2, 3, 5, 7}, 0.0f);
  pp_tensor *results[3] = {a.query.get(), a.query.get(), a.query.get()};
  pp_cpu_attention_grad(&frame, dOut.get(), a.query.get(), a.key.get(),
                        a.value.get(), nullptr, nullptr, 0, 0.0, 0, 1.0, 0,
                        results);
  EXPECT_EQ(results[0], nullptr);
  EXPECT_EQ(results[1], nullptr);
  EXPECT_EQ(results[2], nullptr);
  EXPECT_EQ(frame.error, "attention_grad: the gradient is f32 2x3x5x7, the "
                         "attention's result f32 2x3x5x6");
}

TEST(AttentionKernels, NullOperandFromAnEarlierFailurePassesThrough) {
  pp_frame frame;
  Attention a = attentionOf(false);
  EXPECT_EQ(pp_cpu_attention(&frame, nullptr, a.key.get(), a.value.get(),
                             nullptr, nullptr, 0, 0.0, 0, 1.0, 0),
            nullptr);
  EXPECT_EQ(frame.error, "");
}

} // namespace
