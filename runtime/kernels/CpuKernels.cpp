//===- CpuKernels.cpp - host kernels for generated stage code -------------===//
//
// Every kernel is deterministic: its arithmetic order depends only on the
// shapes, so a pipelined run matches the unpipelined one bit for bit.
// Reductions accumulate in double precision.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Shapes.h"
#include "runtime/kernels/CpuKernelLoops.h"
#include "runtime/kernels/CrossEntropyLabels.h"
#include "runtime/kernels/CrossEntropyRows.h"
#include "runtime/kernels/DataMovement.h"
#include "runtime/kernels/ElementwiseFormulas.h"
#include "runtime/kernels/Frame.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/kernels/SoftmaxRows.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace pp::runtime;
using namespace pp::runtime::cpu;

/// cross_entropy_grad's gradient in a new tensor, or with `inPlace` over
/// `logits`, which the call then owns (crossEntropyGradRows reads each row
/// whole before it writes it).
static pp_tensor *crossEntropyGradInto(pp_frame *frame, pp_tensor *grad,
                                       pp_tensor *logits, pp_tensor *labels,
                                       int64_t ignore_index, int reduction,
                                       bool inPlace) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "cross_entropy_grad", {grad, logits});
  if (!dtype || !labels)
    return failedOverwrite(logits, inPlace);
  std::optional<std::vector<int64_t>> labelValues =
      crossEntropyLabels(frame, "cross_entropy_grad", logits, labels,
                         ignore_index, pp_tensor_data(labels));
  if (!labelValues)
    return failedOverwrite(logits, inPlace);
  Shape shape = shapeOf(logits);
  pp_tensor *result = inPlace ? logits : newTensor(frame, *dtype, shape);
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    crossEntropyGradRows<T>(
        readFloats<T>(logits), readFloats<T>(grad), writeFloats<T>(result),
        pp_tensor_numel(labels), shape.back(), labelValues->data(),
        ignore_index, reduction, countedLabels(*labelValues, ignore_index));
  });
  return result;
}

extern "C" {

pp_tensor *pp_cpu_copy(pp_frame *frame, pp_tensor *input) {
  if (!input)
    return nullptr;
  pp_tensor *result = newTensor(frame, pp_tensor_dtype(input), shapeOf(input));
  if (result)
    std::memcpy(pp_tensor_data(result), pp_tensor_data(input),
                pp_tensor_nbytes(input));
  return result;
}

pp_tensor *pp_cpu_empty(pp_frame *frame, pp_dtype dtype, int64_t rank,
                        const int64_t *shape) {
  return newTensor(frame, dtype, Shape(shape, shape + rank));
}

pp_tensor *pp_cpu_constant(pp_frame *frame, pp_dtype dtype, int64_t rank,
                           const int64_t *shape, int64_t count,
                           const void *values) {
  Shape target(shape, shape + rank);
  if (!checkConstantCount(frame, target, count))
    return nullptr;
  pp_tensor *result = newTensor(frame, dtype, target);
  if (!result)
    return nullptr;
  if (count != 1 || pp_tensor_numel(result) == 1) {
    if (count > 0)
      std::memcpy(pp_tensor_data(result), values, pp_tensor_nbytes(result));
    return result;
  }
  visitBits(pp_dtype_size(dtype), [&](auto bits) {
    using T = decltype(bits);
    std::fill_n(static_cast<T *>(pp_tensor_data(result)),
                pp_tensor_numel(result), *static_cast<const T *>(values));
  });
  return result;
}

void pp_cpu_parallel_for(int64_t count, int64_t item_elements,
                         void (*body)(void *context, int64_t begin,
                                      int64_t end),
                         void *context) {
  forEachChunk(count, item_elements,
               [&](int64_t begin, int64_t end) { body(context, begin, end); });
}

pp_tensor *pp_cpu_matmul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs,
                         int transpose_lhs, int transpose_rhs) {
  if (!floatOperandsType(frame, "matmul", {lhs, rhs}))
    return nullptr;
  return batchedMatmul(frame, lhs, rhs, transpose_lhs, transpose_rhs, newTensor,
                       hostGemm);
}

void pp_cpu_matmul_add(pp_frame *frame, pp_tensor *sum, pp_tensor *lhs,
                       pp_tensor *rhs, int transpose_lhs, int transpose_rhs) {
  matmulAdd(frame, sum, lhs, rhs, transpose_lhs, transpose_rhs, pp_gemm_f32);
}

pp_tensor *pp_cpu_add(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "add", lhs, rhs, PP_FORMULA(add));
}

pp_tensor *pp_cpu_sub(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "sub", lhs, rhs, PP_FORMULA(sub));
}

pp_tensor *pp_cpu_mul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "mul", lhs, rhs, PP_FORMULA(mul));
}

pp_tensor *pp_cpu_div(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs) {
  return binary(frame, "div", lhs, rhs, PP_FORMULA(div));
}

pp_tensor *pp_cpu_neg(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "neg", input, PP_FORMULA(neg));
}

pp_tensor *pp_cpu_relu(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "relu", input, PP_FORMULA(relu));
}

pp_tensor *pp_cpu_sigmoid(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "sigmoid", input, PP_FORMULA(sigmoid));
}

pp_tensor *pp_cpu_tanh(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "tanh", input, PP_FORMULA(tanh));
}

pp_tensor *pp_cpu_exp(pp_frame *frame, pp_tensor *input) {
  return unary(frame, "exp", input, PP_FORMULA(exp));
}

pp_tensor *pp_cpu_softmax(pp_frame *frame, pp_tensor *input, int64_t axis) {
  int64_t rank = input ? pp_tensor_rank(input) : 0;
  if (input && pp_tensor_dtype(input) == PP_DTYPE_F32 && rank > 0 &&
      pp_tensor_numel(input) > 0 && (axis == -1 || axis == rank - 1)) {
    // Rows of f32 along the last axis: all in one vectorized call.
    Shape shape = shapeOf(input);
    pp_tensor *result = newTensor(frame, PP_DTYPE_F32, shape);
    if (result)
      softmaxRows(elementsOf<float>(input),
                  pp_tensor_numel(input) / shape.back(), shape.back(),
                  elementsOf<float>(result));
    return result;
  }
  return mapAlongAxis(
      frame, "softmax", input, axis,
      [](auto out, auto in, int64_t start, int64_t stride, int64_t size) {
        SoftmaxRow row = softmaxRow(in + start, size, stride);
        double inverse = 1.0 / row.total;
        for (int64_t c = 0; c < size; ++c)
          out[start + c * stride] = static_cast<float>(row.exps[c] * inverse);
      });
}

pp_tensor *pp_cpu_softmax_grad(pp_frame *frame, pp_tensor *grad,
                               pp_tensor *result_value, int64_t axis) {
  return gradAlongAxis(frame, "softmax_grad", grad, result_value, axis,
                       [](auto out, auto g, auto y, int64_t start,
                          int64_t stride, int64_t size) {
                         int64_t end = start + size * stride;
                         double dot = 0;
                         for (int64_t at = start; at < end; at += stride)
                           dot += static_cast<double>(g[at]) * y[at];
                         for (int64_t at = start; at < end; at += stride)
                           out[at] = static_cast<float>(y[at] * (g[at] - dot));
                       });
}

pp_tensor *pp_cpu_relu_grad(pp_frame *frame, pp_tensor *grad,
                            pp_tensor *input) {
  return binary(frame, "relu_grad", grad, input, PP_FORMULA(relu_grad));
}

pp_tensor *pp_cpu_sigmoid_grad(pp_frame *frame, pp_tensor *grad,
                               pp_tensor *result) {
  return binary(frame, "sigmoid_grad", grad, result, PP_FORMULA(sigmoid_grad));
}

pp_tensor *pp_cpu_tanh_grad(pp_frame *frame, pp_tensor *grad,
                            pp_tensor *result) {
  return binary(frame, "tanh_grad", grad, result, PP_FORMULA(tanh_grad));
}

pp_tensor *pp_cpu_reshape(pp_frame *frame, pp_tensor *input, int64_t rank,
                          const int64_t *shape) {
  std::optional<Shape> target = reshapeTarget(frame, input, rank, shape);
  if (!target)
    return nullptr;
  pp_tensor *result = newTensor(frame, pp_tensor_dtype(input), *target);
  // The memory plan may place the result on its input's bytes (the input
  // dies here): the values are in place already.
  if (result && pp_tensor_data(result) != pp_tensor_data(input))
    std::memcpy(pp_tensor_data(result), pp_tensor_data(input),
                pp_tensor_nbytes(input));
  return result;
}

pp_tensor *pp_cpu_sum_to(pp_frame *frame, pp_tensor *input, int64_t rank,
                         const int64_t *shape) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, "sum_to", {input});
  if (!dtype)
    return nullptr;
  Shape target(shape, shape + rank), inputShape = shapeOf(input);
  if (std::string error = sumToError(inputShape, target); !error.empty()) {
    failFrame(frame, error);
    return nullptr;
  }
  pp_tensor *result = newTensor(frame, *dtype, target);
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    // Accumulate in double, visiting the input in row-major order.
    std::vector<double> sums(numElements(target), 0.0);
    accumulateGroups(inputShape, broadcastStrides(target, inputShape),
                     readFloats<T>(input), sums.data());
    FloatsOut<T> out = writeFloats<T>(result);
    for (size_t i = 0; i < sums.size(); ++i)
      out[i] = static_cast<float>(sums[i]);
  });
  return result;
}

pp_tensor *pp_cpu_split(pp_frame *frame, pp_tensor *input, int64_t axis,
                        int64_t num_sizes, const int64_t *sizes,
                        int64_t result_index) {
  std::optional<StridedCopy> copy =
      splitCopy(frame, input, axis, num_sizes, sizes, result_index);
  pp_tensor *result =
      copy ? newTensor(frame, pp_tensor_dtype(input), copy->shape) : nullptr;
  if (result)
    runStridedCopy(*copy, input, result);
  return result;
}

pp_tensor *pp_cpu_slice_grad(pp_frame *frame, pp_tensor *grad,
                             int64_t input_shape_count,
                             const int64_t *input_shape, int64_t limits_count,
                             const int64_t *limits, int64_t starts_count,
                             const int64_t *starts, int64_t strides_count,
                             const int64_t *strides) {
  std::optional<StridedCopy> copy =
      sliceGradCopy(frame, grad, input_shape_count, input_shape, starts_count,
                    starts, limits_count, limits, strides_count, strides);
  if (!copy)
    return nullptr;
  pp_tensor *result =
      newTensor(frame, pp_tensor_dtype(grad),
                Shape(input_shape, input_shape + input_shape_count));
  if (!result)
    return nullptr;
  std::memset(pp_tensor_data(result), 0, pp_tensor_nbytes(result));
  runStridedCopy(*copy, grad, result);
  return result;
}

pp_tensor *pp_cpu_cast(pp_frame *frame, pp_tensor *input, int to) {
  if (!input)
    return nullptr;
  std::optional<pp_dtype> target = checkCast(frame, pp_tensor_dtype(input), to);
  if (!target)
    return nullptr;
  pp_tensor *result = newTensor(frame, *target, shapeOf(input));
  if (!result)
    return nullptr;
  int64_t n = pp_tensor_numel(input);
  visitCastType(pp_tensor_dtype(input), [&](auto from) {
    visitCastType(*target, [&](auto into) {
      using From = decltype(from);
      using To = decltype(into);
      const From *in = static_cast<const From *>(pp_tensor_data(input));
      To *out = static_cast<To *>(pp_tensor_data(result));
      for (int64_t i = 0; i < n; ++i)
        out[i] = castElement<To>(in[i]);
    });
  });
  return result;
}

pp_tensor *pp_cpu_where(pp_frame *frame, pp_tensor *condition,
                        pp_tensor *on_true, pp_tensor *on_false) {
  std::optional<Shape> shape = whereShape(frame, condition, on_true, on_false);
  pp_tensor *result =
      shape ? newTensor(frame, pp_tensor_dtype(on_true), *shape) : nullptr;
  if (!result)
    return nullptr;
  int64_t inner = rowLength(*shape);
  const auto *c = static_cast<const uint8_t *>(pp_tensor_data(condition));
  visitBits(pp_dtype_size(pp_tensor_dtype(on_true)), [&](auto bits) {
    using T = decltype(bits);
    const T *a = static_cast<const T *>(pp_tensor_data(on_true));
    const T *b = static_cast<const T *>(pp_tensor_data(on_false));
    T *out = static_cast<T *>(pp_tensor_data(result));
    forEachBroadcastRow<3>(
        {shapeOf(condition), shapeOf(on_true), shapeOf(on_false)}, *shape,
        [&](const auto &at, const auto &steps) {
          for (int64_t j = 0; j < inner; ++j)
            out[at[3] + j] = c[at[0] + j * steps[0]] ? a[at[1] + j * steps[1]]
                                                     : b[at[2] + j * steps[2]];
        });
  });
  return result;
}

pp_tensor *pp_cpu_gather(pp_frame *frame, pp_tensor *data, pp_tensor *indices,
                         int64_t axis) {
  if (!data || !indices)
    return nullptr;
  std::optional<GatherPlan> plan = gatherPlan(
      frame, "gather", shapeOf(data), indices, axis, pp_tensor_data(indices));
  pp_tensor *result =
      plan ? newTensor(frame, pp_tensor_dtype(data), plan->result) : nullptr;
  if (!result)
    return nullptr;
  const AxisLayout &layout = plan->layout;
  int64_t count = static_cast<int64_t>(plan->rows.size());
  size_t bytes = layout.inner * pp_dtype_size(pp_tensor_dtype(data));
  const char *in = static_cast<const char *>(pp_tensor_data(data));
  char *out = static_cast<char *>(pp_tensor_data(result));
  for (int64_t o = 0; o < layout.outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(out + (o * count + j) * bytes,
                  in + (o * layout.size + plan->rows[j]) * bytes, bytes);
  return result;
}

pp_tensor *pp_cpu_gather_grad(pp_frame *frame, pp_tensor *grad,
                              pp_tensor *indices, int64_t axis,
                              int64_t data_shape_count,
                              const int64_t *data_shape) {
  if (!grad || !indices)
    return nullptr;
  Shape dataShape(data_shape, data_shape + data_shape_count);
  std::optional<GatherPlan> plan = gatherGradPlan(
      frame, grad, dataShape, indices, axis, pp_tensor_data(indices));
  pp_dtype dtype = pp_tensor_dtype(grad);
  pp_tensor *result = plan ? newTensor(frame, dtype, dataShape) : nullptr;
  if (!result)
    return nullptr;
  forFloatType(dtype, [&](auto element) {
    using T = decltype(element);
    sumGatheredSlices(*plan, readFloats<T>(grad), 0, plan->layout.size,
                      writeFloats<T>(result));
  });
  return result;
}

void pp_cpu_gather_grad_add(pp_frame *frame, pp_tensor *sum, pp_tensor *grad,
                            pp_tensor *indices, int64_t axis) {
  if (!gatherGradAddOperandsHold(frame, sum, grad, indices))
    return;
  std::optional<GatherPlan> plan = gatherGradPlan(
      frame, grad, shapeOf(sum), indices, axis, pp_tensor_data(indices));
  if (!plan)
    return;
  sumGatheredSlices(*plan, readFloats<float>(grad), 0, plan->layout.size,
                    writeFloats<float>(sum), /*addToOut=*/true);
}

pp_tensor *pp_cpu_mse_loss(pp_frame *frame, pp_tensor *input, pp_tensor *target,
                           int reduction) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "mse_loss", {input, target});
  if (!dtype)
    return nullptr;
  if (shapeOf(input) != shapeOf(target)) {
    failFrame(frame, "mse_loss: input " + formatShape(shapeOf(input)) +
                         " and target " + formatShape(shapeOf(target)) +
                         " differ");
    return nullptr;
  }
  int64_t n = pp_tensor_numel(input);
  pp_tensor *result = nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    FloatsIn<T> x = readFloats<T>(input), t = readFloats<T>(target);
    if (reduction == 2) {
      result = newTensor(frame, *dtype, shapeOf(input));
      if (result)
        fillElements(elementsOf<T>(result), n,
                     [&](int64_t i) { return (x[i] - t[i]) * (x[i] - t[i]); });
      return;
    }
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double diff = static_cast<double>(x[i]) - t[i];
      sum += diff * diff;
    }
    if (reduction == 0 && n > 0)
      sum /= n;
    result = scalar(frame, sum, *dtype);
  });
  return result;
}

pp_tensor *pp_cpu_mse_loss_grad(pp_frame *frame, pp_tensor *grad,
                                pp_tensor *input, pp_tensor *target,
                                int reduction) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "mse_loss_grad", {grad, input, target});
  int64_t n = input ? pp_tensor_numel(input) : 0;
  pp_tensor *result =
      dtype ? newTensor(frame, *dtype, shapeOf(input)) : nullptr;
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    FloatsIn<T> g = readFloats<T>(grad), x = readFloats<T>(input),
                t = readFloats<T>(target);
    bool perElement = reduction == 2;
    float scale = reduction == 0 && n > 0 ? 2.0f / n : 2.0f;
    fillElements(elementsOf<T>(result), n, [&](int64_t i) {
      return scale * (x[i] - t[i]) * g[perElement ? i : 0];
    });
  });
  return result;
}

pp_tensor *pp_cpu_cross_entropy(pp_frame *frame, pp_tensor *logits,
                                pp_tensor *labels, int64_t ignore_index,
                                int reduction) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "cross_entropy", {logits});
  if (!dtype || !labels)
    return nullptr;
  std::optional<std::vector<int64_t>> y =
      crossEntropyLabels(frame, "cross_entropy", logits, labels, ignore_index,
                         pp_tensor_data(labels));
  if (!y)
    return nullptr;
  Shape shape = shapeOf(logits);
  int64_t rows = pp_tensor_numel(labels);
  // Each row's loss on the thread pool, then their sum in row order.
  std::vector<double> losses(rows, 0.0);
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    crossEntropyLosses(readFloats<T>(logits), rows, shape.back(), y->data(),
                       ignore_index, losses.data());
  });
  return crossEntropyResult(frame, losses, y->data(), ignore_index, reduction,
                            *dtype, Shape(shape.begin(), shape.end() - 1));
}

pp_tensor *pp_cpu_cross_entropy_grad(pp_frame *frame, pp_tensor *grad,
                                     pp_tensor *logits, pp_tensor *labels,
                                     int64_t ignore_index, int reduction) {
  return crossEntropyGradInto(frame, grad, logits, labels, ignore_index,
                              reduction, /*inPlace=*/false);
}

pp_tensor *pp_cpu_cross_entropy_grad_in_place(pp_frame *frame, pp_tensor *grad,
                                              pp_tensor *logits,
                                              pp_tensor *labels,
                                              int64_t ignore_index,
                                              int reduction) {
  return crossEntropyGradInto(frame, grad, logits, labels, ignore_index,
                              reduction, /*inPlace=*/true);
}

} // extern "C"
