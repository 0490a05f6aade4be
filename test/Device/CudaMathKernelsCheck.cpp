//===- CudaMathKernelsCheck.cpp - CUDA math kernels against the CPU ones --===//
//
// Needs a GPU, so it is not part of the lit suites (CI has none): run
// build/test/Device/PPCudaMathKernelsCheck on a GPU machine. Runs the math,
// reduction, log_softmax and layer_norm kernels and their gradients on the
// same inputs on both targets; prints one line per kernel and exits
// non-zero on a difference beyond a few f32 ulps (the device's expf, erff,
// tanhf, powf and logf may differ from the host's by an ulp) or on a
// failed call.
//
//===----------------------------------------------------------------------===//

#include "DeviceCheck.h"

#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

using namespace pp::runtime;

namespace {

/// A host f32 tensor of `shape` holding `scale * sin(1.7 i + phase) + shift`.
pp_tensor *hostTensor(std::vector<int64_t> shape, float scale, float phase,
                      float shift = 0.0f) {
  pp_tensor *tensor = nullptr;
  pp_tensor_create(PP_DTYPE_F32, shape.size(), shape.data(), &tensor);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = scale * std::sin(1.7f * static_cast<float>(i) + phase) + shift;
  return tensor;
}

pp_tensor *toDevice(pp_tensor *host) {
  pp_tensor *device = nullptr;
  std::vector<int64_t> shape = shapeOf(host);
  pp_tensor_create_in(pp_cuda_tensor_allocator(), PP_DTYPE_F32, shape.size(),
                      shape.data(), &device);
  cudaMemcpy(pp_tensor_data(device), pp_tensor_data(host),
             pp_tensor_nbytes(host), cudaMemcpyHostToDevice);
  return device;
}

std::vector<float> valuesOf(pp_tensor *tensor, bool onDevice) {
  std::vector<float> values(pp_tensor_numel(tensor));
  cudaMemcpy(values.data(), pp_tensor_data(tensor), values.size() * 4,
             onDevice ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  return values;
}

/// A kernel call on `inputs`, on the device when `cuda`.
using Call = std::function<pp_tensor *(pp_frame *, std::vector<pp_tensor *> &,
                                       bool cuda)>;

/// Runs `call` on both targets; false (after printing why) on a failure or
/// a difference above 4 ulps of the larger magnitude (plus 1e-7).
bool compare(const char *name, const std::vector<pp_tensor *> &hostInputs,
             const Call &call) {
  std::vector<pp_tensor *> host = hostInputs, device;
  for (pp_tensor *input : hostInputs)
    device.push_back(toDevice(input));
  pp_frame cpuFrame, cudaFrame;
  pp_tensor *expected = call(&cpuFrame, host, false);
  pp_tensor *got = call(&cudaFrame, device, true);
  cudaDeviceSynchronize();
  bool ok = expected && got && cpuFrame.error.empty() &&
            cudaFrame.error.empty() && shapeOf(expected) == shapeOf(got);
  double worst = 0;
  if (ok) {
    std::vector<float> e = valuesOf(expected, false), g = valuesOf(got, true);
    for (size_t i = 0; i < e.size(); ++i) {
      if (std::isnan(e[i]) && std::isnan(g[i]))
        continue;
      double difference = std::abs(static_cast<double>(e[i]) - g[i]);
      double limit = 4.8e-7 * std::max(std::abs(e[i]), std::abs(g[i])) + 1e-7;
      ok &= difference <= limit;
      worst = std::max(worst, difference);
    }
  }
  std::printf("%s %s max|diff|=%g %s%s\n", ok ? "PASS" : "FAIL", name, worst,
              cpuFrame.error.c_str(), cudaFrame.error.c_str());
  pp_tensor_destroy(expected);
  pp_tensor_destroy(got);
  for (pp_tensor *input : device)
    pp_tensor_destroy(input);
  return ok;
}

} // namespace

int main() {
  if (!pp::runtime::testing::gpuPresent())
    return 1;
  pp_tensor *x = hostTensor({4, 6, 32}, 4, 0);
  pp_tensor *g = hostTensor({4, 6, 32}, 1, 0.5f);
  pp_tensor *p = hostTensor({4, 6, 32}, 2, 0.3f, 2.1f);
  pp_tensor *e = hostTensor({32}, 1.5f, 0.7f);
  pp_tensor *w = hostTensor({32}, 1, 1), *b = hostTensor({32}, 1, 2);
  pp_tensor *row = hostTensor({4, 1, 32}, 1, 0.9f);
  const int64_t axes[] = {0, 2}, shape[] = {4, 6, 32};
  int failures = 0;
  auto check = [&](const char *name, std::vector<pp_tensor *> inputs,
                   const Call &call) {
    failures += !compare(name, inputs, call);
  };
  using Unary = pp_tensor *(*)(pp_frame *, pp_tensor *);
  using Binary = pp_tensor *(*)(pp_frame *, pp_tensor *, pp_tensor *);
  using OperandGrad = pp_tensor *(*)(pp_frame *, pp_tensor *, pp_tensor *,
                                     pp_tensor *, int64_t);
  for (auto [name, cpu, cuda, input] :
       {std::make_tuple("log", Unary(pp_cpu_log), Unary(pp_cuda_log), p),
        std::make_tuple("sqrt", Unary(pp_cpu_sqrt), Unary(pp_cuda_sqrt), p),
        std::make_tuple("rsqrt", Unary(pp_cpu_rsqrt), Unary(pp_cuda_rsqrt), p),
        std::make_tuple("erf", Unary(pp_cpu_erf), Unary(pp_cuda_erf), x)})
    check(name, {input},
          [cpu = cpu, cuda = cuda](pp_frame *f, auto &t, bool onDevice) {
            return (onDevice ? cuda : cpu)(f, t[0]);
          });
  for (auto [name, cpu, cuda, lhs, rhs] :
       {std::make_tuple("sqrt_grad", Binary(pp_cpu_sqrt_grad),
                        Binary(pp_cuda_sqrt_grad), g, p),
        std::make_tuple("rsqrt_grad", Binary(pp_cpu_rsqrt_grad),
                        Binary(pp_cuda_rsqrt_grad), g, p),
        std::make_tuple("erf_grad", Binary(pp_cpu_erf_grad),
                        Binary(pp_cuda_erf_grad), g, x),
        std::make_tuple("pow", Binary(pp_cpu_pow), Binary(pp_cuda_pow), p, e),
        std::make_tuple("maximum", Binary(pp_cpu_maximum),
                        Binary(pp_cuda_maximum), x, e),
        std::make_tuple("minimum", Binary(pp_cpu_minimum),
                        Binary(pp_cuda_minimum), x, e)})
    check(name, {lhs, rhs},
          [cpu = cpu, cuda = cuda](pp_frame *f, auto &t, bool onDevice) {
            return (onDevice ? cuda : cpu)(f, t[0], t[1]);
          });
  for (auto [name, cpu, cuda] :
       {std::make_tuple("pow_grad", OperandGrad(pp_cpu_pow_grad),
                        OperandGrad(pp_cuda_pow_grad)),
        std::make_tuple("maximum_grad", OperandGrad(pp_cpu_maximum_grad),
                        OperandGrad(pp_cuda_maximum_grad)),
        std::make_tuple("minimum_grad", OperandGrad(pp_cpu_minimum_grad),
                        OperandGrad(pp_cuda_minimum_grad))})
    for (int64_t operand : {0, 1})
      check(name, {g, p, row},
            [cpu = cpu, cuda = cuda, operand](pp_frame *f, auto &t,
                                              bool onDevice) {
              return (onDevice ? cuda : cpu)(f, t[0], t[1], t[2], operand);
            });
  for (int approximate : {0, 1}) {
    check("gelu", {x}, [=](pp_frame *f, auto &t, bool onDevice) {
      return (onDevice ? pp_cuda_gelu : pp_cpu_gelu)(f, t[0], approximate);
    });
    check("gelu_grad", {g, x}, [=](pp_frame *f, auto &t, bool onDevice) {
      return (onDevice ? pp_cuda_gelu_grad : pp_cpu_gelu_grad)(f, t[0], t[1],
                                                               approximate);
    });
  }
  using Reduce =
      pp_tensor *(*)(pp_frame *, pp_tensor *, int64_t, const int64_t *, int);
  for (auto [name, cpu, cuda] :
       {std::make_tuple("reduce_sum", Reduce(pp_cpu_reduce_sum),
                        Reduce(pp_cuda_reduce_sum)),
        std::make_tuple("reduce_mean", Reduce(pp_cpu_reduce_mean),
                        Reduce(pp_cuda_reduce_mean)),
        std::make_tuple("reduce_max", Reduce(pp_cpu_reduce_max),
                        Reduce(pp_cuda_reduce_max))})
    check(name, {x},
          [&, cpu = cpu, cuda = cuda](pp_frame *f, auto &t, bool onDevice) {
            return (onDevice ? cuda : cpu)(f, t[0], 2, axes, 1);
          });
  pp_tensor *rowGrad = hostTensor({6}, 1, 0.2f);
  check("reduce_sum_grad", {rowGrad}, [&](pp_frame *f, auto &t, bool onDevice) {
    return (onDevice ? pp_cuda_reduce_sum_grad
                     : pp_cpu_reduce_sum_grad)(f, t[0], 2, axes, 3, shape);
  });
  check("reduce_max_grad", {rowGrad, x},
        [&](pp_frame *f, auto &t, bool onDevice) {
          pp_tensor *max = (onDevice ? pp_cuda_reduce_max
                                     : pp_cpu_reduce_max)(f, t[1], 2, axes, 0);
          pp_tensor *result =
              (onDevice ? pp_cuda_reduce_max_grad
                        : pp_cpu_reduce_max_grad)(f, t[0], t[1], max, 2, axes);
          pp_tensor_destroy(max);
          return result;
        });
  for (int64_t axis : {-1, 1}) {
    check("log_softmax", {x}, [=](pp_frame *f, auto &t, bool onDevice) {
      return (onDevice ? pp_cuda_log_softmax : pp_cpu_log_softmax)(f, t[0],
                                                                   axis);
    });
    check("log_softmax_grad", {g, x}, [=](pp_frame *f, auto &t, bool onDevice) {
      return (onDevice ? pp_cuda_log_softmax_grad
                       : pp_cpu_log_softmax_grad)(f, t[0], t[1], axis);
    });
  }
  check("layer_norm", {x, w, b}, [](pp_frame *f, auto &t, bool onDevice) {
    return (onDevice ? pp_cuda_layer_norm : pp_cpu_layer_norm)(f, t[0], t[1],
                                                               t[2], -1, 1e-5);
  });
  for (int64_t index : {0, 1, 2})
    check(
        "layer_norm_grad", {g, x, w}, [=](pp_frame *f, auto &t, bool onDevice) {
          return (onDevice ? pp_cuda_layer_norm_grad : pp_cpu_layer_norm_grad)(
              f, t[0], t[1], t[2], -1, 1e-5, index);
        });
  for (pp_tensor *tensor : {x, g, p, e, w, b, row, rowGrad})
    pp_tensor_destroy(tensor);
  return failures == 0 ? 0 : 1;
}
