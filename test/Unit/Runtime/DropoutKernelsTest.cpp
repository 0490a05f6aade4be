//===- DropoutKernelsTest.cpp - nn.dropout's host kernel ------------------===//

#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A host f32 tensor of `shape` full of ones.
Tensor ones(std::vector<int64_t> shape) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, shape.size(), shape.data(), &tensor),
            PP_OK);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = 1.0f;
  return Tensor(tensor);
}

std::vector<float> values(const Tensor &tensor) {
  const float *data = static_cast<const float *>(pp_tensor_data(tensor.get()));
  return std::vector<float>(data, data + pp_tensor_numel(tensor.get()));
}

pp::runtime::RunPosition training(uint64_t seed, int64_t step,
                                  int64_t firstSample) {
  return {seed, step, firstSample, /*training=*/true};
}

/// nn.dropout of ones of `shape` at `position`.
std::vector<float> dropOnes(const pp::runtime::RunPosition &position,
                            std::vector<int64_t> shape, int64_t key,
                            double ratio) {
  pp_frame frame;
  frame.position = position;
  Tensor x = ones(shape);
  Tensor y(pp_cpu_dropout(&frame, x.get(), key, ratio));
  EXPECT_TRUE(frame.error.empty()) << frame.error;
  return y ? values(y) : std::vector<float>();
}

TEST(DropoutKernel, IsTheIdentityOutsideTrainingAndAtRatioZero) {
  pp::runtime::RunPosition inference;
  EXPECT_EQ(dropOnes(inference, {4, 8}, 7, 0.5),
            std::vector<float>(32, 1.0f));
  EXPECT_EQ(dropOnes(training(1, 0, 0), {4, 8}, 7, 0.0),
            std::vector<float>(32, 1.0f));
}

TEST(DropoutKernel, KeepsAboutOneMinusRatioAndScalesThem) {
  std::vector<float> y = dropOnes(training(3, 2, 0), {64, 256}, 11, 0.25);
  int64_t kept = 0;
  for (float value : y) {
    if (value != 0.0f) {
      EXPECT_EQ(value, static_cast<float>(1.0 / 0.75));
      ++kept;
    }
  }
  // 16384 draws: the kept fraction is 0.75 within 5 standard deviations.
  double fraction = static_cast<double>(kept) / y.size();
  EXPECT_NEAR(fraction, 0.75, 5 * std::sqrt(0.75 * 0.25 / y.size()));
}

TEST(DropoutKernel, TheSameTupleDrawsTheSameMask) {
  EXPECT_EQ(dropOnes(training(5, 3, 8), {4, 16}, 9, 0.5),
            dropOnes(training(5, 3, 8), {4, 16}, 9, 0.5));
}

TEST(DropoutKernel, EveryPartOfTheTupleChangesTheMask) {
  std::vector<float> base = dropOnes(training(5, 3, 8), {4, 16}, 9, 0.5);
  EXPECT_NE(base, dropOnes(training(6, 3, 8), {4, 16}, 9, 0.5)) << "seed";
  EXPECT_NE(base, dropOnes(training(5, 4, 8), {4, 16}, 9, 0.5)) << "step";
  EXPECT_NE(base, dropOnes(training(5, 3, 12), {4, 16}, 9, 0.5)) << "sample";
  EXPECT_NE(base, dropOnes(training(5, 3, 8), {4, 16}, 10, 0.5)) << "key";
  // Samples differ from each other, and elements within a sample too.
  std::vector<float> first(base.begin(), base.begin() + 16);
  std::vector<float> second(base.begin() + 16, base.begin() + 32);
  EXPECT_NE(first, second);
  EXPECT_NE(std::vector<float>(base.begin(), base.begin() + 8),
            std::vector<float>(base.begin() + 8, base.begin() + 16));
}

TEST(DropoutKernel, MicrobatchSplitsDrawTheWholeBatchMask) {
  // Samples 0..7 at once, or as microbatches 0..3 and 4..7: the same mask.
  std::vector<float> whole = dropOnes(training(1, 0, 0), {8, 3, 5}, 4, 0.4);
  std::vector<float> split = dropOnes(training(1, 0, 0), {4, 3, 5}, 4, 0.4);
  std::vector<float> rest = dropOnes(training(1, 0, 4), {4, 3, 5}, 4, 0.4);
  split.insert(split.end(), rest.begin(), rest.end());
  EXPECT_EQ(whole, split);
}

TEST(DropoutKernel, RejectsNonFloatInputAndPassesNullOn) {
  pp_frame frame;
  frame.position = training(0, 0, 0);
  EXPECT_EQ(pp_cpu_dropout(&frame, nullptr, 1, 0.5), nullptr);
  EXPECT_TRUE(frame.error.empty());
  int64_t shape[] = {2};
  pp_tensor *ints = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_I64, 1, shape, &ints), PP_OK);
  Tensor owned(ints);
  EXPECT_EQ(pp_cpu_dropout(&frame, ints, 1, 0.5), nullptr);
  EXPECT_EQ(frame.error, "dropout expects f32, bf16 or f16 tensors, got i64");
}

} // namespace
