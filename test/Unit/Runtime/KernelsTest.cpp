//===- KernelsTest.cpp - CPU kernels against direct definitions -----------===//

#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A host tensor holding 0, 1, 2, ... scaled by `scale`.
Tensor iota(std::vector<int64_t> shape, float scale = 1.0f) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, shape.size(), shape.data(), &tensor),
            PP_OK);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = scale * static_cast<float>(i);
  return Tensor(tensor);
}

/// A host f32 tensor holding `data`.
Tensor tensorOf(std::vector<int64_t> shape, const std::vector<float> &data) {
  Tensor tensor = iota(shape);
  EXPECT_EQ(static_cast<size_t>(pp_tensor_numel(tensor.get())), data.size());
  std::memcpy(pp_tensor_data(tensor.get()), data.data(),
              data.size() * sizeof(float));
  return tensor;
}

/// `count` values spread over about [-3, 3] in no particular order.
std::vector<float> wiggly(int64_t count, float phase = 0.0f) {
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i)
    data[i] = 3.0f * std::sin(1.7f * static_cast<float>(i) + phase);
  return data;
}

std::vector<float> values(const Tensor &tensor) {
  const float *data = static_cast<const float *>(pp_tensor_data(tensor.get()));
  return std::vector<float>(data, data + pp_tensor_numel(tensor.get()));
}

std::vector<int64_t> shape(const Tensor &tensor) {
  return pp::runtime::shapeOf(tensor.get());
}

TEST(CpuKernels, AddBroadcastsBothOperandsInEveryDimension) {
  pp_frame frame;
  Tensor a = iota({3, 1, 4}), b = iota({2, 1}, 100.0f);
  Tensor sum(pp_cpu_add(&frame, a.get(), b.get()));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(sum), (std::vector<int64_t>{3, 2, 4}));
  std::vector<float> got = values(sum);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(got[(i * 2 + j) * 4 + k], (i * 4 + k) + 100.0f * j);
}

TEST(CpuKernels, SumToUndoesBroadcasting) {
  pp_frame frame;
  Tensor x = iota({3, 2, 4});
  int64_t target[] = {2, 1};
  Tensor sum(pp_cpu_sum_to(&frame, x.get(), 2, target));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(sum), (std::vector<int64_t>{2, 1}));
  for (int j = 0; j < 2; ++j) {
    float expected = 0;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 4; ++k)
        expected += (i * 2 + j) * 4 + k;
    EXPECT_EQ(values(sum)[j], expected);
  }
}

TEST(CpuKernels, BatchedMatmulBroadcastsTheBatch) {
  pp_frame frame;
  Tensor a = iota({2, 1, 2, 3}), b = iota({3, 3, 2}, 0.5f);
  Tensor c(pp_cpu_matmul(&frame, a.get(), b.get(), 0, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(c), (std::vector<int64_t>{2, 3, 2, 2}));
  std::vector<float> av = values(a), bv = values(b), cv = values(c);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          float expected = 0;
          for (int k = 0; k < 3; ++k)
            expected += av[p * 6 + m * 3 + k] * bv[q * 6 + k * 2 + n];
          EXPECT_FLOAT_EQ(cv[((p * 3 + q) * 2 + m) * 2 + n], expected);
        }
}

TEST(CpuKernels, CrossEntropySkipsIgnoredLabelsInSumAndCount) {
  pp_frame frame;
  Tensor logits = iota({3, 4}, 0.25f);
  int64_t shape3[] = {3};
  pp_tensor *labels = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_I64, 1, shape3, &labels), PP_OK);
  Tensor labelsOwner(labels);
  int64_t classes[] = {1, -100, 3};
  std::memcpy(pp_tensor_data(labels), classes, sizeof(classes));
  Tensor mean(pp_cpu_cross_entropy(&frame, logits.get(), labels, -100, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  double expected = 0;
  std::vector<float> z = values(logits);
  for (int r : {0, 2}) {
    double total = 0;
    for (int c = 0; c < 4; ++c)
      total += std::exp(z[r * 4 + c]);
    expected += std::log(total) - z[r * 4 + classes[r]];
  }
  EXPECT_NEAR(values(mean)[0], expected / 2, 1e-6);
}

TEST(CpuKernels, BadShapesAreReportedInTheFrame) {
  pp_frame frame;
  Tensor a = iota({2, 3}), b = iota({4});
  EXPECT_EQ(pp_cpu_add(&frame, a.get(), b.get()), nullptr);
  EXPECT_EQ(frame.error, "add: shapes 2x3 and 4 do not broadcast");
  // Later calls given the failed result pass the NULL on.
  EXPECT_EQ(pp_cpu_relu(&frame, nullptr), nullptr);
  EXPECT_EQ(frame.error, "add: shapes 2x3 and 4 do not broadcast");
}

TEST(CpuKernels, DivBroadcastsLikeAdd) {
  pp_frame frame;
  Tensor a = tensorOf({2, 1, 3}, wiggly(6));
  Tensor b = tensorOf({4, 1}, {0.5f, -1.25f, 3.0f, 7.0f});
  Tensor quotient(pp_cpu_div(&frame, a.get(), b.get()));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(quotient), (std::vector<int64_t>{2, 4, 3}));
  std::vector<float> av = values(a), bv = values(b), got = values(quotient);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_FLOAT_EQ(got[(i * 4 + j) * 3 + k],
                        static_cast<double>(av[i * 3 + k]) / bv[j]);
}

TEST(CpuKernels, ExpIsElementwise) {
  pp_frame frame;
  Tensor x = tensorOf({2, 3}, wiggly(6));
  Tensor y(pp_cpu_exp(&frame, x.get()));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(y), shape(x));
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(values(y)[i], std::exp(static_cast<double>(values(x)[i])));
}

/// softmax of `x` (shape [outer, size, inner]) along the middle dimension,
/// in double precision.
std::vector<double> softmaxReference(const std::vector<double> &x,
                                     int64_t outer, int64_t size,
                                     int64_t inner) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double total = 0;
      for (int64_t k = 0; k < size; ++k)
        total += std::exp(x[(o * size + k) * inner + i]);
      for (int64_t k = 0; k < size; ++k)
        y[(o * size + k) * inner + i] =
            std::exp(x[(o * size + k) * inner + i]) / total;
    }
  return y;
}

TEST(CpuKernels, SoftmaxAlongANegativeAxis) {
  pp_frame frame;
  Tensor x = tensorOf({2, 3, 4}, wiggly(24));
  Tensor negative(pp_cpu_softmax(&frame, x.get(), -2));
  Tensor positive(pp_cpu_softmax(&frame, x.get(), 1));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(negative), shape(x));
  std::vector<float> xv = values(x);
  std::vector<double> expected =
      softmaxReference(std::vector<double>(xv.begin(), xv.end()), 2, 3, 4);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(values(negative)[i], expected[i], 1e-7) << "element " << i;
  EXPECT_EQ(values(negative), values(positive));
}

TEST(CpuKernels, SoftmaxIsStableForLargeLogits) {
  pp_frame frame;
  Tensor x = tensorOf({1, 3}, {1000.0f, 1000.0f, -1000.0f});
  Tensor y(pp_cpu_softmax(&frame, x.get(), -1));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(values(y), (std::vector<float>{0.5f, 0.5f, 0.0f}));
}

TEST(CpuKernels, SoftmaxGradMatchesFiniteDifferences) {
  // The gradient of L(x) = sum(g * softmax(x, axis 0)) by central
  // differences of the double-precision softmax.
  pp_frame frame;
  Tensor x = tensorOf({3, 2}, wiggly(6));
  Tensor g = tensorOf({3, 2}, wiggly(6, 0.5f));
  Tensor y(pp_cpu_softmax(&frame, x.get(), 0));
  Tensor dx(pp_cpu_softmax_grad(&frame, g.get(), y.get(), -2));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(dx), shape(x));
  std::vector<float> xv = values(x), gv = values(g);
  auto loss = [&](std::vector<double> point) {
    std::vector<double> softmax = softmaxReference(point, 1, 3, 2);
    double sum = 0;
    for (size_t i = 0; i < softmax.size(); ++i)
      sum += gv[i] * softmax[i];
    return sum;
  };
  const double h = 1e-6;
  for (size_t j = 0; j < xv.size(); ++j) {
    std::vector<double> up(xv.begin(), xv.end()), down = up;
    up[j] += h;
    down[j] -= h;
    EXPECT_NEAR(values(dx)[j], (loss(up) - loss(down)) / (2 * h), 1e-6)
        << "element " << j;
  }
}

/// Expects `got` to hold `reference(i)` for every element, within `relative`
/// of its magnitude (plus `absolute`).
template <typename Reference>
void expectMatches(const Tensor &got, Reference reference,
                   double relative = 1e-6, double absolute = 1e-7) {
  std::vector<float> data = values(got);
  for (size_t i = 0; i < data.size(); ++i) {
    double expected = reference(i);
    EXPECT_NEAR(data[i], expected, relative * std::abs(expected) + absolute)
        << "element " << i;
  }
}

TEST(CpuKernels, MathFunctionsMatchDoublePrecision) {
  pp_frame frame;
  std::vector<float> xv = wiggly(12), positive(12);
  for (int i = 0; i < 12; ++i)
    positive[i] = std::abs(xv[i]) + 0.25f;
  Tensor x = tensorOf({3, 4}, xv), p = tensorOf({3, 4}, positive);
  auto at = [](const std::vector<float> &v) {
    return [&v](size_t i) { return static_cast<double>(v[i]); };
  };
  auto px = at(positive), wx = at(xv);
  expectMatches(Tensor(pp_cpu_log(&frame, p.get())),
                [&](size_t i) { return std::log(px(i)); });
  expectMatches(Tensor(pp_cpu_sqrt(&frame, p.get())),
                [&](size_t i) { return std::sqrt(px(i)); });
  expectMatches(Tensor(pp_cpu_rsqrt(&frame, p.get())),
                [&](size_t i) { return 1 / std::sqrt(px(i)); });
  expectMatches(Tensor(pp_cpu_erf(&frame, x.get())),
                [&](size_t i) { return std::erf(wx(i)); });
  // gelu: x * Phi(x), exactly and with PyTorch's tanh formula; the result
  // of a large negative x is tiny, hence the absolute tolerance.
  expectMatches(Tensor(pp_cpu_gelu(&frame, x.get(), 0)), [&](size_t i) {
    return wx(i) * 0.5 * (1 + std::erf(wx(i) / std::sqrt(2.0)));
  });
  expectMatches(Tensor(pp_cpu_gelu(&frame, x.get(), 1)), [&](size_t i) {
    double inner =
        std::sqrt(2 / M_PI) * (wx(i) + 0.044715 * wx(i) * wx(i) * wx(i));
    return 0.5 * wx(i) * (1 + std::tanh(inner));
  });
  Tensor exponent = tensorOf({4}, {2.0f, -0.5f, 0.0f, 1.5f});
  expectMatches(Tensor(pp_cpu_pow(&frame, p.get(), exponent.get())),
                [&](size_t i) {
                  double e[] = {2.0, -0.5, 0.0, 1.5};
                  return std::pow(px(i), e[i % 4]);
                });
  ASSERT_TRUE(frame.error.empty()) << frame.error;
}

TEST(CpuKernels, MathGradientsMatchFiniteDifferences) {
  // Each kernel's gradient of L(x) = sum(g * f(x)) against central
  // differences of f in double precision.
  pp_frame frame;
  std::vector<float> xv = wiggly(8), gv = wiggly(8, 0.5f), positive(8);
  for (int i = 0; i < 8; ++i)
    positive[i] = std::abs(xv[i]) + 0.25f;
  Tensor x = tensorOf({8}, xv), p = tensorOf({8}, positive);
  Tensor g = tensorOf({8}, gv);
  auto check = [&](pp_tensor *gradient, const std::vector<float> &at,
                   double (*f)(double)) {
    Tensor dx(gradient);
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    const double h = 1e-6;
    expectMatches(
        dx,
        [&](size_t i) {
          return gv[i] * (f(at[i] + h) - f(at[i] - h)) / (2 * h);
        },
        1e-5, 1e-6);
  };
  Tensor root(pp_cpu_sqrt(&frame, p.get()));
  Tensor inverseRoot(pp_cpu_rsqrt(&frame, p.get()));
  check(pp_cpu_sqrt_grad(&frame, g.get(), root.get()), positive,
        [](double v) { return std::sqrt(v); });
  check(pp_cpu_rsqrt_grad(&frame, g.get(), inverseRoot.get()), positive,
        [](double v) { return 1 / std::sqrt(v); });
  check(pp_cpu_erf_grad(&frame, g.get(), x.get()), xv,
        [](double v) { return std::erf(v); });
  check(pp_cpu_gelu_grad(&frame, g.get(), x.get(), 0), xv,
        [](double v) { return v * 0.5 * (1 + std::erf(v / std::sqrt(2.0))); });
  check(pp_cpu_gelu_grad(&frame, g.get(), x.get(), 1), xv, [](double v) {
    return 0.5 * v *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  });
}

TEST(CpuKernels, BinaryGradientsFollowPyTorchAtTheEdges) {
  // Values PyTorch 1.13 gives: pow's base gradient is 0 where the exponent
  // is 0, the exponent's is 0 where the base is 0 and the exponent >= 0 and
  // NaN for a negative base; maximum and minimum split a tie in halves and
  // give a NaN operand the whole gradient.
  pp_frame frame;
  Tensor g = tensorOf({6}, {1, 1, 1, 1, 1, 1});
  Tensor base = tensorOf({6}, {0, 0, 0, -2, 2, -2});
  Tensor exponent = tensorOf({6}, {2, 0, -1, 2, 0.5f, 0.5f});
  std::vector<float> dBase = values(
      Tensor(pp_cpu_pow_grad(&frame, g.get(), base.get(), exponent.get(), 0)));
  std::vector<float> dExponent = values(
      Tensor(pp_cpu_pow_grad(&frame, g.get(), base.get(), exponent.get(), 1)));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ((std::vector<float>(dBase.begin(), dBase.begin() + 4)),
            (std::vector<float>{0, 0, -inf, -4}));
  EXPECT_FLOAT_EQ(dBase[4], 0.5f / std::sqrt(2.0f));
  EXPECT_TRUE(std::isnan(dBase[5]));
  EXPECT_EQ((std::vector<float>(dExponent.begin(), dExponent.begin() + 3)),
            (std::vector<float>{0, 0, -inf}));
  EXPECT_TRUE(std::isnan(dExponent[3]));
  EXPECT_FLOAT_EQ(dExponent[4], std::sqrt(2.0f) * std::log(2.0f));

  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = tensorOf({4}, {1, 2, 3, nan}), b = tensorOf({4}, {1, 3, 2, 1});
  Tensor g4 = tensorOf({4}, {1, 1, 1, 1});
  auto grad = [&](auto kernel, int64_t operand) {
    return values(Tensor(kernel(&frame, g4.get(), a.get(), b.get(), operand)));
  };
  EXPECT_EQ(grad(pp_cpu_maximum_grad, 0), (std::vector<float>{0.5f, 0, 1, 1}));
  EXPECT_EQ(grad(pp_cpu_maximum_grad, 1), (std::vector<float>{0.5f, 1, 0, 1}));
  EXPECT_EQ(grad(pp_cpu_minimum_grad, 0), (std::vector<float>{0.5f, 1, 0, 1}));
  EXPECT_EQ(grad(pp_cpu_minimum_grad, 1), (std::vector<float>{0.5f, 0, 1, 1}));
  std::vector<float> max =
      values(Tensor(pp_cpu_maximum(&frame, a.get(), b.get())));
  std::vector<float> min =
      values(Tensor(pp_cpu_minimum(&frame, b.get(), a.get())));
  EXPECT_EQ((std::vector<float>(max.begin(), max.begin() + 3)),
            (std::vector<float>{1, 3, 3}));
  EXPECT_EQ((std::vector<float>(min.begin(), min.begin() + 3)),
            (std::vector<float>{1, 2, 2}));
  EXPECT_TRUE(std::isnan(max[3]) && std::isnan(min[3]));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
}

TEST(CpuKernels, BinaryGradientsBroadcastTheOperands) {
  pp_frame frame;
  Tensor g = tensorOf({2, 3}, wiggly(6, 0.3f));
  Tensor a = tensorOf({2, 1}, {0.5f, 1.5f}), b = tensorOf({3}, {2, 3, 0.5f});
  std::vector<float> gv = values(g);
  expectMatches(Tensor(pp_cpu_pow_grad(&frame, g.get(), a.get(), b.get(), 1)),
                [&](size_t i) {
                  double base = i < 3 ? 0.5 : 1.5, e[] = {2, 3, 0.5};
                  return gv[i] * std::pow(base, e[i % 3]) * std::log(base);
                });
  expectMatches(
      Tensor(pp_cpu_maximum_grad(&frame, g.get(), a.get(), b.get(), 0)),
      // lhs 0.5 ties with rhs 0.5 (element 2); lhs 1.5 beats it (element 5).
      [&](size_t i) { return i == 5   ? gv[i]
                             : i == 2 ? gv[i] / 2
                                      : 0.0; });
  ASSERT_TRUE(frame.error.empty()) << frame.error;
}

TEST(CpuKernels, ReductionsOverAnyAxesInDouble) {
  pp_frame frame;
  Tensor x = tensorOf({2, 3, 4}, wiggly(24));
  std::vector<float> xv = values(x);
  const int64_t outer[] = {0, -1};
  Tensor sum(pp_cpu_reduce_sum(&frame, x.get(), 2, outer, 0));
  Tensor mean(pp_cpu_reduce_mean(&frame, x.get(), 2, outer, 1));
  Tensor max(pp_cpu_reduce_max(&frame, x.get(), 2, outer, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(sum), (std::vector<int64_t>{3}));
  EXPECT_EQ(shape(mean), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(shape(max), (std::vector<int64_t>{3}));
  for (int j = 0; j < 3; ++j) {
    double total = 0, largest = -1e30;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) {
        total += xv[(i * 3 + j) * 4 + k];
        largest = std::max<double>(largest, xv[(i * 3 + j) * 4 + k]);
      }
    EXPECT_NEAR(values(sum)[j], total, 1e-6 * std::abs(total) + 1e-7);
    EXPECT_NEAR(values(mean)[j], total / 8, 1e-6 * std::abs(total / 8) + 1e-7);
    EXPECT_EQ(values(max)[j], largest);
  }
  // The gradient of the sum repeats the result gradient along the axes.
  const int64_t inputShape[] = {2, 3, 4};
  Tensor g = tensorOf({3}, {1, 2, 3});
  Tensor dx(pp_cpu_reduce_sum_grad(&frame, g.get(), 2, outer, 3, inputShape));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(dx), shape(x));
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(values(dx)[i], 1 + (i / 4) % 3) << "element " << i;
}

TEST(CpuKernels, ReduceMaxGradSplitsTiesEvenly) {
  // As PyTorch's amax: [[1, 3, 3], [2, 2, 2]] over axis 1.
  pp_frame frame;
  Tensor x = tensorOf({2, 3}, {1, 3, 3, 2, 2, 2});
  const int64_t axis[] = {1};
  Tensor y(pp_cpu_reduce_max(&frame, x.get(), 1, axis, 1));
  Tensor g = tensorOf({2, 1}, {1, 1});
  Tensor dx(pp_cpu_reduce_max_grad(&frame, g.get(), x.get(), y.get(), 1, axis));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  std::vector<float> expected = {0, 0.5f, 0.5f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f};
  EXPECT_EQ(values(dx), expected);
}

TEST(CpuKernels, LogSoftmaxAndItsGradientInDouble) {
  pp_frame frame;
  Tensor x = tensorOf({2, 3, 4}, wiggly(24));
  Tensor g = tensorOf({2, 3, 4}, wiggly(24, 0.5f));
  Tensor y(pp_cpu_log_softmax(&frame, x.get(), 1));
  Tensor dx(pp_cpu_log_softmax_grad(&frame, g.get(), y.get(), -2));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  std::vector<float> xv = values(x), gv = values(g);
  std::vector<double> softmax =
      softmaxReference(std::vector<double>(xv.begin(), xv.end()), 2, 3, 4);
  expectMatches(y, [&](size_t i) { return std::log(softmax[i]); });
  // dx = g - softmax * sum(g) along the axis.
  expectMatches(
      dx,
      [&](size_t i) {
        size_t o = i / 12, k = i % 4;
        double sum = 0;
        for (size_t j = 0; j < 3; ++j)
          sum += gv[o * 12 + j * 4 + k];
        return gv[i] - softmax[i] * sum;
      },
      1e-6, 1e-6);
}

/// layer_norm of the rows of `x` ([rows, size]) with `w` and `b` (empty: none)
/// in double precision.
std::vector<double> layerNormReference(const std::vector<float> &x,
                                       int64_t size,
                                       const std::vector<float> &w,
                                       const std::vector<float> &b,
                                       double epsilon) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size; ++r) {
    double mean = 0, variance = 0;
    for (int64_t j = 0; j < size; ++j)
      mean += x[r * size + j];
    mean /= size;
    for (int64_t j = 0; j < size; ++j)
      variance += (x[r * size + j] - mean) * (x[r * size + j] - mean);
    variance /= size;
    for (int64_t j = 0; j < size; ++j)
      y[r * size + j] = (x[r * size + j] - mean) /
                            std::sqrt(variance + epsilon) *
                            (w.empty() ? 1.0 : w[j]) +
                        (b.empty() ? 0.0 : b[j]);
  }
  return y;
}

TEST(CpuKernels, LayerNormAndItsGradientsInDouble) {
  // Over the last two dimensions of [2, 3, 4]; the gradients of
  // L = sum(g * layer_norm(x, w, b)) against central differences.
  pp_frame frame;
  std::vector<float> xv = wiggly(24), gv = wiggly(24, 0.5f);
  std::vector<float> wv = wiggly(12, 1.0f), bv = wiggly(12, 2.0f);
  Tensor x = tensorOf({2, 3, 4}, xv), g = tensorOf({2, 3, 4}, gv);
  Tensor w = tensorOf({3, 4}, wv), b = tensorOf({3, 4}, bv);
  const double epsilon = 1e-5;
  Tensor y(pp_cpu_layer_norm(&frame, x.get(), w.get(), b.get(), 1, epsilon));
  Tensor plain(
      pp_cpu_layer_norm(&frame, x.get(), nullptr, nullptr, -2, epsilon));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  std::vector<double> expected = layerNormReference(xv, 12, wv, bv, epsilon);
  expectMatches(
      y, [&](size_t i) { return expected[i]; }, 1e-6, 1e-6);
  std::vector<double> normalized = layerNormReference(xv, 12, {}, {}, epsilon);
  expectMatches(
      plain, [&](size_t i) { return normalized[i]; }, 1e-6, 1e-6);

  auto loss = [&](std::vector<float> xs, std::vector<float> ws) {
    std::vector<double> out = layerNormReference(xs, 12, ws, bv, epsilon);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += gv[i] * out[i];
    return sum;
  };
  // Differences of f32 inputs: a step of 1e-3 keeps rounding small.
  const float h = 1e-3f;
  auto difference = [&](std::vector<float> &point, size_t i, auto evaluate) {
    float saved = point[i];
    point[i] = saved + h;
    double up = evaluate();
    point[i] = saved - h;
    double down = evaluate();
    point[i] = saved;
    return (up - down) / (2 * h);
  };
  for (int64_t index = 0; index < 3; ++index) {
    SCOPED_TRACE(index);
    Tensor dv(pp_cpu_layer_norm_grad(&frame, g.get(), x.get(), w.get(), 1,
                                     epsilon, index));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    std::vector<float> &point = index == 0 ? xv : index == 1 ? wv : bv;
    expectMatches(
        dv,
        [&](size_t i) {
          return difference(point, i, [&] { return loss(xv, wv); });
        },
        1e-3, 1e-4);
  }
}

TEST(CpuKernels, BadReductionsAndOperandsAreReported) {
  pp_frame axes, twice, gradShape, operand, weight;
  Tensor x = iota({2, 3});
  const int64_t outside[] = {2}, repeated[] = {1, -1}, last[] = {1},
                inputShape[] = {2, 3};
  EXPECT_EQ(pp_cpu_reduce_sum(&axes, x.get(), 1, outside, 0), nullptr);
  EXPECT_EQ(axes.error, "reduce_sum: axis 2 is out of range for shape 2x3");
  EXPECT_EQ(pp_cpu_reduce_max(&twice, x.get(), 2, repeated, 0), nullptr);
  EXPECT_EQ(twice.error, "reduce_max: axis -1 is named twice for shape 2x3");
  Tensor g = iota({3});
  EXPECT_EQ(pp_cpu_reduce_sum_grad(&gradShape, g.get(), 1, last, 2, inputShape),
            nullptr);
  EXPECT_EQ(gradShape.error, "reduce_sum_grad: shape 3 is not 2x3 reduced "
                             "over the axes (2 or 2x1)");
  EXPECT_EQ(pp_cpu_pow_grad(&operand, x.get(), x.get(), x.get(), 2), nullptr);
  EXPECT_EQ(operand.error, "pow_grad: operand 2 must be 0 (lhs) or 1 (rhs)");
  Tensor w = iota({2});
  EXPECT_EQ(pp_cpu_layer_norm(&weight, x.get(), w.get(), nullptr, -1, 1e-5),
            nullptr);
  EXPECT_EQ(weight.error, "layer_norm: weight 2 must have the normalized "
                          "shape 3");
}

TEST(CpuKernels, SplitCutsEachPieceAlongTheAxis) {
  pp_frame frame;
  Tensor x = iota({2, 5, 3});
  const int64_t sizes[] = {2, 0, 3};
  int64_t start = 0;
  for (int64_t piece = 0; piece < 3; ++piece) {
    Tensor part(pp_cpu_split(&frame, x.get(), -2, 3, sizes, piece));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    EXPECT_EQ(shape(part), (std::vector<int64_t>{2, sizes[piece], 3}));
    std::vector<float> got = values(part);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < sizes[piece]; ++j)
        for (int k = 0; k < 3; ++k)
          EXPECT_EQ(got[(i * sizes[piece] + j) * 3 + k],
                    (i * 5 + start + j) * 3 + k);
    start += sizes[piece];
  }
}

TEST(CpuKernels, SplitMovesAnyElementType) {
  pp_frame frame;
  int64_t dims[] = {2, 2};
  pp_tensor *ids = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_I64, 2, dims, &ids), PP_OK);
  Tensor owner(ids);
  const int64_t data[] = {10, 11, 12, 13};
  std::memcpy(pp_tensor_data(ids), data, sizeof(data));
  const int64_t sizes[] = {1, 1};
  Tensor column(pp_cpu_split(&frame, ids, 1, 2, sizes, 1));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  ASSERT_EQ(pp_tensor_dtype(column.get()), PP_DTYPE_I64);
  const int64_t *got =
      static_cast<const int64_t *>(pp_tensor_data(column.get()));
  EXPECT_EQ(got[0], 11);
  EXPECT_EQ(got[1], 13);
}

/// Scatters `grad` into zeros of `input` along the slice starts:limits:
/// strides, element by element.
std::vector<float> sliceGradReference(const std::vector<float> &grad,
                                      std::vector<int64_t> gradShape,
                                      std::vector<int64_t> input,
                                      std::vector<int64_t> starts,
                                      std::vector<int64_t> strides) {
  int64_t total = 1;
  for (int64_t dim : input)
    total *= dim;
  std::vector<float> result(total, 0.0f);
  std::vector<int64_t> index(gradShape.size(), 0);
  for (float value : grad) {
    int64_t offset = 0;
    for (size_t d = 0; d < input.size(); ++d)
      offset = offset * input[d] + starts[d] + index[d] * strides[d];
    result[offset] = value;
    for (size_t d = gradShape.size(); d-- > 0 && ++index[d] == gradShape[d];)
      index[d] = 0;
  }
  return result;
}

TEST(CpuKernels, SliceGradScattersIntoZeros) {
  struct Case {
    std::vector<int64_t> grad, input, starts, limits, strides;
  };
  const Case cases[] = {
      {{4, 3}, {4, 8}, {0, 2}, {4, 8}, {1, 2}},
      {{2, 2, 2}, {5, 3, 4}, {1, 0, 1}, {5, 3, 3}, {2, 2, 1}},
      {{}, {}, {}, {}, {}},
  };
  for (const Case &c : cases) {
    pp_frame frame;
    int64_t count = 1;
    for (int64_t dim : c.grad)
      count *= dim;
    Tensor grad = tensorOf(c.grad, wiggly(count));
    int64_t rank = static_cast<int64_t>(c.grad.size());
    Tensor dx(pp_cpu_slice_grad(&frame, grad.get(), rank, c.input.data(), rank,
                                c.limits.data(), rank, c.starts.data(), rank,
                                c.strides.data()));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    EXPECT_EQ(shape(dx), c.input);
    EXPECT_EQ(values(dx), sliceGradReference(values(grad), c.grad, c.input,
                                             c.starts, c.strides));
  }
}

TEST(CpuKernels, BadAxesSizesAndSlicesAreReported) {
  Tensor x = iota({2, 6});
  const int64_t sizes[] = {2, 3};
  {
    pp_frame frame;
    EXPECT_EQ(pp_cpu_softmax(&frame, x.get(), 2), nullptr);
    EXPECT_EQ(frame.error, "softmax: axis 2 is out of range for shape 2x6");
  }
  {
    pp_frame frame;
    EXPECT_EQ(pp_cpu_split(&frame, x.get(), 1, 2, sizes, 0), nullptr);
    EXPECT_EQ(frame.error, "split: sizes 2x3 are not non-negative sizes adding "
                           "up to 6, the axis of 2x6");
  }
  {
    pp_frame frame;
    EXPECT_EQ(pp_cpu_split(&frame, x.get(), 0, 2, sizes, 2), nullptr);
    EXPECT_EQ(frame.error, "split: result 2 of 2 pieces does not exist");
  }
  {
    pp_frame frame;
    Tensor y = iota({2, 3});
    EXPECT_EQ(pp_cpu_softmax_grad(&frame, x.get(), y.get(), 1), nullptr);
    EXPECT_EQ(frame.error, "softmax_grad: grad 2x6 and result 2x3 differ");
  }
  {
    pp_frame frame;
    const int64_t input[] = {4, 8}, starts[] = {0, 2}, limits[] = {4, 8},
                  strides[] = {1, 2};
    EXPECT_EQ(pp_cpu_slice_grad(&frame, x.get(), 2, input, 2, limits, 2, starts,
                                2, strides),
              nullptr);
    EXPECT_EQ(frame.error, "slice_grad: dimension 0 of grad 2x6 is not the "
                           "slice 0:4:1 of input_shape 4x8");
    pp_frame counts;
    EXPECT_EQ(pp_cpu_slice_grad(&counts, x.get(), 2, input, 2, limits, 1,
                                starts, 2, strides),
              nullptr);
    EXPECT_EQ(counts.error, "slice_grad: grad 2x6 has rank 2 but input_shape, "
                            "starts, limits and strides have 2, 1, 2 and 2 "
                            "entries");
  }
}

/// A host tensor of `dtype` holding `data` (T is its C++ type; uint8_t for
/// bool).
template <typename T>
Tensor typed(pp_dtype dtype, std::vector<int64_t> shape,
             const std::vector<T> &data) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(dtype, shape.size(), shape.data(), &tensor),
            PP_OK);
  EXPECT_EQ(static_cast<size_t>(pp_tensor_numel(tensor)), data.size());
  std::memcpy(pp_tensor_data(tensor), data.data(), data.size() * sizeof(T));
  return Tensor(tensor);
}

template <typename T> std::vector<T> elements(const Tensor &tensor) {
  const T *data = static_cast<const T *>(pp_tensor_data(tensor.get()));
  return std::vector<T>(data, data + pp_tensor_numel(tensor.get()));
}

TEST(CpuKernels, CastTruncatesTowardZeroAndTestsNonzero) {
  pp_frame frame;
  const std::vector<float> x = {-2.75f, -0.5f, 0.0f, 0.25f, 2.9f, 3.0f};
  Tensor input = tensorOf({2, 3}, x);
  Tensor ints(pp_cpu_cast(&frame, input.get(), PP_DTYPE_I64));
  Tensor bools(pp_cpu_cast(&frame, input.get(), PP_DTYPE_BOOL));
  Tensor wide(pp_cpu_cast(&frame, input.get(), PP_DTYPE_F64));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(ints), (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(pp_tensor_dtype(ints.get()), PP_DTYPE_I64);
  ASSERT_EQ(pp_tensor_dtype(bools.get()), PP_DTYPE_BOOL);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(elements<int64_t>(ints)[i],
              static_cast<int64_t>(std::trunc(x[i])));
    EXPECT_EQ(elements<uint8_t>(bools)[i], x[i] != 0.0f ? 1 : 0);
    EXPECT_EQ(elements<double>(wide)[i], static_cast<double>(x[i]));
  }
  // Back from i64, i1 and f64; i64 to i32 to i1.
  Tensor fromInts(pp_cpu_cast(&frame, ints.get(), PP_DTYPE_F32));
  Tensor fromBools(pp_cpu_cast(&frame, bools.get(), PP_DTYPE_F32));
  Tensor narrow(pp_cpu_cast(&frame, wide.get(), PP_DTYPE_F32));
  Tensor int32s(pp_cpu_cast(&frame, ints.get(), PP_DTYPE_I32));
  Tensor int32Bools(pp_cpu_cast(&frame, int32s.get(), PP_DTYPE_BOOL));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(values(fromInts),
            (std::vector<float>{-2.0f, 0.0f, 0.0f, 0.0f, 2.0f, 3.0f}));
  EXPECT_EQ(values(fromBools),
            (std::vector<float>{1.0f, 1.0f, 0.0f, 1.0f, 1.0f, 1.0f}));
  EXPECT_EQ(values(narrow), x);
  EXPECT_EQ(elements<int32_t>(int32s),
            (std::vector<int32_t>{-2, 0, 0, 0, 2, 3}));
  EXPECT_EQ(elements<uint8_t>(int32Bools),
            (std::vector<uint8_t>{1, 0, 0, 0, 1, 1}));
}

TEST(CpuKernels, CastNamesTheDtypesItCannotConvert) {
  Tensor x = iota({2});
  {
    pp_frame frame;
    EXPECT_EQ(pp_cpu_cast(&frame, x.get(), 9), nullptr);
    EXPECT_EQ(frame.error, "cast: no kernel converts f32 to unknown; the cast "
                           "kernels convert between f32, bf16, f16, f64, i32, "
                           "i64 and i1");
  }
}

TEST(CpuKernels, WhereBroadcastsAllThreeOperands) {
  // [2, 1, 1], [3, 1] and [4] broadcast to [2, 3, 4]; i64 values show that
  // where moves elements of any size.
  pp_frame frame;
  Tensor condition = typed<uint8_t>(PP_DTYPE_BOOL, {2, 1, 1}, {1, 0});
  Tensor onTrue = typed<int64_t>(PP_DTYPE_I64, {3, 1}, {10, 20, 30});
  Tensor onFalse = typed<int64_t>(PP_DTYPE_I64, {4}, {-1, -2, -3, -4});
  Tensor y(pp_cpu_where(&frame, condition.get(), onTrue.get(), onFalse.get()));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(y), (std::vector<int64_t>{2, 3, 4}));
  std::vector<int64_t> got = elements<int64_t>(y);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(got[(i * 3 + j) * 4 + k], i == 0 ? 10 * (j + 1) : -(k + 1));

  // The same on f32 values, with the condition as the widest operand.
  Tensor mask = typed<uint8_t>(PP_DTYPE_BOOL, {2, 3}, {1, 0, 0, 1, 1, 0});
  Tensor a = tensorOf({3}, wiggly(3)), b = tensorOf({2, 1}, {7.0f, 8.0f});
  Tensor z(pp_cpu_where(&frame, mask.get(), a.get(), b.get()));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  std::vector<float> av = values(a), zv = values(z);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(zv[i * 3 + j],
                elements<uint8_t>(mask)[i * 3 + j] ? av[j] : 7.0f + i);
}

/// gather of `data` (shape [outer, size, inner] around the axis) at
/// `indices`, element by element.
std::vector<float> gatherReference(const std::vector<float> &data,
                                   int64_t outer, int64_t size, int64_t inner,
                                   const std::vector<int64_t> &indices) {
  std::vector<float> result;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : indices)
      for (int64_t i = 0; i < inner; ++i)
        result.push_back(
            data[(o * size + (index < 0 ? index + size : index)) * inner + i]);
  return result;
}

TEST(CpuKernels, GatherTakesSlicesAtNegativeAndRepeatedIndices) {
  pp_frame frame;
  Tensor data = tensorOf({3, 4, 2}, wiggly(24));
  Tensor indices = typed<int32_t>(PP_DTYPE_I32, {2, 2}, {-1, 0, 2, 2});
  Tensor y(pp_cpu_gather(&frame, data.get(), indices.get(), -2));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(y), (std::vector<int64_t>{3, 2, 2, 2}));
  EXPECT_EQ(values(y), gatherReference(values(data), 3, 4, 2, {-1, 0, 2, 2}));
}

TEST(CpuKernels, GatherGradSumsRepeatedIndicesInDouble) {
  // Row 1 of the [3, 4] data is gathered three times (once as -3), row 0
  // never; the reference scatter-adds in index order in double.
  pp_frame frame;
  const std::vector<int64_t> ids = {1, 2, -3, 1};
  Tensor indices = typed<int64_t>(PP_DTYPE_I64, {4}, ids);
  Tensor grad = tensorOf({4, 4}, wiggly(16));
  const int64_t dataShape[] = {3, 4};
  Tensor dx(
      pp_cpu_gather_grad(&frame, grad.get(), indices.get(), 0, 2, dataShape));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(dx), (std::vector<int64_t>{3, 4}));
  std::vector<double> expected(12, 0.0);
  std::vector<float> g = values(grad);
  for (size_t j = 0; j < ids.size(); ++j)
    for (int i = 0; i < 4; ++i)
      expected[(ids[j] < 0 ? ids[j] + 3 : ids[j]) * 4 + i] += g[j * 4 + i];
  for (size_t e = 0; e < expected.size(); ++e)
    EXPECT_EQ(values(dx)[e], static_cast<float>(expected[e]))
        << "element " << e;
}

TEST(CpuKernels, GatherGradAddGivesTheBitsOfAddingTheMadeTable) {
  // Into a sum that holds values already: the made table added element by
  // element in f32, as the trainer adds a handed-over gradient.
  pp_frame frame;
  const std::vector<int64_t> ids = {1, 2, -3, 1, 0};
  Tensor indices = typed<int64_t>(PP_DTYPE_I64, {5}, ids);
  Tensor grad = tensorOf({5, 4}, wiggly(20));
  const int64_t dataShape[] = {4, 4};
  Tensor made(
      pp_cpu_gather_grad(&frame, grad.get(), indices.get(), 0, 2, dataShape));
  Tensor sum = tensorOf({4, 4}, wiggly(16, 0.3f));
  std::vector<float> expected = values(sum);
  for (size_t e = 0; e < expected.size(); ++e)
    expected[e] += values(made)[e];
  pp_cpu_gather_grad_add(&frame, sum.get(), grad.get(), indices.get(), 0);
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(std::memcmp(values(sum).data(), expected.data(),
                        expected.size() * sizeof(float)),
            0);
  // Row 3, which no index names, is untouched.
  EXPECT_EQ(values(sum)[12], wiggly(16, 0.3f)[12]);
}

TEST(CpuKernels, GatherGradAddTakesF32Only) {
  pp_frame frame;
  Tensor indices = typed<int64_t>(PP_DTYPE_I64, {1}, {0});
  Tensor grad = tensorOf({1, 2}, {1.0f, 2.0f});
  Tensor sum = typed<int64_t>(PP_DTYPE_I64, {2, 2}, {0, 0, 0, 0});
  pp_cpu_gather_grad_add(&frame, sum.get(), grad.get(), indices.get(), 0);
  EXPECT_EQ(frame.error,
            "gather_grad_add: adds f32 into an f32 sum, not f32 into i64");
}

TEST(CpuKernels, MatmulAddAddsTheProductIntoTheSum) {
  // sum [3, 2] += x^T [3, 4] x y [4, 2], as a weight's gradient adds in.
  pp_frame frame;
  Tensor x = tensorOf({4, 3}, wiggly(12)),
         y = tensorOf({4, 2}, wiggly(8, 1.0f));
  Tensor sum = tensorOf({3, 2}, wiggly(6, 2.0f));
  std::vector<float> before = values(sum);
  pp_cpu_matmul_add(&frame, sum.get(), x.get(), y.get(), 1, 0);
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  std::vector<float> a = values(x), b = values(y);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double product = 0;
      for (int p = 0; p < 4; ++p)
        product += static_cast<double>(a[p * 3 + i]) * b[p * 2 + j];
      EXPECT_NEAR(values(sum)[i * 2 + j], before[i * 2 + j] + product, 1e-5)
          << "element (" << i << ", " << j << ")";
    }
}

TEST(CpuKernels, MatmulAddNamesAShapeOrTypeThatDoesNotFit) {
  pp_frame frame;
  Tensor x = iota({4, 3}), y = iota({4, 2}), sum = iota({2, 3});
  pp_cpu_matmul_add(&frame, sum.get(), x.get(), y.get(), 1, 0);
  EXPECT_EQ(frame.error, "matmul_add: the product is 3x2, the sum 2x3");
  pp_frame batched;
  Tensor cube = iota({2, 4, 3});
  pp_cpu_matmul_add(&batched, sum.get(), cube.get(), y.get(), 1, 0);
  EXPECT_EQ(batched.error, "matmul_add: adds a product of 2-D f32 matrices "
                           "into a 2-D f32 sum, not f32 of shape 2x4x3");
}

TEST(Frame, WithoutSumsAGradientSumIsHandedOverAsTheResult) {
  pp_frame frame;
  const int64_t dataShape[] = {2, 2};
  pp_tensor *sum = pp_frame_gradient_sum(&frame, 1, 2, dataShape);
  ASSERT_NE(sum, nullptr) << frame.error;
  EXPECT_EQ(pp_frame_gradient_sum(&frame, 1, 2, dataShape), sum);
  Tensor indices = typed<int64_t>(PP_DTYPE_I64, {1}, {1});
  Tensor grad = tensorOf({1, 2}, {1.5f, -2.0f});
  pp_cpu_gather_grad_add(&frame, sum, grad.get(), indices.get(), 0);
  pp_frame_gradient_added(&frame, 1);
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  ASSERT_EQ(frame.results.size(), 2u);
  EXPECT_EQ(frame.results[1], sum);
  const float *result = static_cast<const float *>(pp_tensor_data(sum));
  EXPECT_EQ(std::vector<float>(result, result + 4),
            (std::vector<float>{0.0f, 0.0f, 1.5f, -2.0f}));
  pp_frame_gradient_added(&frame, 0);
  EXPECT_EQ(frame.error,
            "gradient result 0 was added into no pp_frame_gradient_sum");
}

TEST(Frame, WithSumsTheCallerLendsThemAndHearsOfEachAddition) {
  pp_frame frame;
  Tensor kept = tensorOf({2}, {1.0f, 2.0f});
  std::vector<int64_t> added;
  frame.gradientSum = [&](int64_t index) {
    return index == 3 ? kept.get() : nullptr;
  };
  frame.gradientAdded = [&](int64_t index) { added.push_back(index); };
  const int64_t dataShape[] = {2};
  EXPECT_EQ(pp_frame_gradient_sum(&frame, 3, 1, dataShape), kept.get());
  pp_frame_gradient_added(&frame, 3);
  EXPECT_EQ(added, (std::vector<int64_t>{3}));
  // The result's slot is there, empty: it went into the sum.
  EXPECT_EQ(frame.results, (std::vector<pp_tensor *>(4, nullptr)));
  EXPECT_EQ(pp_frame_gradient_sum(&frame, 0, 1, dataShape), nullptr);
  EXPECT_EQ(frame.error, "gradient result 0 has no sum to add into");
}

TEST(Frame, ASumOfAnotherShapeFailsAndAFailedCallCountsNoAddition) {
  pp_frame frame;
  Tensor kept = tensorOf({2}, {1.0f, 2.0f});
  int added = 0;
  frame.gradientSum = [&](int64_t) { return kept.get(); };
  frame.gradientAdded = [&](int64_t) { ++added; };
  const int64_t dataShape[] = {3};
  EXPECT_EQ(pp_frame_gradient_sum(&frame, 0, 1, dataShape), nullptr);
  EXPECT_EQ(frame.error, "gradient result 0 has shape 3, its sum shape 2; "
                         "the manifest and the stage library disagree: "
                         "recompile the model");
  pp_frame_gradient_added(&frame, 0);
  EXPECT_EQ(added, 0);
}

TEST(CpuKernels, CrossEntropyGradInPlaceGivesTheSameBits) {
  Tensor labels = typed<int64_t>(PP_DTYPE_I64, {2, 3}, {4, -100, 0, 6, 2, 6});
  Tensor scale = tensorOf({}, {0.125f});
  for (int reduction : {0, 1}) {
    pp_frame frame;
    Tensor logits = tensorOf({2, 3, 7}, wiggly(42));
    Tensor made(pp_cpu_cross_entropy_grad(&frame, scale.get(), logits.get(),
                                          labels.get(), -100, reduction));
    pp_tensor *overwritten = logits.release();
    Tensor inPlace(pp_cpu_cross_entropy_grad_in_place(
        &frame, scale.get(), overwritten, labels.get(), -100, reduction));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    EXPECT_EQ(inPlace.get(), overwritten);
    EXPECT_EQ(shape(inPlace), shape(made));
    std::vector<float> expected = values(made), got = values(inPlace);
    EXPECT_EQ(std::memcmp(got.data(), expected.data(),
                          expected.size() * sizeof(float)),
              0);
  }
}

TEST(CpuKernels, CrossEntropyGradInPlaceNamesABadLabelAndReleasesItsOperand) {
  pp_frame frame;
  Tensor labels = typed<int64_t>(PP_DTYPE_I64, {2}, {1, 9});
  Tensor scale = tensorOf({}, {1.0f});
  // The call owns the logits: failing, it releases them (the sanitizer
  // builds see a leak or a double free otherwise).
  pp_tensor *logits = iota({2, 4}).release();
  EXPECT_EQ(pp_cpu_cross_entropy_grad_in_place(&frame, scale.get(), logits,
                                               labels.get(), -100, 0),
            nullptr);
  EXPECT_EQ(frame.error, "cross_entropy_grad: label 9 (position 1) is outside "
                         "[0, 4) and is not the ignore_index -100");
}

TEST(Frame, TakeArgOfAMissingArgumentFailsTheCall) {
  Tensor only = tensorOf({1}, {1.0f});
  pp_frame frame;
  frame.args = {only.get()};
  EXPECT_EQ(pp_frame_take_arg(&frame, 3), nullptr);
  EXPECT_EQ(frame.error, "stage function asked for argument 3 of 1");
}

TEST(Frame, TakeArgGivesTheCallersTensorWhereItGivesItUpElseACopy) {
  Tensor kept = tensorOf({2}, {1.0f, -2.0f});
  Tensor given = tensorOf({2}, {3.0f, 4.0f});
  pp_frame frame;
  frame.args = {kept.get(), given.get()};
  frame.takeArg = [&](int64_t index) {
    return index == 1 ? given.release() : nullptr;
  };
  pp_tensor *original = frame.args[1];
  Tensor taken(pp_frame_take_arg(&frame, 1));
  EXPECT_EQ(taken.get(), original);
  EXPECT_EQ(frame.args[1], nullptr);
  Tensor copy(pp_frame_take_arg(&frame, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_NE(copy.get(), kept.get());
  EXPECT_EQ(values(copy), values(kept));
  EXPECT_EQ(frame.args[0], kept.get());
}

TEST(Frame, ReshapeOwnedRenamesTheElementsInPlace) {
  pp_frame frame;
  Tensor owned = iota({2, 3});
  const int64_t flat[] = {6};
  pp_tensor *reshaped = pp_frame_reshape_owned(&frame, owned.get(), 1, flat);
  ASSERT_EQ(reshaped, owned.get()) << frame.error;
  EXPECT_EQ(shape(owned), (std::vector<int64_t>{6}));
  EXPECT_EQ(values(owned), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  const int64_t tooMany[] = {7};
  EXPECT_EQ(pp_frame_reshape_owned(&frame, owned.release(), 1, tooMany),
            nullptr);
  EXPECT_FALSE(frame.error.empty());
}

TEST(CpuKernels, BadIndicesAndConditionsAreReported) {
  Tensor data = iota({3, 2});
  {
    pp_frame frame;
    Tensor indices = typed<int64_t>(PP_DTYPE_I64, {2}, {0, 3});
    EXPECT_EQ(pp_cpu_gather(&frame, data.get(), indices.get(), 0), nullptr);
    EXPECT_EQ(frame.error, "gather: index 3 (element 1) is outside [-3, 3) "
                           "for an axis of size 3");
  }
  {
    pp_frame frame;
    Tensor indices = typed<uint8_t>(PP_DTYPE_BOOL, {1}, {1});
    EXPECT_EQ(pp_cpu_gather(&frame, data.get(), indices.get(), 0), nullptr);
    EXPECT_EQ(frame.error, "gather: indices must be i64 or i32, got i1");
  }
  {
    pp_frame frame;
    Tensor indices = typed<int64_t>(PP_DTYPE_I64, {1}, {0});
    EXPECT_EQ(pp_cpu_gather(&frame, data.get(), indices.get(), 2), nullptr);
    EXPECT_EQ(frame.error, "gather: axis 2 is out of range for shape 3x2");
  }
  {
    pp_frame frame;
    Tensor indices = typed<int64_t>(PP_DTYPE_I64, {2}, {0, -4});
    const int64_t dataShape[] = {3, 2};
    Tensor grad = iota({2, 2});
    EXPECT_EQ(
        pp_cpu_gather_grad(&frame, grad.get(), indices.get(), 0, 2, dataShape),
        nullptr);
    EXPECT_EQ(frame.error, "gather_grad: index -4 (element 1) is outside "
                           "[-3, 3) for an axis of size 3");
    pp_frame shapes;
    Tensor columns = typed<int64_t>(PP_DTYPE_I64, {2}, {1, 0});
    Tensor wrong = iota({2, 3});
    EXPECT_EQ(pp_cpu_gather_grad(&shapes, wrong.get(), columns.get(), 1, 2,
                                 dataShape),
              nullptr);
    EXPECT_EQ(shapes.error, "gather_grad: grad 2x3 is not the gather result "
                            "shape 3x2");
  }
  {
    pp_frame frame;
    Tensor mask = iota({3, 1});
    EXPECT_EQ(pp_cpu_where(&frame, mask.get(), data.get(), data.get()),
              nullptr);
    EXPECT_EQ(frame.error, "where: expects an i1 condition and values of one "
                           "dtype, got f32, f32 and f32");
    pp_frame shapes;
    Tensor wide = typed<uint8_t>(PP_DTYPE_BOOL, {3}, {1, 0, 1});
    EXPECT_EQ(pp_cpu_where(&shapes, wide.get(), data.get(), data.get()),
              nullptr);
    EXPECT_EQ(shapes.error, "where: shapes 3, 3x2 and 3x2 do not broadcast");
  }
}

/// The row-major multi-index of element `at` of `shape`.
std::vector<int64_t> indexOf(int64_t at, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = at % shape[d];
    at /= shape[d];
  }
  return index;
}

/// The row-major offset of `index` in `shape`.
int64_t offsetOf(const std::vector<int64_t> &index,
                 const std::vector<int64_t> &shape) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    offset = offset * shape[d] + index[d];
  return offset;
}

/// 0, 1, 2, ... as `T`.
template <typename T> std::vector<T> counting(int64_t count) {
  std::vector<T> data(count);
  for (int64_t i = 0; i < count; ++i)
    data[i] = static_cast<T>(i);
  return data;
}

TEST(CpuKernels, TransposeMovesAnyDtype) {
  pp_frame frame;
  std::vector<int64_t> from = {2, 3, 4}, to = {4, 2, 3};
  const int64_t permutation[] = {2, 0, 1};
  Tensor ids = typed<int64_t>(PP_DTYPE_I64, from, counting<int64_t>(24));
  Tensor y(pp_cpu_transpose(&frame, ids.get(), 3, permutation));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  ASSERT_EQ(pp_tensor_dtype(y.get()), PP_DTYPE_I64);
  EXPECT_EQ(shape(y), to);
  std::vector<int64_t> got = elements<int64_t>(y);
  for (int64_t at = 0; at < 24; ++at) {
    std::vector<int64_t> index = indexOf(at, to), source(3);
    for (int d = 0; d < 3; ++d)
      source[permutation[d]] = index[d];
    EXPECT_EQ(got[at], offsetOf(source, from));
  }
}

TEST(CpuKernels, SliceTakesStridedElementsOfAMask) {
  pp_frame frame;
  std::vector<uint8_t> bits(20);
  for (int i = 0; i < 20; ++i)
    bits[i] = (i * 7) % 3 == 0;
  Tensor mask = typed<uint8_t>(PP_DTYPE_BOOL, {4, 5}, bits);
  const int64_t starts[] = {1, 1}, limits[] = {4, 5}, strides[] = {2, 3};
  Tensor y(pp_cpu_slice(&frame, mask.get(), 2, limits, 2, starts, 2, strides));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(y), (std::vector<int64_t>{2, 2}));
  std::vector<uint8_t> got = elements<uint8_t>(y);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(got[i * 2 + j], bits[(1 + 2 * i) * 5 + 1 + 3 * j]);
}

TEST(CpuKernels, ConcatJoinsAlongAMiddleAxis) {
  pp_frame frame;
  Tensor a = typed<int64_t>(PP_DTYPE_I64, {2, 1, 3}, counting<int64_t>(6));
  Tensor b = typed<int64_t>(PP_DTYPE_I64, {2, 2, 3}, counting<int64_t>(12));
  Tensor empty = typed<int64_t>(PP_DTYPE_I64, {2, 0, 3}, {});
  pp_tensor *inputs[] = {a.get(), empty.get(), b.get()};
  Tensor y(pp_cpu_concat(&frame, 3, inputs, -2));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(y), (std::vector<int64_t>{2, 3, 3}));
  std::vector<int64_t> got = elements<int64_t>(y);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(got[(i * 3 + j) * 3 + k],
                  j == 0 ? i * 3 + k : (i * 2 + j - 1) * 3 + k);
}

TEST(CpuKernels, BroadcastToRepeatsAlongNewAndUnitDimensions) {
  pp_frame frame;
  Tensor x = typed<double>(PP_DTYPE_F64, {3, 1}, {0.5, -1.5, 2.5});
  const int64_t target[] = {2, 3, 4};
  Tensor y(pp_cpu_broadcast_to(&frame, x.get(), 3, target));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(y), (std::vector<int64_t>{2, 3, 4}));
  std::vector<double> got = elements<double>(y), in = {0.5, -1.5, 2.5};
  for (int64_t at = 0; at < 24; ++at)
    EXPECT_EQ(got[at], in[indexOf(at, {2, 3, 4})[1]]);
}

TEST(CpuKernels, TriluKeepsEachMatrixsTriangle) {
  Tensor x = iota({2, 3, 4}, 1.0f);
  for (auto [diagonal, upper] :
       {std::make_pair(int64_t(1), 1), std::make_pair(int64_t(-1), 0),
        std::make_pair(int64_t(0), 0)}) {
    SCOPED_TRACE(std::to_string(diagonal) + (upper ? " upper" : " lower"));
    pp_frame frame;
    Tensor y(pp_cpu_trilu(&frame, x.get(), diagonal, upper));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    std::vector<float> got = values(y);
    for (int64_t at = 0; at < 24; ++at) {
      std::vector<int64_t> index = indexOf(at, {2, 3, 4});
      int64_t offset = index[2] - index[1];
      bool kept = upper ? offset >= diagonal : offset <= diagonal;
      EXPECT_EQ(got[at], kept ? static_cast<float>(at) : 0.0f) << at;
    }
  }
  // The causal mask: the lower triangle of a matrix of true.
  pp_frame frame;
  Tensor ones =
      typed<uint8_t>(PP_DTYPE_BOOL, {3, 3}, std::vector<uint8_t>(9, 1));
  Tensor mask(pp_cpu_trilu(&frame, ones.get(), 0, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(elements<uint8_t>(mask),
            (std::vector<uint8_t>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
}

TEST(CpuKernels, ConstantRepeatsASplatOrCopiesEveryValue) {
  pp_frame frame;
  const int64_t dims[] = {2, 3};
  const int64_t minusOne = -1;
  Tensor splat(pp_cpu_constant(&frame, PP_DTYPE_I64, 2, dims, 1, &minusOne));
  const float table[] = {1, -INFINITY, 3, 4, 5, 6};
  Tensor full(pp_cpu_constant(&frame, PP_DTYPE_F32, 2, dims, 6, table));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(elements<int64_t>(splat), std::vector<int64_t>(6, -1));
  EXPECT_EQ(values(full), std::vector<float>(table, table + 6));
  EXPECT_EQ(pp_cpu_constant(&frame, PP_DTYPE_F32, 2, dims, 4, table), nullptr);
  EXPECT_EQ(frame.error, "constant: 4 values for a tensor of 2x3; give one per "
                         "element, or one to repeat");
}

TEST(CpuKernels, EmptyMakesATensorOfTheShapeAndDtype) {
  pp_frame frame;
  const int64_t dims[] = {2, 3};
  Tensor matrix(pp_cpu_empty(&frame, PP_DTYPE_I32, 2, dims));
  Tensor scalar(pp_cpu_empty(&frame, PP_DTYPE_F32, 0, nullptr));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(pp_tensor_dtype(matrix.get()), PP_DTYPE_I32);
  EXPECT_EQ(shape(matrix), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(pp_tensor_rank(scalar.get()), 0);
  EXPECT_EQ(pp_tensor_numel(scalar.get()), 1);
}

TEST(CpuKernels, CrossEntropyOverSequencesWithI32Labels) {
  // Logits [batch 2, sequence 2, classes 3] and i32 labels [2, 2], one
  // position ignored: against a double-precision reference.
  std::vector<float> z = wiggly(12);
  Tensor logits = tensorOf({2, 2, 3}, z);
  Tensor labels = typed<int32_t>(PP_DTYPE_I32, {2, 2}, {2, -100, 0, 1});
  std::vector<double> loss(4, 0.0), grad(12, 0.0);
  for (int r : {0, 2, 3}) {
    int label = r == 0 ? 2 : r == 2 ? 0 : 1;
    double max = std::max({z[r * 3], z[r * 3 + 1], z[r * 3 + 2]}), total = 0;
    for (int c = 0; c < 3; ++c)
      total += std::exp(z[r * 3 + c] - max);
    loss[r] = std::log(total) + max - z[r * 3 + label];
    for (int c = 0; c < 3; ++c)
      grad[r * 3 + c] =
          (std::exp(z[r * 3 + c] - max) / total - (c == label)) / 3.0;
  }
  pp_frame frame;
  Tensor perPosition(
      pp_cpu_cross_entropy(&frame, logits.get(), labels.get(), -100, 2));
  Tensor mean(
      pp_cpu_cross_entropy(&frame, logits.get(), labels.get(), -100, 0));
  Tensor one = tensorOf({}, {1.0f});
  Tensor dz(pp_cpu_cross_entropy_grad(&frame, one.get(), logits.get(),
                                      labels.get(), -100, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(shape(perPosition), (std::vector<int64_t>{2, 2}));
  for (int r = 0; r < 4; ++r)
    EXPECT_NEAR(values(perPosition)[r], loss[r], 1e-6);
  EXPECT_NEAR(values(mean)[0], (loss[0] + loss[2] + loss[3]) / 3, 1e-6);
  for (int i = 0; i < 12; ++i)
    EXPECT_NEAR(values(dz)[i], grad[i], 1e-6) << i;
}

TEST(CpuKernels, BadPermutationsSlicesConcatsAndLabelsAreReported) {
  Tensor x = iota({2, 3});
  const int64_t twice[] = {0, 0}, starts[] = {0, 1}, limits[] = {2, 4},
                strides[] = {1, 1}, wide[] = {4, 3};
  auto errorOf = [](auto call) {
    pp_frame frame;
    EXPECT_EQ(call(&frame), nullptr);
    return frame.error;
  };
  EXPECT_EQ(errorOf([&](pp_frame *f) {
              return pp_cpu_transpose(f, x.get(), 2, twice);
            }),
            "transpose: [0, 0] is not a permutation of the dimensions of 2x3");
  EXPECT_EQ(errorOf([&](pp_frame *f) {
              return pp_cpu_slice(f, x.get(), 2, limits, 2, starts, 2, strides);
            }),
            "slice: starts [0, 1], limits [2, 4] and strides [1, 1] are not a "
            "slice of 2x3 (one entry per dimension, 0 <= start <= limit <= "
            "size, stride >= 1)");
  EXPECT_EQ(errorOf([&](pp_frame *f) {
              return pp_cpu_broadcast_to(f, x.get(), 2, wide);
            }),
            "broadcast_to: 2x3 does not broadcast to 4x3");
  Tensor ids = typed<int64_t>(PP_DTYPE_I64, {2, 3}, counting<int64_t>(6));
  pp_tensor *mixed[] = {x.get(), ids.get()};
  EXPECT_EQ(errorOf([&](pp_frame *f) { return pp_cpu_concat(f, 2, mixed, 0); }),
            "concat: input 1 (i64 2x3) does not match input 0 (f32 2x3) "
            "outside axis 0");
  Tensor vector = iota({3});
  EXPECT_EQ(
      errorOf([&](pp_frame *f) { return pp_cpu_trilu(f, vector.get(), 0, 1); }),
      "trilu: input 3 has rank 1; it needs rank 2 or more");
  Tensor outside = typed<int64_t>(PP_DTYPE_I64, {2}, {1, 3});
  EXPECT_EQ(errorOf([&](pp_frame *f) {
              return pp_cpu_cross_entropy(f, x.get(), outside.get(), -100, 0);
            }),
            "cross_entropy: label 3 (position 1) is outside [0, 3) and is not "
            "the ignore_index -100");
  Tensor misshapen = typed<int64_t>(PP_DTYPE_I64, {3}, {0, 1, 2});
  EXPECT_EQ(errorOf([&](pp_frame *f) {
              return pp_cpu_cross_entropy(f, x.get(), misshapen.get(), -100, 0);
            }),
            "cross_entropy: labels 3 are not the logits shape 2x3 without its "
            "class dimension");
  Tensor floatLabels = iota({2});
  EXPECT_EQ(errorOf([&](pp_frame *f) {
              return pp_cpu_cross_entropy_grad(f, x.get(), x.get(),
                                               floatLabels.get(), -100, 2);
            }),
            "cross_entropy_grad: labels must be i64 or i32, got f32");
}

TEST(CpuKernels, NewKernelsPassANullInputOn) {
  pp_frame frame;
  Tensor x = iota({2, 2});
  const int64_t sizes[] = {1, 1}, two[] = {2, 2}, zero[] = {0, 0},
                one[] = {1, 1};
  EXPECT_EQ(pp_cpu_div(&frame, nullptr, x.get()), nullptr);
  EXPECT_EQ(pp_cpu_exp(&frame, nullptr), nullptr);
  EXPECT_EQ(pp_cpu_softmax(&frame, nullptr, 0), nullptr);
  EXPECT_EQ(pp_cpu_softmax_grad(&frame, x.get(), nullptr, 0), nullptr);
  EXPECT_EQ(pp_cpu_split(&frame, nullptr, 0, 2, sizes, 0), nullptr);
  EXPECT_EQ(pp_cpu_slice_grad(&frame, nullptr, 2, two, 2, two, 2, zero, 2, one),
            nullptr);
  EXPECT_EQ(pp_cpu_cast(&frame, nullptr, PP_DTYPE_I64), nullptr);
  EXPECT_EQ(pp_cpu_where(&frame, nullptr, x.get(), x.get()), nullptr);
  EXPECT_EQ(pp_cpu_gather(&frame, x.get(), nullptr, 0), nullptr);
  EXPECT_EQ(pp_cpu_gather_grad(&frame, nullptr, x.get(), 0, 2, two), nullptr);
  pp_tensor *withNull[] = {x.get(), nullptr};
  EXPECT_EQ(pp_cpu_transpose(&frame, nullptr, 2, zero), nullptr);
  EXPECT_EQ(pp_cpu_slice(&frame, nullptr, 2, two, 2, zero, 2, one), nullptr);
  EXPECT_EQ(pp_cpu_concat(&frame, 2, withNull, 0), nullptr);
  EXPECT_EQ(pp_cpu_broadcast_to(&frame, nullptr, 2, two), nullptr);
  EXPECT_EQ(pp_cpu_trilu(&frame, nullptr, 0, 0), nullptr);
  EXPECT_EQ(pp_cpu_gelu(&frame, nullptr, 0), nullptr);
  EXPECT_EQ(pp_cpu_pow_grad(&frame, x.get(), nullptr, x.get(), 0), nullptr);
  EXPECT_EQ(pp_cpu_reduce_mean(&frame, nullptr, 2, zero, 0), nullptr);
  EXPECT_EQ(pp_cpu_reduce_max_grad(&frame, x.get(), nullptr, x.get(), 2, zero),
            nullptr);
  EXPECT_EQ(pp_cpu_log_softmax_grad(&frame, nullptr, x.get(), 0), nullptr);
  EXPECT_EQ(pp_cpu_layer_norm(&frame, nullptr, x.get(), nullptr, 0, 0.0),
            nullptr);
  EXPECT_EQ(
      pp_cpu_layer_norm_grad(&frame, x.get(), x.get(), nullptr, 0, 0.0, 0),
      nullptr);
  EXPECT_TRUE(frame.error.empty()) << frame.error;
}

} // namespace
