//===- KernelsTest.cpp - CPU kernels against direct definitions -----------===//

#include "runtime/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A host tensor holding 0, 1, 2, ... scaled by `scale`.
Tensor iota(std::vector<int64_t> shape, float scale = 1.0f) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, shape.size(), shape.data(), &tensor),
            PP_OK);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = scale * static_cast<float>(i);
  return Tensor(tensor);
}

std::vector<float> values(const Tensor &tensor) {
  const float *data = static_cast<const float *>(pp_tensor_data(tensor.get()));
  return std::vector<float>(data, data + pp_tensor_numel(tensor.get()));
}

std::vector<int64_t> shape(const Tensor &tensor) {
  return pp::runtime::shapeOf(tensor.get());
}

TEST(CpuKernels, AddBroadcastsBothOperandsInEveryDimension) {
  pp_frame frame;
  Tensor a = iota({3, 1, 4}), b = iota({2, 1}, 100.0f);
  Tensor sum(pp_cpu_add(&frame, a.get(), b.get()));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(sum), (std::vector<int64_t>{3, 2, 4}));
  std::vector<float> got = values(sum);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(got[(i * 2 + j) * 4 + k], (i * 4 + k) + 100.0f * j);
}

TEST(CpuKernels, SumToUndoesBroadcasting) {
  pp_frame frame;
  Tensor x = iota({3, 2, 4});
  int64_t target[] = {2, 1};
  Tensor sum(pp_cpu_sum_to(&frame, x.get(), 2, target));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(sum), (std::vector<int64_t>{2, 1}));
  for (int j = 0; j < 2; ++j) {
    float expected = 0;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 4; ++k)
        expected += (i * 2 + j) * 4 + k;
    EXPECT_EQ(values(sum)[j], expected);
  }
}

TEST(CpuKernels, BatchedMatmulBroadcastsTheBatch) {
  pp_frame frame;
  Tensor a = iota({2, 1, 2, 3}), b = iota({3, 3, 2}, 0.5f);
  Tensor c(pp_cpu_matmul(&frame, a.get(), b.get(), 0, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(c), (std::vector<int64_t>{2, 3, 2, 2}));
  std::vector<float> av = values(a), bv = values(b), cv = values(c);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          float expected = 0;
          for (int k = 0; k < 3; ++k)
            expected += av[p * 6 + m * 3 + k] * bv[q * 6 + k * 2 + n];
          EXPECT_FLOAT_EQ(cv[((p * 3 + q) * 2 + m) * 2 + n], expected);
        }
}

TEST(CpuKernels, CrossEntropySkipsIgnoredLabelsInSumAndCount) {
  pp_frame frame;
  Tensor logits = iota({3, 4}, 0.25f);
  int64_t shape3[] = {3};
  pp_tensor *labels = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_I64, 1, shape3, &labels), PP_OK);
  Tensor labelsOwner(labels);
  int64_t classes[] = {1, -100, 3};
  std::memcpy(pp_tensor_data(labels), classes, sizeof(classes));
  Tensor mean(pp_cpu_cross_entropy(&frame, logits.get(), labels, -100, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  double expected = 0;
  std::vector<float> z = values(logits);
  for (int r : {0, 2}) {
    double total = 0;
    for (int c = 0; c < 4; ++c)
      total += std::exp(z[r * 4 + c]);
    expected += std::log(total) - z[r * 4 + classes[r]];
  }
  EXPECT_NEAR(values(mean)[0], expected / 2, 1e-6);
}

TEST(CpuKernels, BadShapesAreReportedInTheFrame) {
  pp_frame frame;
  Tensor a = iota({2, 3}), b = iota({4});
  EXPECT_EQ(pp_cpu_add(&frame, a.get(), b.get()), nullptr);
  EXPECT_EQ(frame.error, "add: shapes 2x3 and 4 do not broadcast");
  // Later calls given the failed result pass the NULL on.
  EXPECT_EQ(pp_cpu_relu(&frame, nullptr), nullptr);
  EXPECT_EQ(frame.error, "add: shapes 2x3 and 4 do not broadcast");
}

} // namespace
