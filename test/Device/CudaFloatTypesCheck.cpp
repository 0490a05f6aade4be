//===- CudaFloatTypesCheck.cpp - CUDA kernels on bf16 and f16 tensors -----===//
//
// Needs a GPU, so it is not part of the lit suites (CI has none): run
// build/test/Device/PPCudaFloatTypesCheck on a GPU machine. Each CUDA
// compute kernel runs on bf16 (then f16) inputs and on f32 inputs holding
// the same values; its bf16 result must be the f32 result rounded to bf16,
// bit for bit (FloatElements.h: a kernel computes on the widened operands
// and rounds once), and matmul's within one bf16 or f16 ulp (cuBLAS adds
// the products in its own order). Prints one line per kernel and type and
// exits non-zero on a difference or a failed call.
//
//===----------------------------------------------------------------------===//

#include "DeviceCheck.h"

#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace pp::runtime;
using pp::runtime::testing::expect;
using pp::runtime::testing::failedChecks;

namespace {

/// An input of a kernel call: float values, stored in the dtype the call
/// runs in, or i64 values (indices, labels).
struct Input {
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool integer = false;
};

/// A float input of `shape` holding `scale * sin(1.7 i + phase) + shift`.
Input floats(std::vector<int64_t> shape, double scale, double phase,
             double shift = 0) {
  Input input{shape, {}, false};
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  for (int64_t i = 0; i < count; ++i)
    input.values.push_back(scale * std::sin(1.7 * i + phase) + shift);
  return input;
}

Input integers(std::vector<int64_t> shape, std::vector<double> values) {
  return {shape, values, true};
}

/// `value` rounded to float dtype `precision`, as a float.
float roundedTo(pp_dtype precision, float value) {
  float rounded = value;
  visitFloatType(precision, [&](auto element) {
    using T = decltype(element);
    rounded = loadFloat(storeFloat<T>(value));
  });
  return rounded;
}

/// A device tensor of `input`: its values rounded to `precision`, stored as
/// `storage` (i64 for an integer input); null on failure.
pp_tensor *toDevice(const Input &input, pp_dtype storage, pp_dtype precision) {
  pp_dtype dtype = input.integer ? PP_DTYPE_I64 : storage;
  pp_tensor *tensor = nullptr;
  if (pp_tensor_create_in(pp_cuda_tensor_allocator(), dtype,
                          static_cast<int64_t>(input.shape.size()),
                          input.shape.data(), &tensor) != PP_OK)
    return nullptr;
  std::vector<char> bytes(pp_tensor_nbytes(tensor));
  for (size_t i = 0; i < input.values.size(); ++i) {
    if (input.integer) {
      int64_t value = static_cast<int64_t>(input.values[i]);
      std::memcpy(bytes.data() + i * sizeof(value), &value, sizeof(value));
      continue;
    }
    float value = roundedTo(precision, static_cast<float>(input.values[i]));
    visitFloatType(dtype, [&](auto element) {
      using T = decltype(element);
      T stored = storeFloat<T>(value);
      std::memcpy(bytes.data() + i * sizeof(T), &stored, sizeof(T));
    });
  }
  cudaMemcpy(pp_tensor_data(tensor), bytes.data(), bytes.size(),
             cudaMemcpyHostToDevice);
  return tensor;
}

/// The elements of float device tensor `tensor`, widened to float.
std::vector<float> valuesOf(pp_tensor *tensor) {
  std::vector<char> bytes(pp_tensor_nbytes(tensor));
  cudaMemcpy(bytes.data(), pp_tensor_data(tensor), bytes.size(),
             cudaMemcpyDeviceToHost);
  std::vector<float> values(pp_tensor_numel(tensor));
  visitFloatType(pp_tensor_dtype(tensor), [&](auto element) {
    using T = decltype(element);
    for (size_t i = 0; i < values.size(); ++i) {
      T stored;
      std::memcpy(&stored, bytes.data() + i * sizeof(T), sizeof(T));
      values[i] = loadFloat(stored);
    }
  });
  return values;
}

/// A kernel call on device `inputs`.
using Call =
    std::function<pp_tensor *(pp_frame *, const std::vector<pp_tensor *> &)>;

/// Runs `call` on `inputs` in `narrow` (bf16 or f16) and in f32 holding the
/// same values; "" when the narrow result is of `narrow` and holds the f32
/// result rounded to it (within `ulps` of `narrow`'s units in the last
/// place, at least those of 1), else why not.
std::string compare(pp_dtype narrow, const std::vector<Input> &inputs,
                    const Call &call, int ulps = 0) {
  std::vector<pp_tensor *> narrowInputs, wideInputs;
  for (const Input &input : inputs) {
    narrowInputs.push_back(toDevice(input, narrow, narrow));
    wideInputs.push_back(toDevice(input, PP_DTYPE_F32, narrow));
  }
  pp_frame narrowFrame, wideFrame;
  narrowFrame.position.training = wideFrame.position.training = true;
  pp_tensor *got = call(&narrowFrame, narrowInputs);
  pp_tensor *wide = call(&wideFrame, wideInputs);
  std::string why = narrowFrame.error + wideFrame.error;
  if (why.empty() && cudaDeviceSynchronize() != cudaSuccess)
    why = "the GPU failed";
  if (why.empty() && (!got || !wide))
    why = "no result";
  if (why.empty() && pp_tensor_dtype(got) != narrow)
    why = std::string("result is ") + pp_dtype_name(pp_tensor_dtype(got));
  if (why.empty()) {
    std::vector<float> g = valuesOf(got), w = valuesOf(wide);
    double unit = narrow == PP_DTYPE_BF16 ? 0x1p-7 : 0x1p-10;
    for (size_t i = 0; why.empty() && i < g.size(); ++i) {
      float expected = roundedTo(narrow, w[i]);
      bool same = ulps == 0
                      ? bitsOf(g[i]) == bitsOf(expected)
                      : std::fabs(g[i] - expected) <=
                            ulps * unit * std::fmax(std::fabs(expected), 1.0);
      if (!same && !(std::isnan(g[i]) && std::isnan(expected)))
        why = "element " + std::to_string(i) + " is " + std::to_string(g[i]) +
              ", the f32 result rounded " + std::to_string(expected);
    }
  }
  for (pp_tensor *tensor : narrowInputs)
    pp_tensor_destroy(tensor);
  for (pp_tensor *tensor : wideInputs)
    pp_tensor_destroy(tensor);
  pp_tensor_destroy(got);
  pp_tensor_destroy(wide);
  return why;
}

using Unary = pp_tensor *(*)(pp_frame *, pp_tensor *);
using Binary = pp_tensor *(*)(pp_frame *, pp_tensor *, pp_tensor *);
using OperandGrad = pp_tensor *(*)(pp_frame *, pp_tensor *, pp_tensor *,
                                   pp_tensor *, int64_t);
using Reduce = pp_tensor *(*)(pp_frame *, pp_tensor *, int64_t, const int64_t *,
                              int);

/// Every compute kernel in `narrow`.
void checkKernels(pp_dtype narrow) {
  std::string type = pp_dtype_name(narrow);
  auto check = [&](const std::string &name, std::vector<Input> inputs,
                   Call call, int ulps = 0) {
    expect(type + " " + name,
           [&] { return compare(narrow, inputs, call, ulps); });
  };
  Input x = floats({4, 6, 32}, 4, 0), g = floats({4, 6, 32}, 1, 0.5);
  Input p = floats({4, 6, 32}, 2, 0.3, 2.1), e = floats({32}, 1.5, 0.7);
  Input row = floats({4, 1, 32}, 1, 0.9), w = floats({32}, 1, 1),
        b = floats({32}, 1, 2);
  for (auto [name, kernel, input] :
       {std::make_tuple("neg", Unary(pp_cuda_neg), x),
        std::make_tuple("relu", Unary(pp_cuda_relu), x),
        std::make_tuple("sigmoid", Unary(pp_cuda_sigmoid), x),
        std::make_tuple("tanh", Unary(pp_cuda_tanh), x),
        std::make_tuple("exp", Unary(pp_cuda_exp), x),
        std::make_tuple("log", Unary(pp_cuda_log), p),
        std::make_tuple("sqrt", Unary(pp_cuda_sqrt), p),
        std::make_tuple("rsqrt", Unary(pp_cuda_rsqrt), p),
        std::make_tuple("erf", Unary(pp_cuda_erf), x)})
    check(name, {input},
          [kernel = kernel](pp_frame *f, auto &t) { return kernel(f, t[0]); });
  for (auto [name, kernel, lhs, rhs] :
       {std::make_tuple("add", Binary(pp_cuda_add), x, e),
        std::make_tuple("sub", Binary(pp_cuda_sub), x, row),
        std::make_tuple("mul", Binary(pp_cuda_mul), x, g),
        std::make_tuple("div", Binary(pp_cuda_div), x, p),
        std::make_tuple("pow", Binary(pp_cuda_pow), p, e),
        std::make_tuple("maximum", Binary(pp_cuda_maximum), x, e),
        std::make_tuple("minimum", Binary(pp_cuda_minimum), x, e),
        std::make_tuple("relu_grad", Binary(pp_cuda_relu_grad), g, x),
        std::make_tuple("sigmoid_grad", Binary(pp_cuda_sigmoid_grad), g, x),
        std::make_tuple("tanh_grad", Binary(pp_cuda_tanh_grad), g, x),
        std::make_tuple("sqrt_grad", Binary(pp_cuda_sqrt_grad), g, p),
        std::make_tuple("rsqrt_grad", Binary(pp_cuda_rsqrt_grad), g, p),
        std::make_tuple("erf_grad", Binary(pp_cuda_erf_grad), g, x)})
    check(name, {lhs, rhs}, [kernel = kernel](pp_frame *f, auto &t) {
      return kernel(f, t[0], t[1]);
    });
  for (auto [name, kernel] :
       {std::make_tuple("pow_grad", OperandGrad(pp_cuda_pow_grad)),
        std::make_tuple("maximum_grad", OperandGrad(pp_cuda_maximum_grad)),
        std::make_tuple("minimum_grad", OperandGrad(pp_cuda_minimum_grad))})
    for (int64_t operand : {0, 1})
      check(std::string(name) + " " + std::to_string(operand), {g, p, row},
            [kernel = kernel, operand](pp_frame *f, auto &t) {
              return kernel(f, t[0], t[1], t[2], operand);
            });
  for (int approximate : {0, 1}) {
    check("gelu", {x}, [=](pp_frame *f, auto &t) {
      return pp_cuda_gelu(f, t[0], approximate);
    });
    check("gelu_grad", {g, x}, [=](pp_frame *f, auto &t) {
      return pp_cuda_gelu_grad(f, t[0], t[1], approximate);
    });
  }
  const int64_t axes[] = {0, 2}, shape[] = {4, 6, 32}, summed[] = {1, 6, 1};
  for (auto [name, kernel] :
       {std::make_tuple("reduce_sum", Reduce(pp_cuda_reduce_sum)),
        std::make_tuple("reduce_mean", Reduce(pp_cuda_reduce_mean)),
        std::make_tuple("reduce_max", Reduce(pp_cuda_reduce_max))})
    check(name, {x}, [&, kernel = kernel](pp_frame *f, auto &t) {
      return kernel(f, t[0], 2, axes, 1);
    });
  check("sum_to", {x}, [&](pp_frame *f, auto &t) {
    return pp_cuda_sum_to(f, t[0], 3, summed);
  });
  Input groupGrad = floats({6}, 1, 0.2);
  check("reduce_sum_grad", {groupGrad}, [&](pp_frame *f, auto &t) {
    return pp_cuda_reduce_sum_grad(f, t[0], 2, axes, 3, shape);
  });
  check("reduce_max_grad", {groupGrad, x}, [&](pp_frame *f, auto &t) {
    pp_tensor *max = pp_cuda_reduce_max(f, t[1], 2, axes, 0);
    pp_tensor *result = pp_cuda_reduce_max_grad(f, t[0], t[1], max, 2, axes);
    pp_tensor_destroy(max);
    return result;
  });
  for (int64_t axis : {-1, 1}) {
    std::string along = " axis " + std::to_string(axis);
    check("softmax" + along, {x},
          [=](pp_frame *f, auto &t) { return pp_cuda_softmax(f, t[0], axis); });
    check("log_softmax" + along, {x}, [=](pp_frame *f, auto &t) {
      return pp_cuda_log_softmax(f, t[0], axis);
    });
    check("softmax_grad" + along, {g, x}, [=](pp_frame *f, auto &t) {
      return pp_cuda_softmax_grad(f, t[0], t[1], axis);
    });
    check("log_softmax_grad" + along, {g, x}, [=](pp_frame *f, auto &t) {
      return pp_cuda_log_softmax_grad(f, t[0], t[1], axis);
    });
  }
  check("layer_norm", {x, w, b}, [](pp_frame *f, auto &t) {
    return pp_cuda_layer_norm(f, t[0], t[1], t[2], -1, 1e-5);
  });
  check("layer_norm without affine", {x}, [](pp_frame *f, auto &t) {
    return pp_cuda_layer_norm(f, t[0], nullptr, nullptr, -1, 1e-5);
  });
  for (int64_t index : {0, 1, 2})
    check("layer_norm_grad " + std::to_string(index), {g, x, w},
          [=](pp_frame *f, auto &t) {
            return pp_cuda_layer_norm_grad(f, t[0], t[1], t[2], -1, 1e-5,
                                           index);
          });
  Input target = floats({4, 6, 32}, 3, 1.1), lossGrad = floats({}, 1, 0.4);
  Input logits = floats({6, 10}, 3, 0.6), rowGrads = floats({6}, 1, 0.8);
  Input labels = integers({6}, {3, 0, -100, 9, 5, 3});
  for (int reduction : {0, 1, 2}) {
    std::string how = " reduction " + std::to_string(reduction);
    check("mse_loss" + how, {x, target}, [=](pp_frame *f, auto &t) {
      return pp_cuda_mse_loss(f, t[0], t[1], reduction);
    });
    check("mse_loss_grad" + how, {reduction == 2 ? g : lossGrad, x, target},
          [=](pp_frame *f, auto &t) {
            return pp_cuda_mse_loss_grad(f, t[0], t[1], t[2], reduction);
          });
    check("cross_entropy" + how, {logits, labels}, [=](pp_frame *f, auto &t) {
      return pp_cuda_cross_entropy(f, t[0], t[1], -100, reduction);
    });
    check("cross_entropy_grad" + how,
          {reduction == 2 ? rowGrads : lossGrad, logits, labels},
          [=](pp_frame *f, auto &t) {
            return pp_cuda_cross_entropy_grad(f, t[0], t[1], t[2], -100,
                                              reduction);
          });
  }
  const int64_t tableShape[] = {5, 32};
  check("gather_grad",
        {floats({7, 32}, 1, 0.1), integers({7}, {1, 4, 1, 0, -1, 1, 2})},
        [&](pp_frame *f, auto &t) {
          return pp_cuda_gather_grad(f, t[0], t[1], 0, 2, tableShape);
        });
  check("dropout", {x},
        [](pp_frame *f, auto &t) { return pp_cuda_dropout(f, t[0], 7, 0.25); });
  Input lhs = floats({3, 40, 70}, 1, 0.2), rhs = floats({70, 50}, 1, 0.6);
  for (int transposed : {0, 1})
    check(
        "matmul" + std::string(transposed ? " transposed" : ""),
        {lhs, transposed ? floats({50, 70}, 1, 0.6) : rhs},
        [=](pp_frame *f, auto &t) {
          return pp_cuda_matmul(f, t[0], t[1], 0, transposed);
        },
        /*ulps=*/1);
}

} // namespace

int main() {
  if (!pp::runtime::testing::gpuPresent())
    return 1;
  for (pp_dtype narrow : {PP_DTYPE_BF16, PP_DTYPE_F16})
    checkKernels(narrow);
  return failedChecks() == 0 ? 0 : 1;
}
