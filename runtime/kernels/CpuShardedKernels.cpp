//===- CpuShardedKernels.cpp - host kernels that span a CollectiveGroup ---===//
//
// The kernels of pp.all_reduce, pp.all_gather, pp.reduce_scatter,
// pp.shard_slice and the vocabulary-parallel gather and cross-entropy: each
// runs on every device of the frame's CollectiveGroup of its axes
// with that device's tensors. Every device of a group gets the same bits:
// values are exchanged with allGather and combined in group order (sums in
// double, rounded once), so results depend only on the shapes and the group
// size (the layouts and the group-order arithmetic are CollectivePlans.h's,
// shared with the CUDA twins).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Shapes.h"
#include "runtime/kernels/CollectivePlans.h"
#include "runtime/kernels/CpuKernelLoops.h"
#include "runtime/kernels/CrossEntropyLabels.h"
#include "runtime/kernels/Frame.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

using namespace pp::runtime;
using namespace pp::runtime::cpu;

namespace {

/// Every device's `count` values of type T at `mine`, in group order
/// (size() * count values), or nullopt with the group's error recorded.
template <typename T>
std::optional<std::vector<T>> gatherAll(pp_frame *frame, const char *kernel,
                                        CollectiveGroup &group, const T *mine,
                                        size_t count) {
  std::vector<T> all(count * group.size());
  try {
    group.allGather(mine, count * sizeof(T), all.data(),
                    hostDevice().defaultQueue());
  } catch (const std::exception &error) {
    failFrame(frame, std::string(kernel) + ": " + error.what());
    return std::nullopt;
  }
  return all;
}

template <typename T>
std::optional<std::vector<T>> gatherAll(pp_frame *frame, const char *kernel,
                                        CollectiveGroup &group,
                                        const std::vector<T> &values) {
  return gatherAll(frame, kernel, group, values.data(), values.size());
}

/// The bytes of `tensor` from every device of `group`, in group order.
std::optional<std::vector<char>> gatherTensors(pp_frame *frame,
                                               const char *kernel,
                                               CollectiveGroup &group,
                                               pp_tensor *tensor) {
  return gatherAll(frame, kernel, group,
                   static_cast<const char *>(pp_tensor_data(tensor)),
                   pp_tensor_nbytes(tensor));
}

/// One position of logits split over their classes, combined over the
/// group: the maximum, the sum of exp(logit - maximum) and the logit of the
/// label (0 for an ignored position).
struct GlobalSoftmax {
  double max = 0, total = 0, labelLogit = 0;
};

/// The GlobalSoftmax of every position of `logits` ([..., classes] of T,
/// this device's piece of the classes) with global `labels`, exchanged over
/// the group: the maxima first, then the sums of exponentials and label
/// logits. Ignored positions are skipped (every device agrees on them: the
/// labels are replicated).
template <typename T>
std::optional<std::vector<GlobalSoftmax>>
globalSoftmax(pp_frame *frame, const char *kernel, CollectiveGroup &group,
              pp_tensor *logits, const std::vector<int64_t> &labels,
              int64_t ignoreIndex) {
  int64_t positions = static_cast<int64_t>(labels.size());
  int64_t classes = shapeOf(logits).back(), devices = group.size();
  int64_t first = group.rank() * classes;
  FloatsIn<T> z = readFloats<T>(logits);
  std::vector<double> maxima(positions,
                             -std::numeric_limits<double>::infinity());
  for (int64_t p = 0; p < positions; ++p)
    if (labels[p] != ignoreIndex)
      for (int64_t c = 0; c < classes; ++c)
        maxima[p] = std::max<double>(maxima[p], z[p * classes + c]);
  std::optional<std::vector<double>> allMaxima =
      gatherAll(frame, kernel, group, maxima);
  if (!allMaxima)
    return std::nullopt;
  std::vector<GlobalSoftmax> rows(positions);
  std::vector<double> sums(2 * positions, 0.0);
  for (int64_t p = 0; p < positions; ++p) {
    if (labels[p] == ignoreIndex)
      continue;
    rows[p].max = (*allMaxima)[p];
    for (int64_t q = 1; q < devices; ++q)
      rows[p].max = std::max(rows[p].max, (*allMaxima)[q * positions + p]);
    FloatsIn<T> row = z + p * classes;
    for (int64_t c = 0; c < classes; ++c)
      sums[2 * p] += math::exp(row[c] - static_cast<float>(rows[p].max));
    int64_t label = labels[p] - first;
    if (label >= 0 && label < classes)
      sums[2 * p + 1] = row[label];
  }
  std::optional<std::vector<double>> allSums =
      gatherAll(frame, kernel, group, sums);
  if (!allSums)
    return std::nullopt;
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t q = 0; q < devices; ++q) {
      rows[p].total += (*allSums)[q * 2 * positions + 2 * p];
      rows[p].labelLogit += (*allSums)[q * 2 * positions + 2 * p + 1];
    }
  return rows;
}

/// The labels and global softmax of a sharded cross-entropy kernel over the
/// frame's group of `axes` (set in `group`) on logits of T, or nullopt with
/// the error recorded.
template <typename T>
std::optional<std::pair<std::vector<int64_t>, std::vector<GlobalSoftmax>>>
shardedLoss(pp_frame *frame, const char *kernel, pp_tensor *logits,
            pp_tensor *labels, const char *axes, int64_t ignoreIndex,
            CollectiveGroup *&group) {
  group = collectiveGroup(frame, kernel, axes);
  if (!group)
    return std::nullopt;
  std::optional<std::vector<int64_t>> y =
      crossEntropyLabels(frame, kernel, logits, labels, ignoreIndex,
                         pp_tensor_data(labels), group->size());
  if (!y)
    return std::nullopt;
  std::optional<std::vector<GlobalSoftmax>> rows =
      globalSoftmax<T>(frame, kernel, *group, logits, *y, ignoreIndex);
  if (!rows)
    return std::nullopt;
  return std::make_pair(std::move(*y), std::move(*rows));
}

/// The gather plan of a sharded gather (or its gradient) against the whole
/// table: `localShape` with `axis` grown by the group size.
std::optional<GatherPlan> wholeTablePlan(pp_frame *frame, const char *kernel,
                                         CollectiveGroup &group,
                                         const Shape &localShape,
                                         pp_tensor *indices, int64_t axis,
                                         pp_tensor *grad) {
  int64_t rank = static_cast<int64_t>(localShape.size());
  Shape whole =
      scaledShape(localShape, axis < 0 ? axis + rank : axis, group.size());
  return grad ? gatherGradPlan(frame, grad, whole, indices, axis,
                               pp_tensor_data(indices))
              : gatherPlan(frame, kernel, whole, indices, axis,
                           pp_tensor_data(indices));
}

/// `input` on every device of the frame's group of `axes` reduced as
/// `reduction` in group order, into a new tensor of its float type: the whole
/// tensor (all_reduce), or with `scatter` this device's shard of dimension
/// `dim` split into `blocks` blocks (reduce_scatter). Null after an earlier
/// failure or with the error recorded.
pp_tensor *reduceOverGroup(pp_frame *frame, const char *kernel,
                           pp_tensor *input, const char *axes, int reduction,
                           bool scatter, int64_t blocks = 1, int64_t dim = 0) {
  CollectiveGroup *group = checkReduceInput(frame, kernel, input, reduction)
                               ? collectiveGroup(frame, kernel, axes)
                               : nullptr;
  if (!group)
    return nullptr;
  Shape whole = shapeOf(input);
  int64_t count = pp_tensor_numel(input);
  int64_t devices = scatter ? group->size() : 1;
  std::optional<ShardLayout> layout =
      scatter ? shardLayout(frame, kernel, whole, dim, blocks, devices)
              : ShardLayout{1, 1, 1, count};
  std::optional<std::vector<char>> all =
      layout ? gatherTensors(frame, kernel, *group, input) : std::nullopt;
  pp_dtype dtype = pp_tensor_dtype(input);
  pp_tensor *result =
      all ? newTensor(frame, dtype, scaledShape(whole, dim, 1, devices))
          : nullptr;
  if (!result)
    return nullptr;
  forFloatType(dtype, [&](auto element) {
    using T = decltype(element);
    const T *values = reinterpret_cast<const T *>(all->data());
    T *out = elementsOf<T>(result);
    layout->forEachRun(scatter ? group->rank() : 0,
                       [&](int64_t local, int64_t global, int64_t run) {
                         for (int64_t i = 0; i < run; ++i)
                           out[local + i] = storeFloat<T>(
                               reduceInOrder(values + global + i, group->size(),
                                             count, reduction));
                       });
  });
  return result;
}

} // namespace

extern "C" {

pp_tensor *pp_cpu_all_reduce(pp_frame *frame, pp_tensor *input,
                             const char *axes, int reduction) {
  return reduceOverGroup(frame, "all_reduce", input, axes, reduction,
                         /*scatter=*/false);
}

pp_tensor *pp_cpu_all_gather(pp_frame *frame, pp_tensor *input,
                             const char *axes, int64_t blocks, int64_t dim) {
  CollectiveGroup *group =
      input ? collectiveGroup(frame, "all_gather", axes) : nullptr;
  if (!group)
    return nullptr;
  Shape whole = scaledShape(shapeOf(input), dim, group->size());
  std::optional<ShardLayout> layout =
      shardLayout(frame, "all_gather", whole, dim, blocks, group->size());
  std::optional<std::vector<char>> all =
      layout ? gatherTensors(frame, "all_gather", *group, input) : std::nullopt;
  pp_tensor *result =
      all ? newTensor(frame, pp_tensor_dtype(input), whole) : nullptr;
  if (!result)
    return nullptr;
  size_t element = pp_dtype_size(pp_tensor_dtype(input));
  size_t bytes = pp_tensor_nbytes(input);
  char *out = static_cast<char *>(pp_tensor_data(result));
  for (int64_t q = 0; q < group->size(); ++q)
    layout->forEachRun(q, [&](int64_t local, int64_t global, int64_t count) {
      std::memcpy(out + global * element,
                  all->data() + q * bytes + local * element, count * element);
    });
  return result;
}

pp_tensor *pp_cpu_reduce_scatter(pp_frame *frame, pp_tensor *input,
                                 const char *axes, int64_t blocks, int64_t dim,
                                 int reduction) {
  return reduceOverGroup(frame, "reduce_scatter", input, axes, reduction,
                         /*scatter=*/true, blocks, dim);
}

pp_tensor *pp_cpu_shard_slice(pp_frame *frame, pp_tensor *input,
                              const char *axes, int64_t blocks, int64_t dim) {
  std::optional<ShardCopy> slice =
      shardSliceCopy(frame, input, axes, blocks, dim);
  pp_tensor *result =
      slice ? newTensor(frame, pp_tensor_dtype(input), slice->shape) : nullptr;
  if (!result)
    return nullptr;
  runStridedCopy(slice->copy, input, result);
  return result;
}

pp_tensor *pp_cpu_sharded_gather(pp_frame *frame, pp_tensor *data,
                                 pp_tensor *indices, const char *axes,
                                 int64_t axis) {
  CollectiveGroup *group = data && indices
                               ? collectiveGroup(frame, "sharded_gather", axes)
                               : nullptr;
  if (!group)
    return nullptr;
  Shape shape = shapeOf(data);
  std::optional<GatherPlan> plan = wholeTablePlan(
      frame, "sharded_gather", *group, shape, indices, axis, nullptr);
  pp_tensor *result =
      plan ? newTensor(frame, pp_tensor_dtype(data), plan->result) : nullptr;
  if (!result)
    return nullptr;
  // The rows this device holds are copied, the others are zeros: the sum
  // over the group is the gather from the whole table.
  const AxisLayout &layout = plan->layout;
  int64_t pieceRows = layout.size / group->size();
  int64_t first = group->rank() * pieceRows;
  int64_t count = static_cast<int64_t>(plan->rows.size());
  size_t bytes = layout.inner * pp_dtype_size(pp_tensor_dtype(data));
  const char *in = static_cast<const char *>(pp_tensor_data(data));
  char *out = static_cast<char *>(pp_tensor_data(result));
  for (int64_t o = 0; o < layout.outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      int64_t row = plan->rows[j] - first;
      char *slice = out + (o * count + j) * bytes;
      if (row >= 0 && row < pieceRows)
        std::memcpy(slice, in + (o * pieceRows + row) * bytes, bytes);
      else
        std::memset(slice, 0, bytes);
    }
  return result;
}

pp_tensor *pp_cpu_sharded_gather_grad(pp_frame *frame, pp_tensor *grad,
                                      pp_tensor *indices, const char *axes,
                                      int64_t axis, int64_t data_shape_count,
                                      const int64_t *data_shape) {
  CollectiveGroup *group =
      grad && indices ? collectiveGroup(frame, "sharded_gather_grad", axes)
                      : nullptr;
  if (!group)
    return nullptr;
  Shape dataShape(data_shape, data_shape + data_shape_count);
  std::optional<GatherPlan> plan = wholeTablePlan(
      frame, "sharded_gather_grad", *group, dataShape, indices, axis, grad);
  pp_dtype dtype = pp_tensor_dtype(grad);
  pp_tensor *result = plan ? newTensor(frame, dtype, dataShape) : nullptr;
  if (!result)
    return nullptr;
  // This device's rows of gather_grad on the whole table.
  int64_t pieceRows = plan->layout.size / group->size();
  forFloatType(dtype, [&](auto element) {
    using T = decltype(element);
    sumGatheredSlices(*plan, readFloats<T>(grad), group->rank() * pieceRows,
                      pieceRows, writeFloats<T>(result));
  });
  return result;
}

pp_tensor *pp_cpu_sharded_cross_entropy(pp_frame *frame, pp_tensor *logits,
                                        pp_tensor *labels, const char *axes,
                                        int64_t ignore_index) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "sharded_cross_entropy", {logits});
  if (!dtype || !labels)
    return nullptr;
  pp_tensor *result = nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    CollectiveGroup *group = nullptr;
    auto loss = shardedLoss<T>(frame, "sharded_cross_entropy", logits, labels,
                               axes, ignore_index, group);
    if (!loss)
      return;
    auto &[y, rows] = *loss;
    double sum = 0;
    for (size_t p = 0; p < y.size(); ++p)
      if (y[p] != ignore_index)
        sum += std::log(rows[p].total) + rows[p].max - rows[p].labelLogit;
    result = scalar(frame, sum, *dtype);
  });
  return result;
}

pp_tensor *pp_cpu_sharded_cross_entropy_grad(pp_frame *frame, pp_tensor *grad,
                                             pp_tensor *logits,
                                             pp_tensor *labels,
                                             const char *axes,
                                             int64_t ignore_index) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, "sharded_cross_entropy_grad", {grad, logits});
  if (!dtype || !labels)
    return nullptr;
  pp_tensor *result = nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    CollectiveGroup *group = nullptr;
    auto loss = shardedLoss<T>(frame, "sharded_cross_entropy_grad", logits,
                               labels, axes, ignore_index, group);
    Shape shape = shapeOf(logits);
    result = loss ? newTensor(frame, *dtype, shape) : nullptr;
    if (!result)
      return;
    auto &[y, rows] = *loss;
    int64_t classes = shape.back();
    int64_t first = group->rank() * classes;
    double scale = readFloats<T>(grad)[0];
    FloatsIn<T> z = readFloats<T>(logits);
    FloatsOut<T> out = writeFloats<T>(result);
    for (size_t p = 0; p < y.size(); ++p) {
      FloatsOut<T> row = out + p * classes;
      for (int64_t c = 0; c < classes; ++c) {
        if (y[p] == ignore_index) {
          row[c] = 0.0f;
          continue;
        }
        double softmax =
            math::exp(z[p * classes + c] - static_cast<float>(rows[p].max)) /
            rows[p].total;
        row[c] = static_cast<float>(
            (softmax - (first + c == y[p] ? 1.0 : 0.0)) * scale);
      }
    }
  });
  return result;
}

} // extern "C"
