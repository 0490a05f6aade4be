//===- FloatElementKernelsTest.cpp - kernels over bf16 and f16 ------------===//
//
// Every host compute kernel is written once over its element type: on bf16
// or f16 operands it gives the bits of the f32 kernel on the same operands
// widened, rounded once to the narrow type (FloatElements.h). Each case
// below runs one kernel both ways and compares bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace pp::runtime;

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

Tensor newHostTensor(pp_dtype dtype, const std::vector<int64_t> &shape) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(dtype, shape.size(), shape.data(), &tensor),
            PP_OK);
  return Tensor(tensor);
}

/// A float tensor of `dtype` holding `values` (already representable).
Tensor floatTensor(pp_dtype dtype, const std::vector<int64_t> &shape,
                   const std::vector<float> &values) {
  Tensor tensor = newHostTensor(dtype, shape);
  visitFloatType(dtype, [&](auto element) {
    using T = decltype(element);
    T *data = static_cast<T *>(pp_tensor_data(tensor.get()));
    for (size_t i = 0; i < values.size(); ++i)
      data[i] = storeFloat<T>(values[i]);
  });
  return tensor;
}

/// The elements of a float tensor as floats.
std::vector<float> floatValues(pp_tensor *tensor) {
  std::vector<float> values(pp_tensor_numel(tensor));
  visitFloatType(pp_tensor_dtype(tensor), [&](auto element) {
    using T = decltype(element);
    const T *data = static_cast<const T *>(pp_tensor_data(tensor));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = loadFloat(data[i]);
  });
  return values;
}

/// `values` rounded to `dtype` and widened back.
std::vector<float> roundedTo(pp_dtype dtype, std::vector<float> values) {
  visitFloatType(dtype, [&](auto element) {
    using T = decltype(element);
    for (float &value : values)
      value = loadFloat(storeFloat<T>(value));
  });
  return values;
}

/// An operand of a case: float values of a shape (drawn from [low, high]),
/// or fixed i64 indices.
struct Operand {
  std::vector<int64_t> shape;
  float low = -2.0f, high = 2.0f;
  std::vector<int64_t> indices = {};
};

using KernelCall =
    std::function<pp_tensor *(pp_frame *, const std::vector<pp_tensor *> &)>;

struct KernelCase {
  std::string name;
  std::vector<Operand> operands;
  KernelCall call;
};

/// Runs `kernel` on operands of `dtype` built from `values` (i64 operands
/// as given); the result, with the frame's error checked.
Tensor runKernel(const KernelCase &kernel, pp_dtype dtype,
                 const std::vector<std::vector<float>> &values) {
  std::vector<Tensor> owned;
  std::vector<pp_tensor *> operands;
  for (size_t i = 0; i < kernel.operands.size(); ++i) {
    const Operand &operand = kernel.operands[i];
    if (!operand.indices.empty()) {
      owned.push_back(newHostTensor(PP_DTYPE_I64, operand.shape));
      std::memcpy(pp_tensor_data(owned.back().get()), operand.indices.data(),
                  operand.indices.size() * sizeof(int64_t));
    } else {
      owned.push_back(floatTensor(dtype, operand.shape, values[i]));
    }
    operands.push_back(owned.back().get());
  }
  pp_frame frame;
  frame.position.training = true;
  Tensor result(kernel.call(&frame, operands));
  EXPECT_EQ(frame.error, "") << kernel.name;
  return result;
}

std::vector<KernelCase> kernelCases() {
  using Args = const std::vector<pp_tensor *> &;
  const int64_t lastAxis[] = {-1}, firstAxis[] = {0};
  const int64_t rowShape[] = {1, 6}, tableShape[] = {5, 6};
  return {
      {"add_broadcast",
       {{{4, 6}}, {{6}}},
       [](pp_frame *f, Args a) { return pp_cpu_add(f, a[0], a[1]); }},
      {"mul",
       {{{4, 6}}, {{4, 6}}},
       [](pp_frame *f, Args a) { return pp_cpu_mul(f, a[0], a[1]); }},
      {"div",
       {{{4, 6}}, {{4, 6}, 0.5f, 2.0f}},
       [](pp_frame *f, Args a) { return pp_cpu_div(f, a[0], a[1]); }},
      {"gelu_tanh",
       {{{4, 6}}},
       [](pp_frame *f, Args a) { return pp_cpu_gelu(f, a[0], 1); }},
      {"gelu_grad",
       {{{4, 6}}, {{4, 6}}},
       [](pp_frame *f, Args a) { return pp_cpu_gelu_grad(f, a[0], a[1], 0); }},
      {"tanh",
       {{{4, 6}}},
       [](pp_frame *f, Args a) { return pp_cpu_tanh(f, a[0]); }},
      {"rsqrt",
       {{{4, 6}, 0.25f, 4.0f}},
       [](pp_frame *f, Args a) { return pp_cpu_rsqrt(f, a[0]); }},
      {"maximum_grad_rhs",
       {{{4, 6}}, {{4, 6}}, {{6}}},
       [](pp_frame *f, Args a) {
         return pp_cpu_maximum_grad(f, a[0], a[1], a[2], 1);
       }},
      {"dropout_training",
       {{{8, 16}}},
       [](pp_frame *f, Args a) { return pp_cpu_dropout(f, a[0], 3, 0.25); }},
      {"softmax",
       {{{3, 7}}},
       [](pp_frame *f, Args a) { return pp_cpu_softmax(f, a[0], 1); }},
      {"softmax_grad",
       {{{3, 7}}, {{3, 7}, 0.0f, 1.0f}},
       [](pp_frame *f, Args a) {
         return pp_cpu_softmax_grad(f, a[0], a[1], 1);
       }},
      {"log_softmax_axis0",
       {{{5, 3}}},
       [](pp_frame *f, Args a) { return pp_cpu_log_softmax(f, a[0], 0); }},
      {"layer_norm",
       {{{6, 8}}, {{8}}, {{8}}},
       [](pp_frame *f, Args a) {
         return pp_cpu_layer_norm(f, a[0], a[1], a[2], -1, 1e-5);
       }},
      {"layer_norm_grad_input",
       {{{6, 8}}, {{6, 8}}, {{8}}},
       [](pp_frame *f, Args a) {
         return pp_cpu_layer_norm_grad(f, a[0], a[1], a[2], -1, 1e-5, 0);
       }},
      {"layer_norm_grad_weight",
       {{{6, 8}}, {{6, 8}}, {{8}}},
       [](pp_frame *f, Args a) {
         return pp_cpu_layer_norm_grad(f, a[0], a[1], a[2], -1, 1e-5, 1);
       }},
      {"reduce_sum",
       {{{4, 5, 6}}},
       [=](pp_frame *f, Args a) {
         return pp_cpu_reduce_sum(f, a[0], 1, lastAxis, 0);
       }},
      {"reduce_mean_keep",
       {{{4, 5, 6}}},
       [=](pp_frame *f, Args a) {
         return pp_cpu_reduce_mean(f, a[0], 1, firstAxis, 1);
       }},
      {"reduce_max",
       {{{4, 6}}},
       [=](pp_frame *f, Args a) {
         return pp_cpu_reduce_max(f, a[0], 1, lastAxis, 0);
       }},
      {"sum_to",
       {{{4, 6}}},
       [=](pp_frame *f, Args a) {
         return pp_cpu_sum_to(f, a[0], 2, rowShape);
       }},
      {"matmul",
       {{{5, 7}}, {{7, 3}}},
       [](pp_frame *f, Args a) { return pp_cpu_matmul(f, a[0], a[1], 0, 0); }},
      {"matmul_batched_transposed",
       {{{2, 7, 5}}, {{2, 3, 7}}},
       [](pp_frame *f, Args a) { return pp_cpu_matmul(f, a[0], a[1], 1, 1); }},
      {"gather_grad",
       {{{4, 6}}, {{4}, 0, 0, {0, 3, 0, 4}}},
       [=](pp_frame *f, Args a) {
         return pp_cpu_gather_grad(f, a[0], a[1], 0, 2, tableShape);
       }},
      {"cross_entropy_mean",
       {{{4, 9}}, {{4}, 0, 0, {2, 8, 0, 5}}},
       [](pp_frame *f, Args a) {
         return pp_cpu_cross_entropy(f, a[0], a[1], -100, 0);
       }},
      {"cross_entropy_grad",
       {{{}, 0.5f, 1.0f}, {{4, 9}}, {{4}, 0, 0, {2, 8, 0, 5}}},
       [](pp_frame *f, Args a) {
         return pp_cpu_cross_entropy_grad(f, a[0], a[1], a[2], -100, 0);
       }},
      {"mse_loss_sum",
       {{{4, 6}}, {{4, 6}}},
       [](pp_frame *f, Args a) { return pp_cpu_mse_loss(f, a[0], a[1], 1); }},
  };
}

class NarrowFloatKernel
    : public testing::TestWithParam<std::tuple<KernelCase, pp_dtype>> {};

TEST_P(NarrowFloatKernel, EqualsTheF32KernelOnWidenedOperandsRoundedOnce) {
  auto [kernel, dtype] = GetParam();
  std::mt19937 random(17);
  std::vector<std::vector<float>> values;
  for (const Operand &operand : kernel.operands) {
    std::uniform_real_distribution<float> draw(operand.low, operand.high);
    int64_t count = 1;
    for (int64_t size : operand.shape)
      count *= size;
    std::vector<float> drawn(count);
    for (float &value : drawn)
      value = draw(random);
    // Operands the narrow type holds exactly, so both runs see one value.
    values.push_back(roundedTo(dtype, drawn));
  }
  Tensor wide = runKernel(kernel, PP_DTYPE_F32, values);
  Tensor narrow = runKernel(kernel, dtype, values);
  ASSERT_TRUE(wide && narrow) << kernel.name;
  EXPECT_EQ(pp_tensor_dtype(narrow.get()), dtype) << kernel.name;
  std::vector<float> expected = roundedTo(dtype, floatValues(wide.get()));
  std::vector<float> actual = floatValues(narrow.get());
  ASSERT_EQ(actual.size(), expected.size()) << kernel.name;
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_EQ(bitsOf(actual[i]), bitsOf(expected[i]))
        << kernel.name << " element " << i << ": " << actual[i] << " vs "
        << expected[i];
}

INSTANTIATE_TEST_SUITE_P(
    AllComputeKernels, NarrowFloatKernel,
    testing::Combine(testing::ValuesIn(kernelCases()),
                     testing::Values(PP_DTYPE_BF16, PP_DTYPE_F16)),
    [](const testing::TestParamInfo<NarrowFloatKernel::ParamType> &info) {
      return std::get<0>(info.param).name + "_" +
             pp_dtype_name(std::get<1>(info.param));
    });

TEST(NarrowFloatKernel, RefusesOperandsOfTwoFloatTypes) {
  Tensor lhs = floatTensor(PP_DTYPE_BF16, {2}, {1.0f, 2.0f});
  Tensor rhs = floatTensor(PP_DTYPE_F32, {2}, {1.0f, 2.0f});
  pp_frame frame;
  Tensor sum(pp_cpu_add(&frame, lhs.get(), rhs.get()));
  EXPECT_FALSE(sum);
  EXPECT_EQ(frame.error, "add expects operands of one element type, got bf16 "
                         "and f32 (cast one with nn.cast)");
}

TEST(NarrowFloatKernel, RefusesAnIntegerOperandToAComputeKernel) {
  Tensor input = newHostTensor(PP_DTYPE_I32, {2});
  pp_frame frame;
  Tensor result(pp_cpu_tanh(&frame, input.get()));
  EXPECT_FALSE(result);
  EXPECT_EQ(frame.error, "tanh expects f32, bf16 or f16 tensors, got i32");
}

} // namespace
