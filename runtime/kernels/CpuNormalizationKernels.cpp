//===- CpuNormalizationKernels.cpp - host reductions and normalizations ---===//
//
// reduce_sum/mean/max, log_softmax and layer_norm with their gradients.
// Sums accumulate in double in a fixed order (deterministic kernels).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/CpuKernelLoops.h"
#include "runtime/kernels/LaneSums.h"
#include "runtime/kernels/ReductionPlans.h"
#include "runtime/kernels/SoftmaxRows.h"

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

/// The mean and 1 / sqrt(variance + epsilon) of a row of `size` values
/// (biased variance, two passes in double, each sum a laneSum).
struct RowMoments {
  double mean, rstd;

  template <typename Floats>
  RowMoments(Floats row, int64_t size, double epsilon) {
    mean = laneSum(size, [&](int64_t j) { return row[j]; }) / size;
    double squares = laneSum(size, [&](int64_t j) {
      double centered = row[j] - mean;
      return centered * centered;
    });
    rstd = 1.0 / std::sqrt(squares / size + epsilon);
  }

  /// The normalized value of `x`.
  double normalize(float x) const { return (x - mean) * rstd; }
};

/// layer_norm of the rows [begin, end) of `size` values from `x` into `out`
/// (FloatsIn and FloatsOut of one type), times the weight `w` and plus the
/// bias `b` where Weighted and Biased say (so that each row's loop has no
/// branch and vectorizes).
template <bool Weighted, bool Biased, typename In, typename Out>
PP_CPU_CLONES void normalizeRows(In x, In w, In b, Out out, int64_t begin,
                                 int64_t end, int64_t size, double epsilon) {
  for (int64_t r = begin; r < end; ++r) {
    In row = x + r * size;
    RowMoments moments(row, size, epsilon);
    Out to = out + r * size;
    for (int64_t j = 0; j < size; ++j) {
      double value = moments.normalize(row[j]);
      if constexpr (Weighted)
        value *= w[j];
      if constexpr (Biased)
        value += b[j];
      to[j] = static_cast<float>(value);
    }
  }
}

/// The input gradient of layer_norm of the rows [begin, end): dx = rstd * (g w
/// - mean(g w) - xhat * mean(g w xhat)), its means laneSums.
template <typename In, typename Out>
PP_CPU_CLONES void layerNormInputGrad(In x, In dy, In w, Out out, int64_t begin,
                                      int64_t end, int64_t size,
                                      double epsilon) {
  for (int64_t r = begin; r < end; ++r) {
    In row = x + r * size, g = dy + r * size;
    RowMoments moments(row, size, epsilon);
    auto gw = [&](int64_t j) { return static_cast<double>(g[j]) * w[j]; };
    double meanGw = laneSum(size, gw) / size;
    double meanGwXhat =
        laneSum(size,
                [&](int64_t j) { return gw(j) * moments.normalize(row[j]); }) /
        size;
    Out to = out + r * size;
    for (int64_t j = 0; j < size; ++j)
      to[j] = static_cast<float>(
          moments.rstd *
          (gw(j) - meanGw - moments.normalize(row[j]) * meanGwXhat));
  }
}

/// The weight gradient of layer_norm into `sums`: sum over the rows, in row
/// order, of g xhat.
template <typename In>
PP_CPU_CLONES void layerNormWeightGrad(In x, In dy, double *sums, int64_t rows,
                                       int64_t size, double epsilon) {
  for (int64_t r = 0; r < rows; ++r) {
    In row = x + r * size, g = dy + r * size;
    RowMoments moments(row, size, epsilon);
    for (int64_t j = 0; j < size; ++j)
      sums[j] += g[j] * moments.normalize(row[j]);
  }
}

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
        SoftmaxRow row = softmaxRow(in + start, size, stride);
        double shift = row.max + std::log(row.total);
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
                                                        math::exp(y[at]) * sum);
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
    FloatsIn<T> x = readFloats<T>(input);
    FloatsIn<T> w = weight ? readFloats<T>(weight) : x;
    FloatsIn<T> b = bias ? readFloats<T>(bias) : x;
    FloatsOut<T> out = writeFloats<T>(result);
    withConstantFlag(weight, [&](auto weighted) {
      withConstantFlag(bias, [&](auto biased) {
        forEachChunk(plan->rows, plan->size, [&](int64_t begin, int64_t end) {
          normalizeRows<decltype(weighted)::value, decltype(biased)::value>(
              x, w, b, out, begin, end, plan->size, epsilon);
        });
      });
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
    int64_t rows = plan->rows, size = plan->size;
    if (result_index == 0)
      return forEachChunk(rows, size, [&](int64_t begin, int64_t end) {
        layerNormInputGrad(x, dy, w, out, begin, end, size, epsilon);
      });
    // The weight and bias gradients sum over the rows, in row order.
    std::vector<double> sums(size, 0.0);
    if (result_index == 2)
      accumulateGroups({rows, size}, {0, 1}, dy, sums.data());
    else
      layerNormWeightGrad(x, dy, sums.data(), rows, size, epsilon);
    for (int64_t j = 0; j < static_cast<int64_t>(sums.size()); ++j)
      out[j] = static_cast<float>(sums[j]);
  });
  return result;
}

} // extern "C"
