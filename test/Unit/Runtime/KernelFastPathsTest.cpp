//===- KernelFastPathsTest.cpp - fast kernel loops against references -----===//
//
// The CPU kernels walk common layouts with fast loops (merged dimensions,
// contiguous rows). These tests check, on odd shapes, that they give the
// bits of a straightforward element-by-element reference computing in the
// same order.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using pp::runtime::Shape;

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A host f32 tensor of `shape` holding values of many magnitudes, so that
/// a change of summation order changes the rounded sums.
Tensor unevenValues(const Shape &shape) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, shape.size(), shape.data(), &tensor),
            PP_OK);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = std::sin(2.3f * static_cast<float>(i)) *
              std::exp2(static_cast<float>(i * 13 % 71) - 35.0f);
  return Tensor(tensor);
}

std::vector<uint32_t> bits(pp_tensor *tensor) {
  std::vector<uint32_t> result(pp_tensor_numel(tensor));
  std::memcpy(result.data(), pp_tensor_data(tensor), result.size() * 4);
  return result;
}

/// Sums `input` to `target` (right-aligned, size 1 or equal per dimension)
/// element by element in row-major order, in double.
std::vector<uint32_t> referenceSumTo(pp_tensor *input, const Shape &target) {
  Shape shape = pp::runtime::shapeOf(input);
  std::vector<double> sums(pp::runtime::numElements(target), 0.0);
  const float *in = static_cast<const float *>(pp_tensor_data(input));
  size_t lead = shape.size() - target.size();
  for (int64_t i = 0; i < pp_tensor_numel(input); ++i) {
    int64_t rest = i, group = 0, groupStride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      int64_t index = rest % shape[d];
      rest /= shape[d];
      if (d >= lead && target[d - lead] != 1) {
        group += index * groupStride;
        groupStride *= target[d - lead];
      }
    }
    sums[group] += in[i];
  }
  std::vector<uint32_t> result;
  for (double sum : sums) {
    float value = static_cast<float>(sum);
    uint32_t word;
    std::memcpy(&word, &value, 4);
    result.push_back(word);
  }
  return result;
}

struct SumCase {
  Shape input, target;
};

TEST(CpuKernelFastPaths, SumToAndReduceSumAddInRowMajorOrder) {
  const SumCase cases[] = {{{7, 5, 3}, {5, 1}},
                           {{7, 5, 3}, {3}},
                           {{7, 5, 3}, {7, 1, 1}},
                           {{7, 5, 3}, {}},
                           {{7, 5, 3}, {7, 5, 3}},
                           {{2, 1, 9, 4}, {1, 9, 1}},
                           {{1, 1, 33}, {33}},
                           {{5, 0, 3}, {3}},
                           {{16, 8, 37}, {37}},
                           {{3, 4, 5, 6}, {4, 1, 6}},
                           {{}, {}},
                           {{129}, {1}}};
  for (const SumCase &c : cases) {
    SCOPED_TRACE(pp::runtime::formatShape(c.input) + " to " +
                 pp::runtime::formatShape(c.target));
    pp_frame frame;
    Tensor x = unevenValues(c.input);
    Tensor sum(
        pp_cpu_sum_to(&frame, x.get(), c.target.size(), c.target.data()));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    std::vector<uint32_t> expected = referenceSumTo(x.get(), c.target);
    EXPECT_EQ(bits(sum.get()), expected);
    // reduce_sum over the dimensions the target drops or makes 1.
    std::vector<int64_t> axes;
    size_t lead = c.input.size() - c.target.size();
    for (size_t d = 0; d < c.input.size(); ++d)
      if (d < lead || (c.target[d - lead] == 1 && c.input[d] != 1))
        axes.push_back(static_cast<int64_t>(d));
    Tensor reduced(
        pp_cpu_reduce_sum(&frame, x.get(), axes.size(), axes.data(), 1));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    EXPECT_EQ(bits(reduced.get()), expected);
  }
}

} // namespace
