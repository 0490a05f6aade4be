//===- FloatElements.h - the element types compute kernels take -*- C++ -*-===//
//
// A compute kernel is written once over its element type T (float,
// BFloat16 or Half) and instantiated for each through visitFloatType. It
// reads every element as a float (loadFloat), computes in float, or double
// where it accumulates, and rounds each result once to T (storeFloat), as
// PyTorch's CPU and CUDA kernels compute bf16 and f16 tensors: a bf16
// kernel gives the bits of the f32 kernel's result on the widened operands,
// rounded to bf16.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_FLOATELEMENTS_H
#define PP_RUNTIME_KERNELS_FLOATELEMENTS_H

#include "runtime/core/ElementTypes.h"
#include "runtime/core/HostDevice.h"
#include "runtime/pp_kernels.h"

#include <type_traits>

namespace pp::runtime {

/// Calls `visit(T())` with the storage type of `dtype` when compute kernels
/// take it (f32: float, bf16: BFloat16, f16: Half) and returns true; false
/// for any other dtype.
template <typename Visit> bool visitFloatType(pp_dtype dtype, Visit &&visit) {
  switch (dtype) {
  case PP_DTYPE_F32:
    visit(float());
    return true;
  case PP_DTYPE_BF16:
    visit(BFloat16());
    return true;
  case PP_DTYPE_F16:
    visit(Half());
    return true;
  default:
    return false;
  }
}

/// The pp_dtype of the float element type T.
template <typename T> constexpr pp_dtype floatDtype() {
  if constexpr (std::is_same_v<T, BFloat16>)
    return PP_DTYPE_BF16;
  else if constexpr (std::is_same_v<T, Half>)
    return PP_DTYPE_F16;
  else
    return PP_DTYPE_F32;
}

/// An element as the float a kernel computes with (exact).
PP_HOST_DEVICE inline float loadFloat(float value) { return value; }
PP_HOST_DEVICE inline float loadFloat(BFloat16 value) { return toFloat(value); }
PP_HOST_DEVICE inline float loadFloat(Half value) { return toFloat(value); }

/// `value` as an element of T, rounded to nearest even.
template <typename T> PP_HOST_DEVICE T storeFloat(float value) {
  if constexpr (std::is_same_v<T, BFloat16>)
    return toBFloat16(value);
  else if constexpr (std::is_same_v<T, Half>)
    return toHalf(value);
  else
    return value;
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_FLOATELEMENTS_H
