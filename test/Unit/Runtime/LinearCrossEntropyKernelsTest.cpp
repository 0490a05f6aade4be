//===- LinearCrossEntropyKernelsTest.cpp - a fused LM head loss -----------===//
//
// pp_cpu_linear_cross_entropy and its gradient against the kernels of the
// ops pp-fuse-cross-entropy replaces (matmul, cross_entropy) and of the
// backward pp-autodiff builds for them (cross_entropy_grad, the matmul's
// two gradients): with one batch element's rows in a chunk the loss and the
// hidden states' gradient are their bits, and with one chunk the weight's
// gradient too; smaller chunks add the weight's gradient up chunk by chunk,
// checked against a double-precision reference.
//
//===----------------------------------------------------------------------===//

#include "HostTensors.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

/// An LM head of 2 x 5 positions, depth 4 and 9 classes, its weight [V, D]
/// with `transposed`, else [D, V]; labels in range, position 3 ignored.
struct Head {
  Tensor hidden, weight, labels, bias;
  bool transposed;
  int64_t ignoreIndex = -100;

  explicit Head(bool transposed)
      : hidden(filled({2, 5, 4}, 0.3f)),
        weight(transposed ? filled({9, 4}, 1.1f) : filled({4, 9}, 1.1f)),
        transposed(transposed) {
    int64_t shape[] = {2, 5};
    pp_tensor *made = nullptr;
    EXPECT_EQ(pp_tensor_create(PP_DTYPE_I64, 2, shape, &made), PP_OK);
    labels.reset(made);
    auto *y = static_cast<int64_t *>(pp_tensor_data(made));
    for (int64_t i = 0; i < 10; ++i)
      y[i] = i == 3 ? ignoreIndex : (i * 5 + 2) % 9;
  }

  Tensor loss(pp_frame &frame, int64_t chunkRows, int reduction) const {
    return Tensor(pp_cpu_linear_cross_entropy(
        &frame, hidden.get(), weight.get(), labels.get(), bias.get(), chunkRows,
        ignoreIndex, reduction, transposed));
  }

  /// The hidden states', the weight's and (with a bias) the bias's
  /// gradients for loss gradient `g`.
  std::vector<Tensor> gradients(pp_frame &frame, const Tensor &g,
                                int64_t chunkRows, int reduction) const {
    pp_tensor *results[3] = {};
    pp_cpu_linear_cross_entropy_grad(
        &frame, g.get(), hidden.get(), weight.get(), labels.get(), bias.get(),
        chunkRows, ignoreIndex, reduction, transposed, results);
    std::vector<Tensor> made;
    for (pp_tensor *result : results)
      made.emplace_back(result);
    return made;
  }
};

Tensor lossGrad(pp_frame &frame, float value) {
  return Tensor(pp_cpu_constant(&frame, PP_DTYPE_F32, 0, nullptr, 1, &value));
}

Tensor reshaped(pp_frame &frame, const Tensor &tensor,
                std::vector<int64_t> shape) {
  return Tensor(pp_cpu_reshape(
      &frame, tensor.get(), static_cast<int64_t>(shape.size()), shape.data()));
}

/// The unfused ops' loss, and their gradients as pp-autodiff builds them
/// (the weight's over the rows flattened, the bias's by sum_to).
void expectUnfusedBits(bool transposed, int reduction, bool withBias = false) {
  pp_frame frame;
  Head head(transposed);
  if (withBias)
    head.bias = filled({9}, 2.2f);
  Tensor logits(pp_cpu_matmul(&frame, head.hidden.get(), head.weight.get(), 0,
                              transposed));
  if (withBias)
    logits.reset(pp_cpu_add(&frame, logits.get(), head.bias.get()));
  Tensor expectedLoss(pp_cpu_cross_entropy(
      &frame, logits.get(), head.labels.get(), head.ignoreIndex, reduction));
  Tensor g = reduction == 2 ? filled({2, 5}, 0.8f) : lossGrad(frame, 0.75f);
  Tensor dLogits(pp_cpu_cross_entropy_grad(&frame, g.get(), logits.get(),
                                           head.labels.get(), head.ignoreIndex,
                                           reduction));
  Tensor expectedHidden(
      pp_cpu_matmul(&frame, dLogits.get(), head.weight.get(), 0, !transposed));
  Tensor rows = reshaped(frame, head.hidden, {10, 4});
  Tensor dRows = reshaped(frame, dLogits, {10, 9});
  Tensor expectedWeight(
      transposed ? pp_cpu_matmul(&frame, dRows.get(), rows.get(), 1, 0)
                 : pp_cpu_matmul(&frame, rows.get(), dRows.get(), 1, 0));
  int64_t classes = 9;
  Tensor expectedBias(pp_cpu_sum_to(&frame, dLogits.get(), 1, &classes));
  ASSERT_EQ(frame.error, "");

  // A batch element's rows in a chunk: the loss and the hidden gradient.
  Tensor loss = head.loss(frame, 5, reduction);
  std::vector<Tensor> grads = head.gradients(frame, g, 5, reduction);
  ASSERT_EQ(frame.error, "");
  EXPECT_TRUE(sameBits(loss, expectedLoss)) << "loss";
  EXPECT_TRUE(sameBits(grads[0], expectedHidden)) << "hidden gradient";
  if (head.bias) {
    EXPECT_TRUE(sameBits(grads[2], expectedBias)) << "bias gradient";
  }
  // One chunk of all rows: the weight gradient's one product too.
  std::vector<Tensor> whole = head.gradients(frame, g, 10, reduction);
  ASSERT_EQ(frame.error, "");
  EXPECT_TRUE(sameBits(whole[1], expectedWeight)) << "weight gradient";
}

TEST(LinearCrossEntropyKernels, TransposedWeightSumGivesTheUnfusedBits) {
  expectUnfusedBits(/*transposed=*/true, /*reduction=*/1);
}

TEST(LinearCrossEntropyKernels, WeightByClassMeanGivesTheUnfusedBits) {
  expectUnfusedBits(/*transposed=*/false, /*reduction=*/0);
}

TEST(LinearCrossEntropyKernels, PerPositionLossesGiveTheUnfusedBits) {
  expectUnfusedBits(/*transposed=*/true, /*reduction=*/2);
}

TEST(LinearCrossEntropyKernels, BiasGivesTheUnfusedAddAndSumToBits) {
  expectUnfusedBits(/*transposed=*/true, /*reduction=*/1, /*withBias=*/true);
  expectUnfusedBits(/*transposed=*/false, /*reduction=*/0, /*withBias=*/true);
}

/// The loss and gradients in double precision, for loss gradient `g` of a
/// sum.
struct Reference {
  double loss = 0;
  std::vector<double> hidden, weight;
};

Reference referenceOf(const Head &head, double g) {
  const float *h =
      static_cast<const float *>(pp_tensor_data(head.hidden.get()));
  const float *w =
      static_cast<const float *>(pp_tensor_data(head.weight.get()));
  const int64_t *y =
      static_cast<const int64_t *>(pp_tensor_data(head.labels.get()));
  auto weightAt = [&](int64_t d, int64_t c) -> double {
    return head.transposed ? w[c * 4 + d] : w[d * 9 + c];
  };
  Reference ref;
  ref.hidden.assign(40, 0.0);
  ref.weight.assign(36, 0.0);
  for (int64_t r = 0; r < 10; ++r) {
    if (y[r] == head.ignoreIndex)
      continue;
    std::vector<double> z(9);
    double max = -INFINITY, total = 0;
    for (int64_t c = 0; c < 9; ++c) {
      for (int64_t d = 0; d < 4; ++d)
        z[c] += h[r * 4 + d] * weightAt(d, c);
      max = std::max(max, z[c]);
    }
    for (double v : z)
      total += std::exp(v - max);
    ref.loss += std::log(total) + max - z[y[r]];
    for (int64_t c = 0; c < 9; ++c) {
      double dz = g * (std::exp(z[c] - max) / total - (c == y[r]));
      for (int64_t d = 0; d < 4; ++d) {
        ref.hidden[r * 4 + d] += dz * weightAt(d, c);
        ref.weight[head.transposed ? c * 4 + d : d * 9 + c] +=
            dz * h[r * 4 + d];
      }
    }
  }
  return ref;
}

void expectNear(const Tensor &got, const std::vector<double> &want,
                const char *what) {
  ASSERT_TRUE(got) << what;
  const float *values = static_cast<const float *>(pp_tensor_data(got.get()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(values[i], want[i], 1e-5 * (1 + std::abs(want[i])))
        << what << " element " << i;
}

TEST(LinearCrossEntropyKernels, ChunksOfThreeRowsMatchTheDoubleReference) {
  for (bool transposed : {true, false}) {
    pp_frame frame;
    Head head(transposed);
    Tensor g = lossGrad(frame, 0.5f);
    Tensor loss = head.loss(frame, 3, 1);
    std::vector<Tensor> grads = head.gradients(frame, g, 3, 1);
    ASSERT_EQ(frame.error, "");
    Reference ref = referenceOf(head, 0.5);
    expectNear(loss, {ref.loss}, "loss");
    expectNear(grads[0], ref.hidden, "hidden gradient");
    expectNear(grads[1], ref.weight, "weight gradient");
  }
}

/// Each element of `sum` equals its element of `before` plus `added`'s.
void expectAdded(const Tensor &sum, const Tensor &before, const Tensor &added,
                 const char *what) {
  const float *s = static_cast<const float *>(pp_tensor_data(sum.get()));
  const float *b = static_cast<const float *>(pp_tensor_data(before.get()));
  const float *a = static_cast<const float *>(pp_tensor_data(added.get()));
  for (int64_t i = 0; i < pp_tensor_numel(sum.get()); ++i)
    EXPECT_NEAR(s[i], b[i] + a[i], 1e-5) << what << " element " << i;
}

TEST(LinearCrossEntropyKernels, GradAddAddsTheParameterGradientsIntoTheSums) {
  pp_frame frame;
  Head head(/*transposed=*/true);
  head.bias = filled({9}, 0.6f);
  Tensor g = lossGrad(frame, 1.0f);
  std::vector<Tensor> grads = head.gradients(frame, g, 3, 1);
  Tensor sum = filled({9, 4}, 2.0f), before = filled({9, 4}, 2.0f);
  Tensor biasSum = filled({9}, 3.0f), biasBefore = filled({9}, 3.0f);
  Tensor addedHidden(pp_cpu_linear_cross_entropy_grad_add(
      &frame, sum.get(), biasSum.get(), g.get(), head.hidden.get(),
      head.weight.get(), head.labels.get(), head.bias.get(), 3,
      head.ignoreIndex, 1, 1));
  ASSERT_EQ(frame.error, "");
  EXPECT_TRUE(sameBits(addedHidden, grads[0]));
  expectAdded(sum, before, grads[1], "weight");
  expectAdded(biasSum, biasBefore, grads[2], "bias");
}

TEST(LinearCrossEntropyKernels, HiddenGradAloneGivesTheBothGradientsCallsBits) {
  pp_frame frame;
  Head head(/*transposed=*/false);
  Tensor g = lossGrad(frame, 0.25f);
  std::vector<Tensor> grads = head.gradients(frame, g, 3, 0);
  Tensor alone(pp_cpu_linear_cross_entropy_hidden_grad(
      &frame, g.get(), head.hidden.get(), head.weight.get(), head.labels.get(),
      nullptr, 3, head.ignoreIndex, 0, 0));
  ASSERT_EQ(frame.error, "");
  EXPECT_TRUE(sameBits(alone, grads[0]));
}

TEST(LinearCrossEntropyKernels, RefusesAWeightOfAnotherDepthNamingTheShapes) {
  pp_frame frame;
  Head head(/*transposed=*/false);
  head.weight = filled({5, 9}, 0.0f);
  EXPECT_EQ(head.loss(frame, 5, 1), nullptr);
  EXPECT_EQ(frame.error,
            "linear_cross_entropy: hidden states 2x5x4 and weight 5x9 do not "
            "fit: the hidden states are [..., D] and the weight [D, V]");
}

TEST(LinearCrossEntropyKernels,
     RefusesALabelOutsideTheClassesLeavingNoResults) {
  pp_frame frame;
  Head head(/*transposed=*/true);
  static_cast<int64_t *>(pp_tensor_data(head.labels.get()))[7] = 9;
  Tensor g = lossGrad(frame, 1.0f);
  std::vector<Tensor> grads = head.gradients(frame, g, 5, 1);
  EXPECT_EQ(grads[0], nullptr);
  EXPECT_EQ(grads[1], nullptr);
  EXPECT_EQ(frame.error, "linear_cross_entropy_grad: label 9 (position 7) is "
                         "outside [0, 9) and is not the ignore_index -100");
}

TEST(LinearCrossEntropyKernels, RefusesABiasOfAnotherLength) {
  pp_frame frame;
  Head head(/*transposed=*/true);
  head.bias = filled({8}, 0.0f);
  EXPECT_EQ(head.loss(frame, 5, 1), nullptr);
  EXPECT_EQ(frame.error, "linear_cross_entropy: the bias is f32 8, not f32 "
                         "[9] (the weight's classes)");
}

TEST(LinearCrossEntropyKernels, RefusesASumOfAnotherShape) {
  pp_frame frame;
  Head head(/*transposed=*/true);
  Tensor g = lossGrad(frame, 1.0f);
  Tensor sum = filled({4, 9}, 0.0f);
  EXPECT_EQ(pp_cpu_linear_cross_entropy_grad_add(
                &frame, sum.get(), nullptr, g.get(), head.hidden.get(),
                head.weight.get(), head.labels.get(), nullptr, 5,
                head.ignoreIndex, 1, 1),
            nullptr);
  EXPECT_EQ(frame.error, "linear_cross_entropy_grad_add: the weight's "
                         "gradient sum is f32 4x9, the weight f32 9x4");
}

} // namespace
