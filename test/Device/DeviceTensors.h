//===- DeviceTensors.h - host and device tensors of the GPU checks -*- C++
//-*-===//
//
// What the GPU check programs share: operands made on the host and copied
// to the device, and comparisons of device results with the CPU twins'
// (within 1e-5) or with the unfused CUDA kernels' (bit for bit).
//
//===----------------------------------------------------------------------===//

#ifndef PP_TEST_DEVICE_DEVICETENSORS_H
#define PP_TEST_DEVICE_DEVICETENSORS_H

#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace pp::runtime::testing {

/// A host f32 tensor of `shape` holding `scale * sin(1.7 i + phase)`.
inline pp_tensor *hostFloats(std::vector<int64_t> shape, float scale,
                             float phase) {
  pp_tensor *tensor = nullptr;
  pp_tensor_create(PP_DTYPE_F32, shape.size(), shape.data(), &tensor);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = scale * std::sin(1.7f * static_cast<float>(i) + phase);
  return tensor;
}

/// A device copy of host tensor `host`.
inline pp_tensor *toDevice(pp_tensor *host) {
  pp_tensor *device = nullptr;
  std::vector<int64_t> shape = shapeOf(host);
  pp_tensor_create_in(pp_cuda_tensor_allocator(), pp_tensor_dtype(host),
                      shape.size(), shape.data(), &device);
  cudaMemcpy(pp_tensor_data(device), pp_tensor_data(host),
             pp_tensor_nbytes(host), cudaMemcpyHostToDevice);
  return device;
}

inline std::vector<float> valuesOf(pp_tensor *tensor, bool onDevice) {
  std::vector<float> values(pp_tensor_numel(tensor));
  cudaMemcpy(values.data(), pp_tensor_data(tensor), values.size() * 4,
             onDevice ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  return values;
}

/// "" when device tensor `got` holds host tensor `expected`'s values, each
/// within 1e-5 of the larger magnitude (plus 1e-6, for the elements whose
/// sums cancel), else why not.
inline std::string agree(const std::string &what, pp_tensor *expected,
                         pp_tensor *got) {
  if (!expected || !got)
    return what + ": no result";
  if (shapeOf(expected) != shapeOf(got))
    return what + ": the GPU's shape " + formatShape(shapeOf(got)) +
           ", the CPU's " + formatShape(shapeOf(expected));
  std::vector<float> e = valuesOf(expected, false), g = valuesOf(got, true);
  for (size_t i = 0; i < e.size(); ++i) {
    if (std::isnan(e[i]) && std::isnan(g[i]))
      continue;
    double difference = std::abs(static_cast<double>(e[i]) - g[i]);
    if (!(difference <= 1e-5 * std::max(std::abs(e[i]), std::abs(g[i])) + 1e-6))
      return what + ": element " + std::to_string(i) + " is " +
             std::to_string(g[i]) + ", the CPU's " + std::to_string(e[i]);
  }
  return "";
}

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// "" when device tensors `expected` and `got` hold the same bits, else
/// why not.
inline std::string sameBits(const std::string &what, const Tensor &expected,
                            const Tensor &got) {
  if (!expected || !got)
    return what + ": no result";
  if (pp_tensor_dtype(expected.get()) != pp_tensor_dtype(got.get()) ||
      shapeOf(expected.get()) != shapeOf(got.get()))
    return what + ": the fused kernel's shape " +
           formatShape(shapeOf(got.get())) + ", the unfused kernels' " +
           formatShape(shapeOf(expected.get()));
  std::vector<float> e = valuesOf(expected.get(), true),
                     g = valuesOf(got.get(), true);
  for (size_t i = 0; i < e.size(); ++i)
    if (std::memcmp(&e[i], &g[i], sizeof(float)) != 0)
      return what + ": element " + std::to_string(i) + " is " +
             std::to_string(g[i]) + ", the unfused kernels' " +
             std::to_string(e[i]);
  return "";
}

} // namespace pp::runtime::testing

#endif // PP_TEST_DEVICE_DEVICETENSORS_H
