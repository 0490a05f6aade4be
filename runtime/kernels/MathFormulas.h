//===- MathFormulas.h - elementwise formulas of the math kernels -*- C++
//-*-===//
//
// The per-element formulas of the math kernels and their gradients, shared
// by the CPU kernels (Cpu*Kernels.cpp) and their CUDA twins so that both
// compute the same thing in the same order. They are PyTorch's formulas,
// evaluated in f32; exp, erf, tanh and sigmoid are this file's own
// branch-free approximations (below; their polynomials are minimax fits of
// the relative error by Lawson's iteration in double, coefficients rounded
// to f32, errors measured against double), so that the CPU loops vectorize
// and give the same bits (NaN payloads aside) on every CPU, and on CUDA
// without --use_fast_math: every a * b + c is an explicit fmaf (nvcc fuses
// any other), and the CPU kernels compile with -ffp-contract=off.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_MATHFORMULAS_H
#define PP_RUNTIME_KERNELS_MATHFORMULAS_H

#include "runtime/kernels/Frame.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <string>

/// The x86-64 levels that the elementwise loops (the kernels' and
/// the generated fused loops of nn.fusion) are compiled for, one of
/// them picked when the library loads: AVX-512, AVX2 with FMA, baseline.
/// Each gives the same bits: the formulas fuse a multiply and an add only
/// through an explicit fmaf, and the kernels and
/// generated code compile with -ffp-contract=off. Each clone inlines all
/// it calls (flatten): a formula left out of line by the inliner (GCC
/// kept the GELU's and its gradient's) is built for baseline x86-64, where
/// every fmaf is a libm call, and made those kernels 10x slower. Not under
/// ThreadSanitizer: the clones' resolvers run while the library is
/// relocated, before TSan's runtime starts, and would crash in its hooks.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&        \
    !defined(__SANITIZE_THREAD__)
#define PP_CPU_CLONES                                                          \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), \
                 flatten))
#else
#define PP_CPU_CLONES
#endif

namespace pp::runtime::math {

constexpr float kSqrt1_2 = 0.70710678118654752440f;      // 1 / sqrt(2)
constexpr float k2_SqrtPi = 1.12837916709551257390f;     // 2 / sqrt(pi)
constexpr float kGeluTanhBeta = 0.79788456080286535588f; // sqrt(2 / pi)
constexpr float kGeluTanhKappa = 0.044715f;
constexpr float kNormalPdfScale = 0.39894228040143267794f; // 1 / sqrt(2 pi)

PP_HOST_DEVICE inline uint32_t bitsOf(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  return bits;
}

PP_HOST_DEVICE inline float floatOfBits(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

/// The polynomial c0 x^n + c1 x^(n-1) + ... + cn by Horner's rule in fmaf
/// (unrolled at compile time, so that the loops calling it vectorize).
PP_HOST_DEVICE inline float polynomial(float, float cn) { return cn; }
template <typename... Rest>
PP_HOST_DEVICE inline float polynomial(float x, float c0, float c1,
                                       Rest... rest) {
  return polynomial(x, fmaf(c0, x, c1), rest...);
}

/// e^x within 1 ulp (0.94 at most over all f32, denormal results
/// included; glibc's expf: 0.50 on every 7th; MathFormulasTest checks a sweep):
/// x = j ln 2 + r with |r| <= ln(2) / 2, e^r by its Taylor polynomial of degree
/// 7, scaled by 2^j in two exact steps.
PP_HOST_DEVICE inline float exp(float x) {
  constexpr float kLog2e = 0x1.715476p+0f, kLn2High = 0x1.62e430p-1f,
                  kLn2Low = -0x1.05c610p-29f;
  // Adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits.
  constexpr float kRoundingShift = 0x1.8p23f;
  // Beyond these e^x is inf or rounds to 0; NaN passes.
  float clamped = x > 89.0f ? 89.0f : x < -104.0f ? -104.0f : x;
  float shifted = fmaf(clamped, kLog2e, kRoundingShift);
  float j = shifted - kRoundingShift;
  float r = fmaf(j, -kLn2Low, fmaf(j, -kLn2High, clamped));
  float p = polynomial(r, 0x1.a01a02p-13f, 0x1.6c16c2p-10f, 0x1.111112p-7f,
                       0x1.555556p-5f, 0x1.555556p-3f, 0.5f, 1.0f, 1.0f);
  // 2^j as 2^half * 2^(j - half): each factor is a normal f32 for j in
  // [-150, 128], so only the last product rounds (into the denormals).
  int32_t power =
      static_cast<int32_t>(bitsOf(shifted) - bitsOf(kRoundingShift));
  int32_t half = power / 2;
  float scale = floatOfBits(static_cast<uint32_t>(half + 127) << 23);
  // At the clamp e^x rounds to 0: multiplying by an exact 0 gives it without
  // an underflowing product, which costs x86 a microcode assist per element
  // (a causal mask's -inf scores made softmax 10x slower).
  float rest =
      clamped == -104.0f
          ? 0.0f
          : floatOfBits(static_cast<uint32_t>(power - half + 127) << 23);
  return p * scale * rest;
}

/// erf(x) within 1.5 ulp (1.14 at most over all f32; glibc's erff: 0.90 on
/// every 7th; MathFormulasTest checks a sweep): x + x P(x^2) below 0.921875,
/// else 1 - e^Q(|x|) with Q a polynomial fit of log(erfc) on [0.921875, 4]
/// (|x| > 4 evaluates Q(4), whose erf rounds to 1).
PP_HOST_DEVICE inline float erf(float x) {
  float s = x * x;
  float p = polynomial(s, 0x1.5f12dap-14f, -0x1.aaea14p-11f, 0x1.54daeap-8f,
                       -0x1.b8107ep-6f, 0x1.ce2e20p-4f, -0x1.812744p-2f,
                       0x1.06eba8p-3f);
  float nearZero = fmaf(p, x, x);
  float t = fabsf(x);
  float u = t > 4.0f ? 4.0f : t;
  float q = polynomial(u, -0x1.624fa6p-16f, 0x1.c7da36p-12f, -0x1.1170f2p-8f,
                       0x1.9b9d12p-6f, -0x1.bb8988p-4f, -0x1.444568p-1f,
                       -0x1.21280cp+0f, 0x1.6f643cp-13f);
  float tail = copysignf(1.0f - exp(q), x);
  return t < 0.921875f ? nearZero : tail;
}

/// tanh(x) within 2 ulp (1.37 at most over all f32; glibc's tanhf: 2.16 on
/// every 7th; MathFormulasTest checks a sweep): x + x^3 P(x^2) below 0.625,
/// else 1 - 2 / (e^(2|x|) + 1), with x's sign.
PP_HOST_DEVICE inline float tanh(float x) {
  float s = x * x;
  float p = polynomial(s, 0x1.18e1eep-9f, -0x1.0bf502p-7f, 0x1.638b5ap-6f,
                       -0x1.b9ee90p-5f, 0x1.111066p-3f, -0x1.555554p-2f);
  float nearZero = fmaf(x * s, p, x);
  float t = fabsf(x);
  float tail = 1.0f - 2.0f / (exp(2.0f * t) + 1.0f);
  // copysignf keeps the sign of -0, which nearZero's sum loses.
  return copysignf(t < 0.625f ? nearZero : tail, x);
}

/// 1 / (1 + e^-x) within 2 ulp (1.48 at most over all f32;
/// MathFormulasTest checks a sweep): with e = e^-|x|, 1 / (1 + e) for x >= 0
/// and e / (1 + e) below (which keeps the small values of very negative x), the
/// quotient corrected once for the rounding of 1 + e and its own.
PP_HOST_DEVICE inline float sigmoid(float x) {
  float e = exp(-fabsf(x));
  float numerator = x >= 0.0f ? 1.0f : e;
  float denominator = 1.0f + e;
  float denominatorLow = (1.0f - denominator) + e; // 1 + e, exactly
  float quotient = numerator / denominator;
  float residual =
      fmaf(-quotient, denominatorLow, fmaf(-quotient, denominator, numerator));
  return quotient + residual / denominator;
}

PP_HOST_DEVICE inline float rsqrt(float x) { return 1.0f / sqrtf(x); }

PP_HOST_DEVICE inline float sqrtGrad(float grad, float result) {
  return grad / (2.0f * result);
}

PP_HOST_DEVICE inline float rsqrtGrad(float grad, float result) {
  return -0.5f * grad * (result * result * result);
}

PP_HOST_DEVICE inline float erfGrad(float grad, float x) {
  return k2_SqrtPi * exp(-(x * x)) * grad;
}

/// `approximate`: 0 evaluates the normal CDF with erf, 1 with the tanh
/// formula (nn.GeluApproximation).
PP_HOST_DEVICE inline float gelu(float x, int approximate) {
  if (approximate) {
    float inner = kGeluTanhBeta * fmaf(kGeluTanhKappa * x * x, x, x);
    return 0.5f * x * (1.0f + tanh(inner));
  }
  return x * 0.5f * (1.0f + erf(x * kSqrt1_2));
}

PP_HOST_DEVICE inline float geluGrad(float grad, float x, int approximate) {
  if (approximate) {
    float xSquared = x * x;
    float inner = kGeluTanhBeta * fmaf(kGeluTanhKappa * xSquared, x, x);
    float tanhInner = tanh(inner);
    float left = 0.5f * x, right = 1.0f + tanhInner;
    float leftDerivative = 0.5f * right;
    float tanhDerivative = fmaf(-tanhInner, tanhInner, 1.0f);
    float innerDerivative =
        kGeluTanhBeta * fmaf(3.0f * kGeluTanhKappa, xSquared, 1.0f);
    return grad * fmaf(left * tanhDerivative, innerDerivative, leftDerivative);
  }
  float cdf = 0.5f * (1.0f + erf(x * kSqrt1_2));
  float pdf = exp(-0.5f * x * x) * kNormalPdfScale;
  return grad * fmaf(x, pdf, cdf);
}

/// max and min that return a NaN operand, as PyTorch's maximum/minimum.
PP_HOST_DEVICE inline float maximum(float a, float b) {
  return a > b || a != a ? a : b;
}
PP_HOST_DEVICE inline float minimum(float a, float b) {
  return a < b || a != a ? a : b;
}

/// a^b: a * a for b = 2 and a * a * a for b = 3, as PyTorch's pow by those
/// scalar exponents computes them, else powf. A fused loop whose exponent
/// is a constant (GPT-2's GELU cubes) then has no powf call and vectorizes.
PP_HOST_DEVICE inline float pow(float a, float b) {
  if (b == 2.0f)
    return a * a;
  if (b == 3.0f)
    return a * a * a;
  return powf(a, b);
}

/// The gradient of pow(a, b) for operand 0 (a) or 1 (b): 0 for a where
/// b = 0, and for b where a = 0 and b >= 0 (PyTorch's pow_backward, whose
/// a^(b - 1) and a^b are pow's).
PP_HOST_DEVICE inline float powGrad(float grad, float a, float b,
                                    int64_t operand) {
  if (operand == 0)
    return b == 0.0f ? 0.0f : grad * (b * pow(a, b - 1.0f));
  return a == 0.0f && b >= 0.0f ? 0.0f : grad * (pow(a, b) * logf(a));
}

/// The gradient of the operand `self` of max(self, other) (`larger`) or
/// min(self, other): all of it where `self` is selected, half on a tie, 0
/// where the other is selected (PyTorch's maximum/minimum backward).
PP_HOST_DEVICE inline float selectGrad(float grad, float self, float other,
                                       bool larger) {
  if (self == other)
    return grad / 2.0f;
  return (larger ? self < other : self > other) ? 0.0f : grad;
}

/// maximum_grad and minimum_grad of operand 0 (a) or 1 (b).
PP_HOST_DEVICE inline float maximumGrad(float grad, float a, float b,
                                        int64_t operand) {
  return operand == 0 ? selectGrad(grad, a, b, true)
                      : selectGrad(grad, b, a, true);
}
PP_HOST_DEVICE inline float minimumGrad(float grad, float a, float b,
                                        int64_t operand) {
  return operand == 0 ? selectGrad(grad, a, b, false)
                      : selectGrad(grad, b, a, false);
}

/// True when `operand` names an operand of a binary op (0: lhs, 1: rhs);
/// else false, with the error recorded.
inline bool checkOperand(pp_frame *frame, const char *kernel, int64_t operand) {
  if (operand == 0 || operand == 1)
    return true;
  failFrame(frame, std::string(kernel) + ": operand " +
                       std::to_string(operand) + " must be 0 (lhs) or 1 (rhs)");
  return false;
}

} // namespace pp::runtime::math

#endif // PP_RUNTIME_KERNELS_MATHFORMULAS_H
