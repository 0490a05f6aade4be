//===- CpuNormalizationKernels.cpp - host reductions and normalizations ---===//
//
// reduce_sum/mean/max, log_softmax and layer_norm with their gradients.
// Sums accumulate in double in a fixed order (deterministic kernels).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/CpuKernelLoops.h"
#include "runtime/kernels/ReductionPlans.h"

#include <array>
#include <type_traits>
#include <vector>

using namespace pp::runtime;
using namespace pp::runtime::cpu;

namespace {

/// Calls `visit(i, group)` for every input element `i` of `plan`, in
/// row-major order, with the index of its group.
template <typename Visit>
void forEachGrouped(const ReducePlan &plan, Visit visit) {
  forEachGroupedRow(
      plan.input, plan.groupStrides,
      [&](int64_t first, int64_t group, int64_t step, int64_t length) {
        for (int64_t j = 0; j < length; ++j)
          visit(first + j, group + j * step);
      });
}

/// A reduction of `input` with `keep_dims`: `reduceGroups(plan, in, out)`
/// fills the result, one value per group (FloatsIn and FloatsOut of the
/// input's type).
template <typename Reduce>
pp_tensor *reduce(pp_frame *frame, const char *kernel, pp_tensor *input,
                  int64_t axes_count, const int64_t *axes, int keep_dims,
                  Reduce reduceGroups) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, kernel, {input});
  if (!dtype)
    return nullptr;
  std::optional<ReducePlan> plan =
      reducePlan(frame, kernel, shapeOf(input), axes_count, axes);
  pp_tensor *result =
      plan ? newTensor(frame, *dtype, keep_dims ? plan->kept : plan->removed)
           : nullptr;
  if (result)
    forFloatType(*dtype, [&](auto element) {
      using T = decltype(element);
      reduceGroups(*plan, readFloats<T>(input), writeFloats<T>(result));
    });
  return result;
}

/// The sums of the groups of `plan` in double.
template <typename Floats>
std::vector<double> groupSums(const ReducePlan &plan, Floats in) {
  std::vector<double> sums(plan.groups, 0.0);
  accumulateGroups(plan.input, plan.groupStrides, in, sums.data());
  return sums;
}

/// Rows are normalized in blocks of this many, their sums interleaved:
/// each row's sums keep their element order, and the blocks' independent
/// chains of additions overlap in the CPU.
constexpr int64_t kRowBlock = 4;

/// Calls `block(first, count)` for the rows [first, first + count) of
/// [0, rows), in blocks of kRowBlock rows then one by one; `count` is a
/// std::integral_constant, so loops over a block's rows unroll.
template <typename Block> void forEachRowBlock(int64_t rows, Block block) {
  int64_t r = 0;
  for (; r + kRowBlock <= rows; r += kRowBlock)
    block(r, std::integral_constant<int64_t, kRowBlock>());
  for (; r < rows; ++r)
    block(r, std::integral_constant<int64_t, 1>());
}

/// The means and 1 / sqrt(variance + epsilon) of `Count` consecutive rows
/// of `size` values from `rows` (biased variance, two passes in double,
/// each row's sums in element order).
template <int64_t Count> struct RowStatistics {
  std::array<double, Count> mean, rstd;

  template <typename Floats>
  RowStatistics(Floats rows, int64_t size, double epsilon) {
    std::array<double, Count> sum{}, squares{};
    for (int64_t j = 0; j < size; ++j)
      for (int64_t k = 0; k < Count; ++k)
        sum[k] += rows[k * size + j];
    for (int64_t k = 0; k < Count; ++k)
      mean[k] = sum[k] / size;
    for (int64_t j = 0; j < size; ++j)
      for (int64_t k = 0; k < Count; ++k)
        squares[k] +=
            (rows[k * size + j] - mean[k]) * (rows[k * size + j] - mean[k]);
    for (int64_t k = 0; k < Count; ++k)
      rstd[k] = 1.0 / std::sqrt(squares[k] / size + epsilon);
  }
};

} // namespace

extern "C" {

pp_tensor *pp_cpu_reduce_sum(pp_frame *frame, pp_tensor *input,
                             int64_t axes_count, const int64_t *axes,
                             int keep_dims) {
  return reduce(frame, "reduce_sum", input, axes_count, axes, keep_dims,
                [](const ReducePlan &plan, auto in, auto out) {
                  std::vector<double> sums = groupSums(plan, in);
                  for (int64_t g = 0; g < plan.groups; ++g)
                    out[g] = static_cast<float>(sums[g]);
                });
}

pp_tensor *pp_cpu_reduce_mean(pp_frame *frame, pp_tensor *input,
                              int64_t axes_count, const int64_t *axes,
                              int keep_dims) {
  return reduce(frame, "reduce_mean", input, axes_count, axes, keep_dims,
                [](const ReducePlan &plan, auto in, auto out) {
                  std::vector<double> sums = groupSums(plan, in);
                  for (int64_t g = 0; g < plan.groups; ++g)
                    out[g] = static_cast<float>(sums[g] / plan.groupSize);
                });
}

pp_tensor *pp_cpu_reduce_max(pp_frame *frame, pp_tensor *input,
                             int64_t axes_count, const int64_t *axes,
                             int keep_dims) {
  return reduce(frame, "reduce_max", input, axes_count, axes, keep_dims,
                [](const ReducePlan &plan, auto in, auto out) {
                  for (int64_t g = 0; g < plan.groups; ++g)
                    out[g] = -std::numeric_limits<float>::infinity();
                  forEachGrouped(plan, [&](int64_t i, int64_t group) {
                    // A NaN wins and stays, as in PyTorch's amax.
                    float x = in[i];
                    if (x > out[group] || x != x)
                      out[group] = x;
                  });
                });
}

pp_tensor *pp_cpu_reduce_sum_grad(pp_frame *frame, pp_tensor *grad,
                                  int64_t axes_count, const int64_t *axes,
                                  int64_t input_shape_count,
                                  const int64_t *input_shape) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "reduce_sum_grad", {grad});
  if (!dtype)
    return nullptr;
  std::optional<ReducePlan> plan = reduceGradPlan(
      frame, "reduce_sum_grad", shapeOf(grad),
      Shape(input_shape, input_shape + input_shape_count), axes_count, axes);
  pp_tensor *result = plan ? newTensor(frame, *dtype, plan->input) : nullptr;
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    const T *g = elementsOf<T>(grad);
    T *out = elementsOf<T>(result);
    forEachGrouped(*plan, [&](int64_t i, int64_t group) { out[i] = g[group]; });
  });
  return result;
}

pp_tensor *pp_cpu_reduce_max_grad(pp_frame *frame, pp_tensor *grad,
                                  pp_tensor *input, pp_tensor *result_value,
                                  int64_t axes_count, const int64_t *axes) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "reduce_max_grad", {grad, input, result_value});
  if (!dtype)
    return nullptr;
  std::optional<ReducePlan> plan =
      reduceMaxGradPlan(frame, grad, input, result_value, axes_count, axes);
  pp_tensor *result = plan ? newTensor(frame, *dtype, plan->input) : nullptr;
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    FloatsIn<T> g = readFloats<T>(grad), x = readFloats<T>(input),
                y = readFloats<T>(result_value);
    FloatsOut<T> out = writeFloats<T>(result);
    std::vector<float> ties(plan->groups, 0.0f);
    forEachGrouped(*plan, [&](int64_t i, int64_t group) {
      ties[group] += x[i] == y[group];
    });
    // mask * (grad / ties) as PyTorch computes it: NaN for a group whose
    // maximum is NaN (no element equals it).
    forEachGrouped(*plan, [&](int64_t i, int64_t group) {
      out[i] = static_cast<float>(x[i] == y[group]) * (g[group] / ties[group]);
    });
  });
  return result;
}

pp_tensor *pp_cpu_log_softmax(pp_frame *frame, pp_tensor *input, int64_t axis) {
  return mapAlongAxis(
      frame, "log_softmax", input, axis,
      [](auto out, auto in, int64_t start, int64_t stride, int64_t size) {
        auto [max, total] = softmaxNormalizer(in + start, size, stride);
        double shift = max + std::log(total);
        for (int64_t at = start; at < start + size * stride; at += stride)
          out[at] = static_cast<float>(in[at] - shift);
      });
}

pp_tensor *pp_cpu_log_softmax_grad(pp_frame *frame, pp_tensor *grad,
                                   pp_tensor *result_value, int64_t axis) {
  return gradAlongAxis(frame, "log_softmax_grad", grad, result_value, axis,
                       [](auto out, auto g, auto y, int64_t start,
                          int64_t stride, int64_t size) {
                         int64_t end = start + size * stride;
                         double sum = 0;
                         for (int64_t at = start; at < end; at += stride)
                           sum += g[at];
                         for (int64_t at = start; at < end; at += stride)
                           out[at] = static_cast<float>(g[at] -
                                                        std::exp(y[at]) * sum);
                       });
}

pp_tensor *pp_cpu_layer_norm(pp_frame *frame, pp_tensor *input,
                             pp_tensor *weight, pp_tensor *bias, int64_t axis,
                             double epsilon) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "layer_norm", {input}, {weight, bias});
  if (!dtype)
    return nullptr;
  std::optional<LayerNormPlan> plan = layerNormPlan(
      frame, "layer_norm", input, weight, bias, nullptr, axis, epsilon);
  pp_tensor *result = plan ? newTensor(frame, *dtype, shapeOf(input)) : nullptr;
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    std::optional<FloatsIn<T>> w, b;
    if (weight)
      w = readFloats<T>(weight);
    if (bias)
      b = readFloats<T>(bias);
    int64_t size = plan->size;
    forEachRowBlock(plan->rows, [&](int64_t first, auto count) {
      FloatsIn<T> rows = readFloats<T>(input) + first * size;
      RowStatistics<decltype(count)::value> statistics(rows, size, epsilon);
      for (int64_t k = 0; k < count; ++k) {
        FloatsIn<T> row = rows + k * size;
        FloatsOut<T> out = writeFloats<T>(result) + (first + k) * size;
        double mean = statistics.mean[k], rstd = statistics.rstd[k];
        for (int64_t j = 0; j < size; ++j) {
          double value = (row[j] - mean) * rstd;
          if (w)
            value *= (*w)[j];
          if (b)
            value += (*b)[j];
          out[j] = static_cast<float>(value);
        }
      }
    });
  });
  return result;
}

pp_tensor *pp_cpu_layer_norm_grad(pp_frame *frame, pp_tensor *grad,
                                  pp_tensor *input, pp_tensor *weight,
                                  int64_t axis, double epsilon,
                                  int64_t result_index) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "layer_norm_grad", {grad, input, weight});
  if (!dtype)
    return nullptr;
  std::optional<LayerNormPlan> plan = layerNormGradPlan(
      frame, grad, input, weight, axis, epsilon, result_index);
  if (!plan)
    return nullptr;
  Shape shape = shapeOf(input);
  pp_tensor *result =
      newTensor(frame, *dtype, result_index == 0 ? shape : shapeOf(weight));
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    FloatsIn<T> x = readFloats<T>(input), dy = readFloats<T>(grad),
                w = readFloats<T>(weight);
    FloatsOut<T> out = writeFloats<T>(result);
    int64_t size = plan->size;
    // The weight and bias gradients sum over the rows, in row order.
    std::vector<double> sums(result_index == 0 ? 0 : size, 0.0);
    if (result_index == 2)
      accumulateGroups({plan->rows, size}, {0, 1}, dy, sums.data());
    else
      forEachRowBlock(plan->rows, [&](int64_t first, auto count) {
        FloatsIn<T> rows = x + first * size, grads = dy + first * size;
        RowStatistics<decltype(count)::value> statistics(rows, size, epsilon);
        if (result_index == 1) {
          for (int64_t k = 0; k < count; ++k) {
            FloatsIn<T> row = rows + k * size, g = grads + k * size;
            double mean = statistics.mean[k], rstd = statistics.rstd[k];
            for (int64_t j = 0; j < size; ++j)
              sums[j] += g[j] * ((row[j] - mean) * rstd);
          }
          return;
        }
        // dx = rstd * (g w - mean(g w) - xhat * mean(g w xhat)).
        std::array<double, decltype(count)::value> meanGw{}, meanGwXhat{};
        for (int64_t j = 0; j < size; ++j)
          for (int64_t k = 0; k < count; ++k) {
            double gw = static_cast<double>(grads[k * size + j]) * w[j];
            meanGw[k] += gw;
            meanGwXhat[k] += gw * ((rows[k * size + j] - statistics.mean[k]) *
                                   statistics.rstd[k]);
          }
        for (int64_t k = 0; k < count; ++k) {
          meanGw[k] /= size;
          meanGwXhat[k] /= size;
          FloatsIn<T> row = rows + k * size, g = grads + k * size;
          double mean = statistics.mean[k], rstd = statistics.rstd[k];
          for (int64_t j = 0; j < size; ++j) {
            double xhat = (row[j] - mean) * rstd;
            out[(first + k) * size + j] =
                static_cast<float>(rstd * (static_cast<double>(g[j]) * w[j] -
                                           meanGw[k] - xhat * meanGwXhat[k]));
          }
        }
      });
    for (int64_t j = 0; j < static_cast<int64_t>(sums.size()); ++j)
      out[j] = static_cast<float>(sums[j]);
  });
  return result;
}

} // extern "C"
