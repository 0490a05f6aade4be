//===- CudaAttentionCheck.cpp - CUDA attention against the CPU's ----------===//
//
// Needs a GPU, so it is not part of the lit suites (CI has none): run
// build/test/Device/PPCudaAttentionCheck on a GPU machine. Runs
// pp_cuda_attention and pp_cuda_attention_grad on two sets of operands:
// small ones (2 x 3 heads, Sq 5, Sk 7, D 4, Dv 6, a [Sq, Sk] bias and a
// [1, 3, Sq, Sk] mask) and ones with more keys than a block has threads
// (2 x 2 heads, Sq 6, Sk 300, D 8, Dv 5, a [2, 1, Sq, Sk] bias and an
// [Sq, Sk] mask, filling with -inf rows that keep only a few positions),
// with the key stored both ways and with either transform (scale or
// divide, fill where the mask is true or false). Each case checks that
// the results and gradients are the bits of the unfused CUDA kernels that
// pp-fuse-attention replaces (matmul, mul or div, add, where, softmax,
// matmul) and of the backward pp-autodiff builds for them (as
// AttentionKernelsTest does on the CPU), and that they are the CPU twins'
// within 1e-5 of the larger magnitude (cuBLAS adds in another order than
// the CPU). Prints one line per check and exits non-zero on a difference,
// on a failed call, or when the two targets refuse a bad mask with
// different errors.
//
//===----------------------------------------------------------------------===//

#include "DeviceCheck.h"
#include "DeviceTensors.h"

#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace pp::runtime;
using pp::runtime::testing::expect;
using pp::runtime::testing::failedChecks;
using namespace pp::runtime::testing;

namespace {

/// The sizes of one set of operands.
struct Sizes {
  int64_t batch, heads, queries, keys, depth, valueDepth;
};

/// A host bool tensor of `shape`, true at every third element.
pp_tensor *hostMask(std::vector<int64_t> shape) {
  pp_tensor *tensor = nullptr;
  pp_tensor_create(PP_DTYPE_BOOL, shape.size(), shape.data(), &tensor);
  uint8_t *data = static_cast<uint8_t *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = i % 3 == 0;
  return tensor;
}

/// A host bool tensor of [`queries`, `keys`] whose rows fill (as a mask
/// filling where true, and as one filling where false) few, all but a few
/// or a third of their positions, never all: row i is true at every 40th
/// position when i % 3 is 0, everywhere else when it is 1, and at every
/// third position when it is 2. A true element is 1 or 255, alternately:
/// any nonzero byte is true.
pp_tensor *hostRowMask(int64_t queries, int64_t keys) {
  std::vector<int64_t> shape = {queries, keys};
  pp_tensor *tensor = nullptr;
  pp_tensor_create(PP_DTYPE_BOOL, shape.size(), shape.data(), &tensor);
  uint8_t *data = static_cast<uint8_t *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < keys; ++j) {
      bool value = i % 3 == 0   ? j % 40 == 0
                   : i % 3 == 1 ? j % 40 != 0
                                : j % 3 == 0;
      data[i * keys + j] = value ? (j % 2 ? 255 : 1) : 0;
    }
  return tensor;
}

/// The operands of the attention calls, on one target.
struct Operands {
  pp_tensor *grad, *query, *key, *value, *bias, *mask;
};

/// The attributes of one case.
struct Attributes {
  int divide;
  double fill;
  int fillWhereTrue;
  double scale;
  int transposeKey;
};

/// A device f32 scalar.
Tensor deviceScalar(pp_frame &frame, float value) {
  return Tensor(pp_cuda_constant(&frame, PP_DTYPE_F32, 0, nullptr, 1, &value));
}

/// The results of attention and attention_grad: the result, then the
/// query's, key's and value's gradients.
struct AttentionResults {
  Tensor result, query, key, value;
};

/// Attention and its gradient on the device by the kernels of the ops
/// pp-fuse-attention replaces and of the backward pp-autodiff builds for
/// them, as AttentionKernelsTest composes the CPU's.
AttentionResults unfused(pp_frame &frame, const Operands &d,
                         const Attributes &a) {
  Tensor factor = deviceScalar(frame, static_cast<float>(a.scale));
  Tensor scores(pp_cuda_matmul(&frame, d.query, d.key, 0, a.transposeKey));
  Tensor input(a.divide ? pp_cuda_div(&frame, scores.get(), factor.get())
                        : pp_cuda_mul(&frame, scores.get(), factor.get()));
  if (d.bias)
    input.reset(pp_cuda_add(&frame, input.get(), d.bias));
  if (d.mask) {
    Tensor fill = deviceScalar(frame, static_cast<float>(a.fill));
    input.reset(a.fillWhereTrue
                    ? pp_cuda_where(&frame, d.mask, fill.get(), input.get())
                    : pp_cuda_where(&frame, d.mask, input.get(), fill.get()));
  }
  Tensor probabilities(pp_cuda_softmax(&frame, input.get(), -1));
  AttentionResults results;
  results.result.reset(
      pp_cuda_matmul(&frame, probabilities.get(), d.value, 0, 0));
  // The weighted sum's gradients, then softmax_grad, where's and the
  // scale's, then the scores' gradients.
  results.value.reset(
      pp_cuda_matmul(&frame, probabilities.get(), d.grad, 1, 0));
  Tensor dProbabilities(pp_cuda_matmul(&frame, d.grad, d.value, 0, 1));
  Tensor dScores(pp_cuda_softmax_grad(&frame, dProbabilities.get(),
                                      probabilities.get(), -1));
  if (d.mask) {
    Tensor zero = deviceScalar(frame, 0.0f);
    dScores.reset(
        a.fillWhereTrue
            ? pp_cuda_where(&frame, d.mask, zero.get(), dScores.get())
            : pp_cuda_where(&frame, d.mask, dScores.get(), zero.get()));
  }
  dScores.reset(a.divide ? pp_cuda_div(&frame, dScores.get(), factor.get())
                         : pp_cuda_mul(&frame, dScores.get(), factor.get()));
  results.query.reset(
      pp_cuda_matmul(&frame, dScores.get(), d.key, 0, !a.transposeKey));
  results.key.reset(a.transposeKey
                        ? pp_cuda_matmul(&frame, dScores.get(), d.query, 1, 0)
                        : pp_cuda_matmul(&frame, d.query, dScores.get(), 1, 0));
  return results;
}

/// "" when pp_cuda_attention and pp_cuda_attention_grad give the bits of
/// the unfused CUDA kernels (unfused).
std::string compareUnfused(const Operands &device, const Attributes &a) {
  pp_frame unfusedFrame, fusedFrame;
  AttentionResults expected = unfused(unfusedFrame, device, a);
  AttentionResults got;
  got.result.reset(pp_cuda_attention(
      &fusedFrame, device.query, device.key, device.value, device.bias,
      device.mask, a.divide, a.fill, a.fillWhereTrue, a.scale, a.transposeKey));
  pp_tensor *gradients[3] = {};
  pp_cuda_attention_grad(&fusedFrame, device.grad, device.query, device.key,
                         device.value, device.bias, device.mask, a.divide,
                         a.fill, a.fillWhereTrue, a.scale, a.transposeKey,
                         gradients);
  got.query.reset(gradients[0]);
  got.key.reset(gradients[1]);
  got.value.reset(gradients[2]);
  std::string why = unfusedFrame.error + fusedFrame.error;
  if (why.empty() && cudaDeviceSynchronize() != cudaSuccess)
    why = "the GPU failed";
  if (why.empty())
    why = sameBits("the result", expected.result, got.result);
  if (why.empty())
    why = sameBits("the query's gradient", expected.query, got.query);
  if (why.empty())
    why = sameBits("the key's gradient", expected.key, got.key);
  if (why.empty())
    why = sameBits("the value's gradient", expected.value, got.value);
  return why;
}

/// Runs attention (or, with `gradient`, attention_grad) on both targets;
/// "" when the GPU's results are the CPU's within the tolerance of agree.
std::string compare(const Operands &host, const Operands &device,
                    const Attributes &a, bool gradient) {
  pp_frame cpuFrame, cudaFrame;
  pp_tensor *expected[3] = {}, *got[3] = {};
  if (gradient) {
    pp_cpu_attention_grad(&cpuFrame, host.grad, host.query, host.key,
                          host.value, host.bias, host.mask, a.divide, a.fill,
                          a.fillWhereTrue, a.scale, a.transposeKey, expected);
    pp_cuda_attention_grad(&cudaFrame, device.grad, device.query, device.key,
                           device.value, device.bias, device.mask, a.divide,
                           a.fill, a.fillWhereTrue, a.scale, a.transposeKey,
                           got);
  } else {
    expected[0] = pp_cpu_attention(&cpuFrame, host.query, host.key, host.value,
                                   host.bias, host.mask, a.divide, a.fill,
                                   a.fillWhereTrue, a.scale, a.transposeKey);
    got[0] =
        pp_cuda_attention(&cudaFrame, device.query, device.key, device.value,
                          device.bias, device.mask, a.divide, a.fill,
                          a.fillWhereTrue, a.scale, a.transposeKey);
  }
  std::string why = cpuFrame.error + cudaFrame.error;
  if (why.empty() && cudaDeviceSynchronize() != cudaSuccess)
    why = "the GPU failed";
  const char *names[] = {"the query's gradient", "the key's gradient",
                         "the value's gradient"};
  for (int i = 0; why.empty() && i < (gradient ? 3 : 1); ++i)
    why = agree(gradient ? names[i] : "the result", expected[i], got[i]);
  for (int i = 0; i < 3; ++i) {
    pp_tensor_destroy(expected[i]);
    pp_tensor_destroy(got[i]);
  }
  return why;
}

/// "" when both targets refuse attention on a mask that does not broadcast
/// to the scores, with the same error and no result.
std::string refuseBadMask(const Operands &host, const Operands &device,
                          const Sizes &n) {
  // One query too many: it broadcasts to no scores.
  pp_tensor *badMask = hostMask({n.batch, n.queries + 1, n.keys});
  pp_tensor *deviceBadMask = toDevice(badMask);
  pp_frame cpuFrame, cudaFrame;
  pp_tensor *expected =
      pp_cpu_attention(&cpuFrame, host.query, host.key, host.value, nullptr,
                       badMask, 0, -1e9, 1, 0.5, 0);
  pp_tensor *got =
      pp_cuda_attention(&cudaFrame, device.query, device.key, device.value,
                        nullptr, deviceBadMask, 0, -1e9, 1, 0.5, 0);
  std::string why;
  if (expected || got)
    why = "a result";
  else if (cudaFrame.error.empty() || cudaFrame.error != cpuFrame.error)
    why = "the GPU's error '" + cudaFrame.error + "', the CPU's '" +
          cpuFrame.error + "'";
  for (pp_tensor *tensor : {expected, got, badMask, deviceBadMask})
    pp_tensor_destroy(tensor);
  return why;
}

/// The operands of one set of sizes and the attributes to run them with
/// (the key's layout aside).
struct Case {
  const char *name;
  Sizes sizes;
  /// The bias's shape, which broadcasts to the scores.
  std::vector<int64_t> biasShape;
  /// Whether the mask is hostRowMask's [Sq, Sk], else hostMask's
  /// [1, heads, Sq, Sk].
  bool rowMask;
  std::vector<Attributes> attributes;
};

/// Runs every check of `c`, with the key stored both ways.
void check(const Case &c) {
  const Sizes &n = c.sizes;
  pp_tensor *query = hostFloats({n.batch, n.heads, n.queries, n.depth}, 1, 0);
  pp_tensor *keys[] = {
      hostFloats({n.batch, n.heads, n.depth, n.keys}, 1, 0.4f),
      hostFloats({n.batch, n.heads, n.keys, n.depth}, 1, 0.4f)};
  pp_tensor *value =
      hostFloats({n.batch, n.heads, n.keys, n.valueDepth}, 1, 0.8f);
  pp_tensor *grad =
      hostFloats({n.batch, n.heads, n.queries, n.valueDepth}, 1, 1.2f);
  pp_tensor *bias = hostFloats(c.biasShape, 0.5f, 1.6f);
  pp_tensor *mask = c.rowMask ? hostRowMask(n.queries, n.keys)
                              : hostMask({1, n.heads, n.queries, n.keys});
  std::vector<pp_tensor *> onDevice;
  auto copied = [&](pp_tensor *host) {
    onDevice.push_back(toDevice(host));
    return onDevice.back();
  };
  for (int transposeKey : {0, 1}) {
    Operands host{grad, query, keys[transposeKey], value, bias, mask};
    Operands device{copied(grad),  copied(query), copied(keys[transposeKey]),
                    copied(value), copied(bias),  copied(mask)};
    for (Attributes a : c.attributes) {
      a.transposeKey = transposeKey;
      std::string label = std::string(" (") + c.name + ")" +
                          (a.divide ? " divide" : " scale") +
                          (a.transposeKey ? " key [Sk, D]" : " key [D, Sk]");
      expect("attention" + label,
             [&] { return compare(host, device, a, false); });
      expect("attention_grad" + label,
             [&] { return compare(host, device, a, true); });
      expect("attention and attention_grad are the unfused kernels' bits" +
                 label,
             [&] { return compareUnfused(device, a); });
    }
    if (transposeKey == 0)
      expect(std::string("attention refuses a mask that does not broadcast "
                         "as the CPU does (") +
                 c.name + ")",
             [&] { return refuseBadMask(host, device, n); });
  }
  for (pp_tensor *tensor : onDevice)
    pp_tensor_destroy(tensor);
  for (pp_tensor *tensor : {query, keys[0], keys[1], value, grad, bias, mask})
    pp_tensor_destroy(tensor);
}

} // namespace

int main() {
  if (!pp::runtime::testing::gpuPresent())
    return 1;
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  // Scaled, filled where the mask is true; divided, filled where false.
  check({"Sk 7",
         {2, 3, 5, 7, 4, 6},
         {5, 7},
         false,
         {Attributes{0, -1e9, 1, 0.5, 0}, Attributes{1, -3.0, 0, 2.0, 0}}});
  // More keys than a block's threads; -inf fills rows all but a few of
  // their positions (never a whole row, whose softmax is NaN).
  check({"Sk 300",
         {2, 2, 6, 300, 8, 5},
         {2, 1, 6, 300},
         true,
         {Attributes{0, -kInfinity, 1, 0.125, 0},
          Attributes{1, -kInfinity, 0, 2.0, 0}}});
  return failedChecks() == 0 ? 0 : 1;
}
