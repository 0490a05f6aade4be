//===- MathFormulasTest.cpp - accuracy of the kernels' own formulas -------===//
//
// exp, erf, tanh and sigmoid of runtime/kernels/MathFormulas.h against the
// double-precision C library on a dense sweep of all f32 values and their
// edge cases, and the vectorized CPU kernels against the scalar formulas,
// bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/MathFormulas.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

namespace {

namespace math = pp::runtime::math;

/// The spacing of the f32 values around `exact` (denormals: the smallest).
double ulpAt(double exact) {
  int exponent;
  std::frexp(static_cast<float>(std::fabs(exact)), &exponent);
  return std::ldexp(1.0, std::max(exponent, -125) - 24);
}

/// Inputs: every 4099th f32 (both signs, all magnitudes) and the edges:
/// zeros, denormals, infinities, NaN, the formulas' split points.
std::vector<float> sweep() {
  std::vector<float> inputs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099)
    inputs.push_back(math::floatOfBits(static_cast<uint32_t>(bits)));
  const float edges[] = {0.0f,
                         0x1p-149f,
                         0x1.fffffcp-127f,
                         0x1p-126f,
                         0.625f,
                         0.921875f,
                         4.0f,
                         9.0f,
                         88.72283f,
                         88.7229f,
                         89.0f,
                         103.9720f,
                         103.9721f,
                         104.0f,
                         1e30f,
                         std::numeric_limits<float>::max(),
                         std::numeric_limits<float>::infinity()};
  for (float edge : edges)
    for (float x :
         {edge, -edge, std::nextafter(edge, 0.0f), -std::nextafter(edge, 0.0f),
          std::nextafter(edge, 2 * edge + 1)})
      inputs.push_back(x);
  inputs.push_back(std::numeric_limits<float>::quiet_NaN());
  return inputs;
}

/// Checks `formula` against `exact` (in double) on sweep(): within
/// `maxUlp`, NaN where the exact value is NaN, infinities and signed zeros
/// exact.
void expectWithin(const char *name, float (*formula)(float),
                  double (*exact)(double), double maxUlp) {
  double worst = 0;
  float worstInput = 0;
  for (float x : sweep()) {
    float got = formula(x);
    double want = exact(x);
    float rounded = static_cast<float>(want);
    if (std::isnan(want) || std::isinf(rounded) || want == 0) {
      EXPECT_EQ(math::bitsOf(got) == math::bitsOf(rounded) ||
                    (std::isnan(got) && std::isnan(want)),
                true)
          << name << "(" << x << ") = " << got << ", not " << rounded;
      continue;
    }
    double error = std::fabs(got - want) / ulpAt(want);
    if (error > worst) {
      worst = error;
      worstInput = x;
    }
  }
  EXPECT_LE(worst, maxUlp) << name << " is " << worst << " ulp off at "
                           << std::hexfloat << worstInput;
}

double exactSigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(MathFormulas, ExpErfTanhSigmoidAreWithinTheirDocumentedError) {
  expectWithin(
      "exp", math::exp, [](double x) { return std::exp(x); }, 1.0);
  expectWithin(
      "erf", math::erf, [](double x) { return std::erf(x); }, 1.5);
  expectWithin(
      "tanh", math::tanh, [](double x) { return std::tanh(x); }, 2.0);
  expectWithin("sigmoid", math::sigmoid, exactSigmoid, 2.0);
}

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

Tensor tensorOf(const std::vector<float> &data) {
  pp_tensor *tensor = nullptr;
  int64_t count = static_cast<int64_t>(data.size());
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, 1, &count, &tensor), PP_OK);
  std::copy(data.begin(), data.end(),
            static_cast<float *>(pp_tensor_data(tensor)));
  return Tensor(tensor);
}

/// Checks that `kernel` (a vectorized loop, whichever x86-64 level this CPU
/// picks) gives the bits of `formula` (scalar, baseline x86-64) on each of
/// `inputs`; NaN results need only be NaN.
void expectSameBits(const char *name, pp_tensor *result,
                    const std::vector<float> &inputs,
                    const std::function<float(float)> &formula) {
  ASSERT_NE(result, nullptr) << name;
  const float *got = static_cast<const float *>(pp_tensor_data(result));
  for (size_t i = 0; i < inputs.size(); ++i) {
    float want = formula(inputs[i]);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got[i])) << name << "(" << inputs[i] << ")";
    else
      EXPECT_EQ(math::bitsOf(got[i]), math::bitsOf(want))
          << name << "(" << inputs[i] << ") = " << got[i] << ", not " << want;
  }
}

TEST(MathFormulas, VectorizedKernelsGiveTheScalarFormulasBits) {
  // An odd count, so that the loops' vector and remainder parts both run.
  std::vector<float> inputs;
  for (int i = 0; i < 1001; ++i)
    inputs.push_back(std::ldexp(std::sin(0.37f * i), i % 15 - 5));
  for (float x : {0.0f, -0.0f, 0x1p-149f, 1e30f, -1e30f,
                  std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    inputs.push_back(x);
  Tensor x = tensorOf(inputs);
  std::vector<float> grads(inputs.size(), 0.75f);
  Tensor g = tensorOf(grads);
  pp_frame frame;
  expectSameBits("exp", Tensor(pp_cpu_exp(&frame, x.get())).get(), inputs,
                 math::exp);
  expectSameBits("erf", Tensor(pp_cpu_erf(&frame, x.get())).get(), inputs,
                 math::erf);
  expectSameBits("tanh", Tensor(pp_cpu_tanh(&frame, x.get())).get(), inputs,
                 math::tanh);
  expectSameBits("sigmoid", Tensor(pp_cpu_sigmoid(&frame, x.get())).get(),
                 inputs, math::sigmoid);
  for (int approximate : {0, 1}) {
    expectSameBits("gelu",
                   Tensor(pp_cpu_gelu(&frame, x.get(), approximate)).get(),
                   inputs, [&](float v) { return math::gelu(v, approximate); });
    expectSameBits(
        "gelu_grad",
        Tensor(pp_cpu_gelu_grad(&frame, g.get(), x.get(), approximate)).get(),
        inputs, [&](float v) { return math::geluGrad(0.75f, v, approximate); });
  }
  EXPECT_TRUE(frame.error.empty()) << frame.error;
}

} // namespace

namespace {

TEST(MathFormulas, PowBySquareAndCubeMultipliesAsPyTorch) {
  // PyTorch's pow by the scalar 2 or 3 multiplies (a * a, a * a * a);
  // other exponents are powf's. The gradient's a^(b - 1) is pow's too.
  for (float a : {-2.5f, -0.0f, 0.3f, 1.7f, 1e20f, 3.0e-20f}) {
    EXPECT_EQ(pp::runtime::math::pow(a, 2.0f), a * a) << a;
    EXPECT_EQ(pp::runtime::math::pow(a, 3.0f), a * a * a) << a;
    if (a > 0) {
      EXPECT_EQ(pp::runtime::math::pow(a, 1.5f), powf(a, 1.5f)) << a;
    }
    EXPECT_EQ(pp::runtime::math::powGrad(1.0f, a, 3.0f, 0), 3.0f * (a * a))
        << a;
  }
}

} // namespace
