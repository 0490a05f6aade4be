//===- CpuMathKernels.cpp - host kernels of the math functions ------------===//
//
// log, sqrt, rsqrt, erf, gelu, pow, maximum, minimum and their gradients;
// the formulas are in ElementwiseFormulas.h (over MathFormulas.h), shared
// with the CUDA kernels and fused code.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/CpuKernelLoops.h"
#include "runtime/kernels/ElementwiseFormulas.h"

using namespace pp::runtime;
using namespace pp::runtime::cpu;

namespace {

/// Elementwise `function(grad, lhs, rhs)` with NumPy broadcasting of the
/// three: the gradient of operand `operand` of a binary op.
template <typename Function>
pp_tensor *operandGrad(pp_frame *frame, const char *kernel, pp_tensor *grad,
                       pp_tensor *lhs, pp_tensor *rhs, int64_t operand,
                       Function function) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, kernel, {grad, lhs, rhs});
  if (!dtype || !math::checkOperand(frame, kernel, operand))
    return nullptr;
  std::optional<Shape> shape =
      broadcastOperands(frame, kernel, {grad, lhs, rhs});
  pp_tensor *result = shape ? newTensor(frame, *dtype, *shape) : nullptr;
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    FloatsIn<T> g = readFloats<T>(grad), a = readFloats<T>(lhs),
                b = readFloats<T>(rhs);
    FloatsOut<T> out = writeFloats<T>(result);
    int64_t inner = rowLength(*shape);
    forEachBroadcastRow<3>({shapeOf(grad), shapeOf(lhs), shapeOf(rhs)}, *shape,
                           [&](const auto &at, const auto &steps) {
                             for (int64_t j = 0; j < inner; ++j)
                               out[at[3] + j] =
                                   function(g[at[0] + j * steps[0]],
                                            a[at[1] + j * steps[1]],
                                            b[at[2] + j * steps[2]], operand);
                           });
  });
  return result;
}

} // namespace

extern "C" {

pp_tensor *pp_cpu_log(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "log", input, PP_FORMULA(log));
}

pp_tensor *pp_cpu_sqrt(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "sqrt", input, PP_FORMULA(sqrt));
}

pp_tensor *pp_cpu_rsqrt(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "rsqrt", input, PP_FORMULA(rsqrt));
}

pp_tensor *pp_cpu_erf(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "erf", input, PP_FORMULA(erf));
}

pp_tensor *pp_cpu_sqrt_grad(pp_frame *frame, pp_tensor *grad,
                            pp_tensor *result) {
  return binary(frame, "sqrt_grad", grad, result, PP_FORMULA(sqrt_grad));
}

pp_tensor *pp_cpu_rsqrt_grad(pp_frame *frame, pp_tensor *grad,
                             pp_tensor *result) {
  return binary(frame, "rsqrt_grad", grad, result, PP_FORMULA(rsqrt_grad));
}

pp_tensor *pp_cpu_erf_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *input) {
  return binary(frame, "erf_grad", grad, input, PP_FORMULA(erf_grad));
}

pp_tensor *pp_cpu_gelu(pp_frame *frame, pp_tensor *input, int approximate) {
  return withConstantFlag(approximate, [&](auto tanh) {
    return unary(frame, "gelu", input, [](float x) {
      return elementwise::gelu(x, decltype(tanh)::value);
    });
  });
}

pp_tensor *pp_cpu_gelu_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *input,
                            int approximate) {
  return withConstantFlag(approximate, [&](auto tanh) {
    return binary(frame, "gelu_grad", grad, input, [](float g, float x) {
      return elementwise::gelu_grad(g, x, decltype(tanh)::value);
    });
  });
}

pp_tensor *pp_cpu_pow(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "pow", lhs, rhs, PP_FORMULA(pow));
}

pp_tensor *pp_cpu_maximum(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "maximum", lhs, rhs, PP_FORMULA(maximum));
}

pp_tensor *pp_cpu_minimum(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "minimum", lhs, rhs, PP_FORMULA(minimum));
}

pp_tensor *pp_cpu_pow_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *lhs,
                           pp_tensor *rhs, int64_t operand) {
  return operandGrad(frame, "pow_grad", grad, lhs, rhs, operand,
                     PP_FORMULA(pow_grad));
}

pp_tensor *pp_cpu_maximum_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *lhs,
                               pp_tensor *rhs, int64_t operand) {
  return operandGrad(frame, "maximum_grad", grad, lhs, rhs, operand,
                     PP_FORMULA(maximum_grad));
}

pp_tensor *pp_cpu_minimum_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *lhs,
                               pp_tensor *rhs, int64_t operand) {
  return operandGrad(frame, "minimum_grad", grad, lhs, rhs, operand,
                     PP_FORMULA(minimum_grad));
}

} // extern "C"
