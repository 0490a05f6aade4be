//===- CpuShardedKernels.cpp - host kernels that span a CollectiveGroup ---===//
//
// The kernels of pp.all_reduce, pp.all_gather, pp.reduce_scatter,
// pp.shard_slice and the vocabulary-parallel gather and cross-entropy: each
// runs on every device of the frame's CollectiveGroup (frame->collectives)
// with that device's tensors. Every device of a group gets the same bits:
// values are exchanged with allGather and combined in group order (sums in
// double, rounded once), so results depend only on the shapes and the group
// size. A sharded dimension of global size n with b blocks over T devices
// is [b, n / b]; device r holds elements [r n / (b T), (r + 1) n / (b T)) of
// every block, in block order (the layout of #pp.sharding).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Shapes.h"
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

/// The frame's group, or null with the error recorded: a collective needs
/// one.
CollectiveGroup *groupOf(pp_frame *frame, const char *kernel) {
  if (!frame->collectives)
    failFrame(frame, std::string(kernel) +
                         ": the stage function runs a collective but the "
                         "runtime gave its frame no tensor-parallel group "
                         "(frame->collectives); run the package with pp-run, "
                         "which connects one per tensor axis");
  return frame->collectives;
}

/// Every device's `count` values of type T at `mine`, in group order
/// (size() * count values), or nullopt with the group's error recorded.
template <typename T>
std::optional<std::vector<T>> gatherAll(pp_frame *frame, const char *kernel,
                                        CollectiveGroup &group, const T *mine,
                                        size_t count) {
  std::vector<T> all(count * group.size());
  try {
    group.allGather(mine, count * sizeof(T), all.data());
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

/// The pieces of one device along a sharded dimension: `outer` x `blocks`
/// runs of `run` contiguous elements, the run (o, k) at `local(o, k)` in the
/// device's tensor and at `global(o, k, rank)` in the whole one.
struct ShardLayout {
  int64_t outer = 1, blocks = 1, devices = 1, run = 0;

  int64_t local(int64_t o, int64_t k) const { return (o * blocks + k) * run; }
  int64_t global(int64_t o, int64_t k, int64_t rank) const {
    return ((o * blocks + k) * devices + rank) * run;
  }
  /// Calls `copy(localOffset, globalOffset, count)` (in elements) for every
  /// run of device `rank`, in order.
  template <typename Copy> void forEachRun(int64_t rank, Copy copy) const {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < blocks; ++k)
        copy(local(o, k), global(o, k, rank), run);
  }
};

/// The layout of dimension `dim` of the whole tensor `global` split into
/// `blocks` blocks over `devices` devices, or nullopt with the error
/// recorded, naming `kernel`.
std::optional<ShardLayout> shardLayout(pp_frame *frame, const char *kernel,
                                       const Shape &global, int64_t dim,
                                       int64_t blocks, int64_t devices) {
  int64_t rank = static_cast<int64_t>(global.size());
  if (dim < 0 || dim >= rank || blocks < 1) {
    failFrame(frame, std::string(kernel) + ": dim " + std::to_string(dim) +
                         " with " + std::to_string(blocks) +
                         " block(s) does not name a dimension of " +
                         formatShape(global));
    return std::nullopt;
  }
  int64_t pieces = blocks * devices;
  if (global[dim] % pieces != 0) {
    failFrame(frame, std::string(kernel) + ": dimension " +
                         std::to_string(dim) + " of " + formatShape(global) +
                         " does not split into " + std::to_string(blocks) +
                         " block(s) x " + std::to_string(devices) +
                         " device(s)");
    return std::nullopt;
  }
  ShardLayout layout;
  layout.blocks = blocks;
  layout.devices = devices;
  layout.run = global[dim] / pieces;
  for (int64_t d = 0; d < dim; ++d)
    layout.outer *= global[d];
  for (int64_t d = dim + 1; d < rank; ++d)
    layout.run *= global[d];
  return layout;
}

/// `shape` with dimension `dim` (when in range) times `grow` divided by
/// `shrink`: a shard's shape from the whole one's, or back.
Shape scaledShape(Shape shape, int64_t dim, int64_t grow, int64_t shrink = 1) {
  if (dim >= 0 && dim < static_cast<int64_t>(shape.size()))
    shape[dim] = shape[dim] * grow / shrink;
  return shape;
}

/// Combines `count` values, one per device at `values[q * stride]`, as
/// `reduction` (0 sum, 1 max, 2 min) in group order: a sum in double,
/// rounded once.
float reduceInOrder(const float *values, int64_t count, int64_t stride,
                    int reduction) {
  if (reduction == 0) {
    double sum = 0;
    for (int64_t q = 0; q < count; ++q)
      sum += values[q * stride];
    return static_cast<float>(sum);
  }
  float result = values[0];
  for (int64_t q = 1; q < count; ++q)
    result = reduction == 1 ? std::max(result, values[q * stride])
                            : std::min(result, values[q * stride]);
  return result;
}

/// Checks a reduction kind (pp.ReductionKind).
bool checkReduction(pp_frame *frame, const char *kernel, int reduction) {
  if (reduction >= 0 && reduction <= 2)
    return true;
  failFrame(frame, std::string(kernel) + ": reduction " +
                       std::to_string(reduction) +
                       " is not 0 (sum), 1 (max) or 2 (min)");
  return false;
}

/// One position of logits split over their classes, combined over the
/// group: the maximum, the sum of exp(logit - maximum) and the logit of the
/// label (0 for an ignored position).
struct GlobalSoftmax {
  double max = 0, total = 0, labelLogit = 0;
};

/// The GlobalSoftmax of every position of `logits` ([..., classes], this
/// device's piece of the classes) with global `labels`, exchanged over the
/// group: the maxima first, then the sums of exponentials and label logits.
/// Ignored positions are skipped (every device agrees on them: the labels
/// are replicated).
std::optional<std::vector<GlobalSoftmax>>
globalSoftmax(pp_frame *frame, const char *kernel, CollectiveGroup &group,
              pp_tensor *logits, const std::vector<int64_t> &labels,
              int64_t ignoreIndex) {
  int64_t positions = static_cast<int64_t>(labels.size());
  int64_t classes = shapeOf(logits).back(), devices = group.size();
  int64_t first = group.rank() * classes;
  const float *z = floats(logits);
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
    const float *row = z + p * classes;
    for (int64_t c = 0; c < classes; ++c)
      sums[2 * p] += std::exp(row[c] - rows[p].max);
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

/// The labels and global softmax of a sharded cross-entropy kernel, or
/// nullopt with the error recorded.
std::optional<std::pair<std::vector<int64_t>, std::vector<GlobalSoftmax>>>
shardedLoss(pp_frame *frame, const char *kernel, pp_tensor *logits,
            pp_tensor *labels, int64_t ignoreIndex) {
  CollectiveGroup *group = groupOf(frame, kernel);
  if (!group)
    return std::nullopt;
  std::optional<std::vector<int64_t>> y =
      crossEntropyLabels(frame, kernel, logits, labels, ignoreIndex,
                         pp_tensor_data(labels), group->size());
  if (!y)
    return std::nullopt;
  std::optional<std::vector<GlobalSoftmax>> rows =
      globalSoftmax(frame, kernel, *group, logits, *y, ignoreIndex);
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

/// `input` on every device of the frame's group reduced as `reduction` in
/// group order, into a new f32 tensor: the whole tensor (all_reduce), or
/// with `scatter` this device's shard of dimension `dim` split into
/// `blocks` blocks (reduce_scatter). Null after an earlier failure or with
/// the error recorded.
pp_tensor *reduceOverGroup(pp_frame *frame, const char *kernel,
                           pp_tensor *input, int reduction, bool scatter,
                           int64_t blocks = 1, int64_t dim = 0) {
  CollectiveGroup *group = checkInputs(frame, kernel, {input}) &&
                                   checkReduction(frame, kernel, reduction)
                               ? groupOf(frame, kernel)
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
  pp_tensor *result =
      all ? newTensor(frame, PP_DTYPE_F32, scaledShape(whole, dim, 1, devices))
          : nullptr;
  if (!result)
    return nullptr;
  const float *values = reinterpret_cast<const float *>(all->data());
  float *out = floats(result);
  layout->forEachRun(scatter ? group->rank() : 0, [&](int64_t local,
                                                      int64_t global,
                                                      int64_t run) {
    for (int64_t i = 0; i < run; ++i)
      out[local + i] =
          reduceInOrder(values + global + i, group->size(), count, reduction);
  });
  return result;
}

} // namespace

extern "C" {

pp_tensor *pp_cpu_all_reduce(pp_frame *frame, pp_tensor *input,
                             int reduction) {
  return reduceOverGroup(frame, "all_reduce", input, reduction,
                         /*scatter=*/false);
}

pp_tensor *pp_cpu_all_gather(pp_frame *frame, pp_tensor *input,
                             int64_t blocks, int64_t dim) {
  CollectiveGroup *group = input ? groupOf(frame, "all_gather") : nullptr;
  if (!group)
    return nullptr;
  Shape whole = scaledShape(shapeOf(input), dim, group->size());
  std::optional<ShardLayout> layout =
      shardLayout(frame, "all_gather", whole, dim, blocks, group->size());
  std::optional<std::vector<char>> all =
      layout ? gatherTensors(frame, "all_gather", *group, input)
             : std::nullopt;
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
                                 int64_t blocks, int64_t dim, int reduction) {
  return reduceOverGroup(frame, "reduce_scatter", input, reduction,
                         /*scatter=*/true, blocks, dim);
}

pp_tensor *pp_cpu_shard_slice(pp_frame *frame, pp_tensor *input,
                              int64_t blocks, int64_t dim) {
  CollectiveGroup *group = input ? groupOf(frame, "shard_slice") : nullptr;
  if (!group)
    return nullptr;
  Shape whole = shapeOf(input);
  std::optional<ShardLayout> layout =
      shardLayout(frame, "shard_slice", whole, dim, blocks, group->size());
  pp_tensor *result =
      layout ? newTensor(frame, pp_tensor_dtype(input),
                         scaledShape(whole, dim, 1, group->size()))
             : nullptr;
  if (!result)
    return nullptr;
  size_t element = pp_dtype_size(pp_tensor_dtype(input));
  const char *in = static_cast<const char *>(pp_tensor_data(input));
  char *out = static_cast<char *>(pp_tensor_data(result));
  layout->forEachRun(group->rank(), [&](int64_t local, int64_t global,
                                        int64_t count) {
    std::memcpy(out + local * element, in + global * element, count * element);
  });
  return result;
}

pp_tensor *pp_cpu_sharded_gather(pp_frame *frame, pp_tensor *data,
                                 pp_tensor *indices, int64_t axis) {
  CollectiveGroup *group =
      data && indices ? groupOf(frame, "sharded_gather") : nullptr;
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
                                      pp_tensor *indices, int64_t axis,
                                      int64_t data_shape_count,
                                      const int64_t *data_shape) {
  CollectiveGroup *group =
      grad && indices ? groupOf(frame, "sharded_gather_grad") : nullptr;
  if (!group)
    return nullptr;
  Shape dataShape(data_shape, data_shape + data_shape_count);
  std::optional<GatherPlan> plan = wholeTablePlan(
      frame, "sharded_gather_grad", *group, dataShape, indices, axis, grad);
  pp_tensor *result =
      plan ? newTensor(frame, PP_DTYPE_F32, dataShape) : nullptr;
  if (!result)
    return nullptr;
  // This device's rows of gather_grad on the whole table.
  int64_t pieceRows = plan->layout.size / group->size();
  sumGatheredSlices(*plan, floats(grad), group->rank() * pieceRows, pieceRows,
                    floats(result));
  return result;
}

pp_tensor *pp_cpu_sharded_cross_entropy(pp_frame *frame, pp_tensor *logits,
                                        pp_tensor *labels,
                                        int64_t ignore_index) {
  if (!checkInputs(frame, "sharded_cross_entropy", {logits}) || !labels)
    return nullptr;
  auto loss = shardedLoss(frame, "sharded_cross_entropy", logits, labels,
                          ignore_index);
  if (!loss)
    return nullptr;
  auto &[y, rows] = *loss;
  double sum = 0;
  for (size_t p = 0; p < y.size(); ++p)
    if (y[p] != ignore_index)
      sum += std::log(rows[p].total) + rows[p].max - rows[p].labelLogit;
  return scalar(frame, sum);
}

pp_tensor *pp_cpu_sharded_cross_entropy_grad(pp_frame *frame, pp_tensor *grad,
                                             pp_tensor *logits,
                                             pp_tensor *labels,
                                             int64_t ignore_index) {
  if (!checkInputs(frame, "sharded_cross_entropy_grad", {grad, logits}) ||
      !labels)
    return nullptr;
  auto loss = shardedLoss(frame, "sharded_cross_entropy_grad", logits, labels,
                          ignore_index);
  Shape shape = shapeOf(logits);
  pp_tensor *result = loss ? newTensor(frame, PP_DTYPE_F32, shape) : nullptr;
  if (!result)
    return nullptr;
  auto &[y, rows] = *loss;
  int64_t classes = shape.back();
  int64_t first = frame->collectives->rank() * classes;
  double scale = floats(grad)[0];
  const float *z = floats(logits);
  float *out = floats(result);
  for (size_t p = 0; p < y.size(); ++p) {
    float *row = out + p * classes;
    if (y[p] == ignore_index) {
      std::fill_n(row, classes, 0.0f);
      continue;
    }
    for (int64_t c = 0; c < classes; ++c) {
      double softmax =
          std::exp(z[p * classes + c] - rows[p].max) / rows[p].total;
      row[c] = static_cast<float>(
          (softmax - (first + c == y[p] ? 1.0 : 0.0)) * scale);
    }
  }
  return result;
}

} // extern "C"
