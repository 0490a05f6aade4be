//===- ElementTypes.h - bf16 and f16 elements -------------------*- C++ -*-===//
//
// The 16-bit floating-point element types as the kernels store them: the
// bits of a bfloat16 (the upper half of an IEEE single) and of an IEEE
// half, with conversions to and from float on the host and the GPU alike.
// Widening is exact. Narrowing rounds to nearest, ties to even, as
// PyTorch's .to(torch.bfloat16) and .to(torch.float16) do: a NaN stays a
// NaN (quiet), a value beyond the largest finite one becomes an infinity,
// and f16's subnormals are kept.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CORE_ELEMENTTYPES_H
#define PP_RUNTIME_CORE_ELEMENTTYPES_H

#include "runtime/core/HostDevice.h"

#include <cstdint>
#include <cstring>

namespace pp::runtime {

/// A bfloat16 element: 1 sign, 8 exponent and 7 mantissa bits.
struct BFloat16 {
  uint16_t bits = 0;
};

/// An IEEE 754 half element: 1 sign, 5 exponent and 10 mantissa bits.
struct Half {
  uint16_t bits = 0;
};

/// The bits of a float, and the float of bits.
PP_HOST_DEVICE inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
PP_HOST_DEVICE inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

PP_HOST_DEVICE inline float toFloat(BFloat16 value) {
  return floatOf(static_cast<uint32_t>(value.bits) << 16);
}

PP_HOST_DEVICE inline BFloat16 toBFloat16(float value) {
  uint32_t bits = bitsOf(value);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN: keep it quiet.
    return {static_cast<uint16_t>((bits >> 16) | 0x40)};
  // Round to nearest, ties to even: add half an ulp of bfloat16 less one,
  // plus the bit that is about to become the last.
  bits += 0x7fff + ((bits >> 16) & 1);
  return {static_cast<uint16_t>(bits >> 16)};
}

PP_HOST_DEVICE inline float toFloat(Half value) {
  uint32_t sign = static_cast<uint32_t>(value.bits & 0x8000) << 16;
  uint32_t exponent = (value.bits >> 10) & 0x1f, mantissa = value.bits & 0x3ff;
  if (exponent == 0x1f) // Infinity or NaN.
    return floatOf(sign | 0x7f800000 | (mantissa << 13));
  if (exponent != 0)
    return floatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or a subnormal: mantissa x 2^-24, exact in a float.
  float magnitude = static_cast<float>(mantissa) * floatOf(0x33800000);
  return floatOf(sign | bitsOf(magnitude));
}

PP_HOST_DEVICE inline Half toHalf(float value) {
  uint32_t bits = bitsOf(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) // NaN: keep it quiet.
    return {static_cast<uint16_t>(sign | 0x7e00 | ((magnitude >> 13) & 0x3ff))};
  // 65520 and above round to infinity.
  if (magnitude >= 0x477ff000)
    return {static_cast<uint16_t>(sign | 0x7c00)};
  if (magnitude < 0x38800000) {
    // Below f16's smallest normal (2^-14): a multiple of 2^-24, rounded by
    // the float addition itself (to nearest, ties to even).
    float shifted = floatOf(magnitude) + 0.5f;
    return {static_cast<uint16_t>(sign | (bitsOf(shifted) - bitsOf(0.5f)))};
  }
  // A normal half: rebias the exponent and round the 13 dropped bits.
  uint32_t rebased = magnitude - (112u << 23);
  rebased += 0xfff + ((rebased >> 13) & 1);
  return {static_cast<uint16_t>(sign | (rebased >> 13))};
}

} // namespace pp::runtime

#endif // PP_RUNTIME_CORE_ELEMENTTYPES_H
