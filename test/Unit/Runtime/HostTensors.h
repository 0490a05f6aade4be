//===- HostTensors.h - host tensors for kernel tests -----------*- C++ -*-===//

#ifndef PP_TEST_UNIT_RUNTIME_HOSTTENSORS_H
#define PP_TEST_UNIT_RUNTIME_HOSTTENSORS_H

#include "runtime/pp_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A host tensor of `dtype` and `shape`, element i of f32 tensors
/// 2 sin(1.3 i + phase), of bool tensors true on a pattern of `phase`
/// (other types zero).
inline Tensor filled(std::vector<int64_t> shape, float phase,
                     pp_dtype dtype = PP_DTYPE_F32) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(dtype, shape.size(), shape.data(), &tensor),
            PP_OK);
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i) {
    if (dtype == PP_DTYPE_BOOL)
      static_cast<uint8_t *>(pp_tensor_data(tensor))[i] =
          (i * 7 + static_cast<int64_t>(phase)) % 5 < 3;
    else if (dtype == PP_DTYPE_F32)
      static_cast<float *>(pp_tensor_data(tensor))[i] =
          2.0f * std::sin(1.3f * static_cast<float>(i) + phase);
  }
  return Tensor(tensor);
}

/// True when the two tensors hold the same bits.
inline bool sameBits(const Tensor &a, const Tensor &b) {
  return a && b && pp_tensor_nbytes(a.get()) == pp_tensor_nbytes(b.get()) &&
         std::memcmp(pp_tensor_data(a.get()), pp_tensor_data(b.get()),
                     pp_tensor_nbytes(a.get())) == 0;
}

#endif // PP_TEST_UNIT_RUNTIME_HOSTTENSORS_H
