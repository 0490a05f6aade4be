//===- MathFormulas.h - elementwise formulas of the math kernels -*- C++
//-*-===//
//
// The per-element formulas of the math kernels and their gradients, shared
// by the CPU kernels (CpuMathKernels.cpp) and their CUDA twins so that both
// compute the same thing in the same order. They are PyTorch's formulas,
// evaluated in f32 as PyTorch evaluates them (erff, tanhf, expf, powf, logf).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_MATHFORMULAS_H
#define PP_RUNTIME_KERNELS_MATHFORMULAS_H

#include "runtime/kernels/Frame.h"

#include <math.h>

#include <string>

namespace pp::runtime::math {

constexpr float kSqrt1_2 = 0.70710678118654752440f;      // 1 / sqrt(2)
constexpr float k2_SqrtPi = 1.12837916709551257390f;     // 2 / sqrt(pi)
constexpr float kGeluTanhBeta = 0.79788456080286535588f; // sqrt(2 / pi)
constexpr float kGeluTanhKappa = 0.044715f;
constexpr float kNormalPdfScale = 0.39894228040143267794f; // 1 / sqrt(2 pi)

PP_HOST_DEVICE inline float rsqrt(float x) { return 1.0f / sqrtf(x); }

PP_HOST_DEVICE inline float sqrtGrad(float grad, float result) {
  return grad / (2.0f * result);
}

PP_HOST_DEVICE inline float rsqrtGrad(float grad, float result) {
  return -0.5f * grad * (result * result * result);
}

PP_HOST_DEVICE inline float erfGrad(float grad, float x) {
  return k2_SqrtPi * expf(-(x * x)) * grad;
}

/// `approximate`: 0 evaluates the normal CDF with erf, 1 with the tanh
/// formula (nn.GeluApproximation).
PP_HOST_DEVICE inline float gelu(float x, int approximate) {
  if (approximate) {
    float inner = kGeluTanhBeta * (x + kGeluTanhKappa * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
  return x * 0.5f * (1.0f + erff(x * kSqrt1_2));
}

PP_HOST_DEVICE inline float geluGrad(float grad, float x, int approximate) {
  if (approximate) {
    float xSquared = x * x;
    float inner = kGeluTanhBeta * (x + kGeluTanhKappa * xSquared * x);
    float tanhInner = tanhf(inner);
    float left = 0.5f * x, right = 1.0f + tanhInner;
    float leftDerivative = 0.5f * right;
    float tanhDerivative = 1.0f - tanhInner * tanhInner;
    float innerDerivative =
        kGeluTanhBeta * (1.0f + 3.0f * kGeluTanhKappa * xSquared);
    return grad * (leftDerivative + left * tanhDerivative * innerDerivative);
  }
  float cdf = 0.5f * (1.0f + erff(x * kSqrt1_2));
  float pdf = expf(-0.5f * x * x) * kNormalPdfScale;
  return grad * (cdf + x * pdf);
}

/// max and min that return a NaN operand, as PyTorch's maximum/minimum.
PP_HOST_DEVICE inline float maximum(float a, float b) {
  return a > b || a != a ? a : b;
}
PP_HOST_DEVICE inline float minimum(float a, float b) {
  return a < b || a != a ? a : b;
}

/// The gradient of pow(a, b) for operand 0 (a) or 1 (b): 0 for a where
/// b = 0, and for b where a = 0 and b >= 0 (PyTorch's pow_backward).
PP_HOST_DEVICE inline float powGrad(float grad, float a, float b,
                                    int64_t operand) {
  if (operand == 0)
    return b == 0.0f ? 0.0f : grad * (b * powf(a, b - 1.0f));
  return a == 0.0f && b >= 0.0f ? 0.0f : grad * (powf(a, b) * logf(a));
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
