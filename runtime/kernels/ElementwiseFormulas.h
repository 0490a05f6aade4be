//===- ElementwiseFormulas.h - per-element formulas of nn ops ---*- C++ -*-===//
//
// One function per elementwise nn op (NN_Elementwise), named after its
// mnemonic, taking the op's operand elements in order and then its inherent
// attributes sorted by name, as the kernels take them. The CPU and CUDA
// kernels call them for every element, and so does the code generated for
// an nn.fusion (pp-lower-to-runtime), which includes this header: fused and
// unfused programs compute the same bits. Every value is an f32 rounded
// after each operation; the runtime and generated code are compiled without
// floating-point contraction (-ffp-contract=off, nvcc -fmad=false).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_ELEMENTWISEFORMULAS_H
#define PP_RUNTIME_KERNELS_ELEMENTWISEFORMULAS_H

#include "runtime/kernels/MathFormulas.h"

#include <math.h>
#include <stdint.h>

namespace pp::runtime::elementwise {

PP_HOST_DEVICE inline float neg(float x) { return -x; }
using math::exp;
PP_HOST_DEVICE inline float log(float x) { return logf(x); }
PP_HOST_DEVICE inline float sqrt(float x) { return sqrtf(x); }
using math::rsqrt;
using math::erf;
using math::tanh;
PP_HOST_DEVICE inline float relu(float x) { return x > 0 ? x : 0.0f; }
using math::sigmoid;
PP_HOST_DEVICE inline float gelu(float x, int approximate) {
  return math::gelu(x, approximate);
}

PP_HOST_DEVICE inline float add(float a, float b) { return a + b; }
PP_HOST_DEVICE inline float sub(float a, float b) { return a - b; }
PP_HOST_DEVICE inline float mul(float a, float b) { return a * b; }
PP_HOST_DEVICE inline float div(float a, float b) { return a / b; }
PP_HOST_DEVICE inline float pow(float a, float b) { return math::pow(a, b); }
using math::maximum;
using math::minimum;
/// `condition` is an i1 element (one byte, 0 or 1).
PP_HOST_DEVICE inline float where(uint8_t condition, float onTrue,
                                  float onFalse) {
  return condition ? onTrue : onFalse;
}

PP_HOST_DEVICE inline float relu_grad(float grad, float input) {
  return input > 0 ? grad : 0.0f;
}
PP_HOST_DEVICE inline float sigmoid_grad(float grad, float result) {
  return grad * result * (1.0f - result);
}
PP_HOST_DEVICE inline float tanh_grad(float grad, float result) {
  return grad * (1.0f - result * result);
}
PP_HOST_DEVICE inline float sqrt_grad(float grad, float result) {
  return math::sqrtGrad(grad, result);
}
PP_HOST_DEVICE inline float rsqrt_grad(float grad, float result) {
  return math::rsqrtGrad(grad, result);
}
PP_HOST_DEVICE inline float erf_grad(float grad, float input) {
  return math::erfGrad(grad, input);
}
PP_HOST_DEVICE inline float gelu_grad(float grad, float input,
                                      int approximate) {
  return math::geluGrad(grad, input, approximate);
}
PP_HOST_DEVICE inline float pow_grad(float grad, float lhs, float rhs,
                                     int64_t operand) {
  return math::powGrad(grad, lhs, rhs, operand);
}
PP_HOST_DEVICE inline float maximum_grad(float grad, float lhs, float rhs,
                                         int64_t operand) {
  return math::maximumGrad(grad, lhs, rhs, operand);
}
PP_HOST_DEVICE inline float minimum_grad(float grad, float lhs, float rhs,
                                         int64_t operand) {
  return math::minimumGrad(grad, lhs, rhs, operand);
}

} // namespace pp::runtime::elementwise

#endif // PP_RUNTIME_KERNELS_ELEMENTWISEFORMULAS_H
