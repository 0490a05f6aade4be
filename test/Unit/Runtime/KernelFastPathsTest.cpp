//===- KernelFastPathsTest.cpp - fast kernel loops against references -----===//
//
// The CPU kernels walk common layouts with fast loops (merged dimensions,
// contiguous rows). These tests check, on odd shapes, that they give the
// bits of a straightforward element-by-element reference computing in the
// same order.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Frame.h"
#include "runtime/kernels/MathFormulas.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using pp::runtime::Shape;

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A host f32 tensor of `shape` holding values of many magnitudes, so that
/// a change of summation order changes the rounded sums.
Tensor unevenValues(const Shape &shape) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, shape.size(), shape.data(), &tensor),
            PP_OK);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = std::sin(2.3f * static_cast<float>(i)) *
              std::exp2(static_cast<float>(i * 13 % 71) - 35.0f);
  return Tensor(tensor);
}

std::vector<uint32_t> bits(pp_tensor *tensor) {
  std::vector<uint32_t> result(pp_tensor_numel(tensor));
  std::memcpy(result.data(), pp_tensor_data(tensor), result.size() * 4);
  return result;
}

/// The bits of `values` rounded to f32.
std::vector<uint32_t> roundedBits(const std::vector<double> &values) {
  std::vector<uint32_t> result;
  for (double value : values) {
    float rounded = static_cast<float>(value);
    uint32_t word;
    std::memcpy(&word, &rounded, 4);
    result.push_back(word);
  }
  return result;
}

/// Sums `input` to `target` (right-aligned, size 1 or equal per dimension)
/// element by element in row-major order, in double.
std::vector<uint32_t> referenceSumTo(pp_tensor *input, const Shape &target) {
  Shape shape = pp::runtime::shapeOf(input);
  std::vector<double> sums(pp::runtime::numElements(target), 0.0);
  const float *in = static_cast<const float *>(pp_tensor_data(input));
  size_t lead = shape.size() - target.size();
  for (int64_t i = 0; i < pp_tensor_numel(input); ++i) {
    int64_t rest = i, group = 0, groupStride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      int64_t index = rest % shape[d];
      rest /= shape[d];
      if (d >= lead && target[d - lead] != 1) {
        group += index * groupStride;
        groupStride *= target[d - lead];
      }
    }
    sums[group] += in[i];
  }
  return roundedBits(sums);
}

struct SumCase {
  Shape input, target;
};

TEST(CpuKernelFastPaths, SumToAndReduceSumAddInRowMajorOrder) {
  const SumCase cases[] = {{{7, 5, 3}, {5, 1}},
                           {{7, 5, 3}, {3}},
                           {{7, 5, 3}, {7, 1, 1}},
                           {{7, 5, 3}, {}},
                           {{7, 5, 3}, {7, 5, 3}},
                           {{2, 1, 9, 4}, {1, 9, 1}},
                           {{1, 1, 33}, {33}},
                           {{5, 0, 3}, {3}},
                           {{16, 8, 37}, {37}},
                           {{3, 4, 5, 6}, {4, 1, 6}},
                           {{}, {}},
                           {{129}, {1}}};
  for (const SumCase &c : cases) {
    SCOPED_TRACE(pp::runtime::formatShape(c.input) + " to " +
                 pp::runtime::formatShape(c.target));
    pp_frame frame;
    Tensor x = unevenValues(c.input);
    Tensor sum(
        pp_cpu_sum_to(&frame, x.get(), c.target.size(), c.target.data()));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    std::vector<uint32_t> expected = referenceSumTo(x.get(), c.target);
    EXPECT_EQ(bits(sum.get()), expected);
    // reduce_sum over the dimensions the target drops or makes 1.
    std::vector<int64_t> axes;
    size_t lead = c.input.size() - c.target.size();
    for (size_t d = 0; d < c.input.size(); ++d)
      if (d < lead || (c.target[d - lead] == 1 && c.input[d] != 1))
        axes.push_back(static_cast<int64_t>(d));
    Tensor reduced(
        pp_cpu_reduce_sum(&frame, x.get(), axes.size(), axes.data(), 1));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    EXPECT_EQ(bits(reduced.get()), expected);
  }
}

/// The sum of term(j) for j in [0, size) as LaneSums.h orders it: element j
/// into partial sum j mod 8, in element order, then the partial sums.
template <typename Term> double laneOrderSum(int64_t size, Term term) {
  double partial[8] = {}, total = 0;
  for (int64_t j = 0; j < size; ++j)
    partial[j % 8] += term(j);
  for (double sum : partial)
    total += sum;
  return total;
}

/// layer_norm over the last dimension of [rows, size] with weight `w` and
/// its three gradients for `g`, one row at a time, each row's sums in lane
/// order and the weight and bias gradients summed in row order.
struct LayerNormReference {
  std::vector<double> y, dx, dw, db;

  LayerNormReference(const float *x, const float *w, const float *g,
                     int64_t rows, int64_t size, double epsilon)
      : dw(size), db(size) {
    for (int64_t r = 0; r < rows; ++r) {
      const float *row = x + r * size, *gr = g + r * size;
      double mean =
          laneOrderSum(size, [&](int64_t j) { return row[j]; }) / size;
      double squares = laneOrderSum(
          size, [&](int64_t j) { return (row[j] - mean) * (row[j] - mean); });
      double rstd = 1.0 / std::sqrt(squares / size + epsilon);
      auto xhat = [&](int64_t j) { return (row[j] - mean) * rstd; };
      auto gw = [&](int64_t j) { return static_cast<double>(gr[j]) * w[j]; };
      double gwSum = laneOrderSum(size, gw);
      double gwXhatSum =
          laneOrderSum(size, [&](int64_t j) { return gw(j) * xhat(j); });
      for (int64_t j = 0; j < size; ++j) {
        y.push_back(xhat(j) * w[j]);
        dw[j] += gr[j] * xhat(j);
        db[j] += gr[j];
      }
      for (int64_t j = 0; j < size; ++j)
        dx.push_back(rstd * (static_cast<double>(gr[j]) * w[j] - gwSum / size -
                             xhat(j) * (gwXhatSum / size)));
    }
  }
};

TEST(CpuKernelFastPaths, LayerNormAndItsGradientsGoRowByRow) {
  const Shape shapes[] = {{7, 37}, {9, 5}, {1, 3}, {2, 3, 8}, {4, 1}};
  for (const Shape &shape : shapes) {
    SCOPED_TRACE(pp::runtime::formatShape(shape));
    int64_t size = shape.back();
    int64_t rows = pp::runtime::numElements(shape) / size;
    Tensor x = unevenValues(shape), g = unevenValues(shape);
    Tensor w = unevenValues({size});
    const double epsilon = 1e-5;
    LayerNormReference reference(
        static_cast<const float *>(pp_tensor_data(x.get())),
        static_cast<const float *>(pp_tensor_data(w.get())),
        static_cast<const float *>(pp_tensor_data(g.get())), rows, size,
        epsilon);
    pp_frame frame;
    Tensor y(pp_cpu_layer_norm(&frame, x.get(), w.get(), nullptr, -1, epsilon));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    EXPECT_EQ(bits(y.get()), roundedBits(reference.y));
    const std::vector<double> *grads[] = {&reference.dx, &reference.dw,
                                          &reference.db};
    for (int64_t index = 0; index < 3; ++index) {
      Tensor d(pp_cpu_layer_norm_grad(&frame, g.get(), x.get(), w.get(), -1,
                                      epsilon, index));
      ASSERT_TRUE(frame.error.empty()) << frame.error;
      EXPECT_EQ(bits(d.get()), roundedBits(*grads[index]))
          << "result " << index;
    }
  }
}

/// softmax of each row of `rows` x `classes` logits and, for `labels`,
/// the gradient of the mean cross entropy (ignoring label -100) scaled by
/// `scale`, as SoftmaxRows.h defines them: exps[c] = e^(logit - maximum) in
/// f32 (math::exp), their sum in double in lane order, and each probability
/// exps[c] * (1 / sum) in double.
struct SoftmaxReference {
  std::vector<double> softmax, crossEntropyGrad, exactSoftmax;

  SoftmaxReference(const float *logits, const int64_t *labels, int64_t rows,
                   int64_t classes, double scale) {
    int64_t counted = 0;
    for (int64_t r = 0; r < rows; ++r)
      counted += labels[r] != -100;
    for (int64_t r = 0; r < rows; ++r) {
      const float *row = logits + r * classes;
      float max = *std::max_element(row, row + classes);
      std::vector<float> exps;
      double exactTotal = 0;
      for (int64_t c = 0; c < classes; ++c) {
        exps.push_back(pp::runtime::math::exp(row[c] - max));
        exactTotal += std::exp(static_cast<double>(row[c]) - max);
      }
      double total = laneOrderSum(classes, [&](int64_t c) { return exps[c]; });
      for (int64_t c = 0; c < classes; ++c) {
        double p = exps[c] * (1.0 / total);
        softmax.push_back(p);
        exactSoftmax.push_back(std::exp(static_cast<double>(row[c]) - max) /
                               exactTotal);
        crossEntropyGrad.push_back(labels[r] == -100 ? 0.0
                                                     : (p - (c == labels[r])) *
                                                           (scale / counted));
      }
    }
  }
};

TEST(CpuKernelFastPaths, SoftmaxAndCrossEntropyGradShareOneRowOfF32Exps) {
  // 37 classes: two whole blocks of the 16 maximum lanes and 8 sum lanes,
  // and a tail of each.
  const int64_t rows = 7, classes = 37;
  Tensor logits = unevenValues({rows, classes});
  // Moderate logits: unevenValues' extremes would saturate the softmax.
  float *z = static_cast<float *>(pp_tensor_data(logits.get()));
  for (int64_t i = 0; i < rows * classes; ++i)
    z[i] = std::sin(1.3f * static_cast<float>(i)) * 4.0f;
  int64_t labelShape[] = {rows};
  pp_tensor *labelTensor = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_I64, 1, labelShape, &labelTensor), PP_OK);
  Tensor labels(labelTensor);
  int64_t *y = static_cast<int64_t *>(pp_tensor_data(labels.get()));
  for (int64_t r = 0; r < rows; ++r)
    y[r] = r == 3 ? -100 : (r * 5) % classes;
  Tensor grad = unevenValues({});
  const float scale = 0.7f;
  static_cast<float *>(pp_tensor_data(grad.get()))[0] = scale;
  SoftmaxReference reference(z, y, rows, classes, scale);
  pp_frame frame;
  Tensor softmax(pp_cpu_softmax(&frame, logits.get(), -1));
  Tensor dz(pp_cpu_cross_entropy_grad(&frame, grad.get(), logits.get(),
                                      labels.get(), -100, 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  EXPECT_EQ(bits(softmax.get()), roundedBits(reference.softmax));
  EXPECT_EQ(bits(dz.get()), roundedBits(reference.crossEntropyGrad));
  // Accurate as PyTorch's f32 softmax: logit - maximum rounds to f32 (an
  // error of at most |logit - maximum| 2^-24 <= 8 2^-24 in the exponent,
  // as much in relative terms in the result) and e^ within 1 ulp.
  const float *p = static_cast<const float *>(pp_tensor_data(softmax.get()));
  const double bound = 8 * std::exp2(-24.0) + 4 * std::exp2(-24.0);
  for (int64_t i = 0; i < rows * classes; ++i)
    EXPECT_NEAR(p[i], reference.exactSoftmax[i],
                bound * reference.exactSoftmax[i])
        << "element " << i;
}

TEST(CpuKernelFastPaths, SoftmaxRowsMatchTheStridedLinesAndTakeEmptyShapes) {
  // f32 rows along the last axis take one vectorized call; the same logits
  // transposed, softmax along the first axis, take the strided lines: the
  // same bits.
  const int64_t rows = 5, classes = 300;
  Tensor logits = unevenValues({rows, classes});
  Tensor transposed = unevenValues({classes, rows});
  const float *z = static_cast<const float *>(pp_tensor_data(logits.get()));
  float *t = static_cast<float *>(pp_tensor_data(transposed.get()));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < classes; ++c)
      t[c * rows + r] = z[r * classes + c];
  pp_frame frame;
  Tensor byRows(pp_cpu_softmax(&frame, logits.get(), -1));
  Tensor byLines(pp_cpu_softmax(&frame, transposed.get(), 0));
  ASSERT_TRUE(frame.error.empty()) << frame.error;
  const float *p = static_cast<const float *>(pp_tensor_data(byRows.get()));
  const float *q = static_cast<const float *>(pp_tensor_data(byLines.get()));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < classes; ++c)
      ASSERT_EQ(0, std::memcmp(&p[r * classes + c], &q[c * rows + r], 4))
          << "row " << r << ", class " << c;
  // Rows of no classes and no rows: empty results, no error.
  for (const Shape &shape : {Shape{4, 0}, Shape{0, 5}}) {
    Tensor empty = unevenValues(shape);
    Tensor result(pp_cpu_softmax(&frame, empty.get(), -1));
    ASSERT_TRUE(frame.error.empty()) << frame.error;
    ASSERT_TRUE(result);
    EXPECT_EQ(pp_tensor_numel(result.get()), 0);
  }
}

} // namespace
