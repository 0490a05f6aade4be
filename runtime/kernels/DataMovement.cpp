//===- DataMovement.cpp - plans of the data-movement kernels --------------===//

#include "runtime/kernels/DataMovement.h"

#include <algorithm>
#include <utility>

namespace pp::runtime {

namespace {

/// `values[0..count)` as "[a, b, c]" for messages.
std::string formatList(int64_t count, const int64_t *values) {
  std::string text = "[";
  for (int64_t i = 0; i < count; ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

} // namespace

std::optional<StridedCopy> transposeCopy(pp_frame *frame, pp_tensor *input,
                                         int64_t count,
                                         const int64_t *permutation) {
  if (!input)
    return std::nullopt;
  Shape shape = shapeOf(input);
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> seen(rank, false);
  bool valid = count == rank;
  for (int64_t i = 0; valid && i < count; ++i) {
    int64_t dim = permutation[i];
    valid = dim >= 0 && dim < rank && !seen[dim];
    if (valid)
      seen[dim] = true;
  }
  if (!valid) {
    failFrame(frame, "transpose: " + formatList(count, permutation) +
                         " is not a permutation of the dimensions of " +
                         formatShape(shape));
    return std::nullopt;
  }
  Shape inputStrides = rowMajorStrides(shape);
  StridedCopy copy;
  for (int64_t i = 0; i < rank; ++i) {
    copy.shape.push_back(shape[permutation[i]]);
    copy.sourceStrides.push_back(inputStrides[permutation[i]]);
  }
  copy.destStrides = rowMajorStrides(copy.shape);
  return copy;
}

std::optional<StridedCopy> sliceCopy(pp_frame *frame, pp_tensor *input,
                                     int64_t limitCount, const int64_t *limits,
                                     int64_t startCount, const int64_t *starts,
                                     int64_t strideCount,
                                     const int64_t *strides) {
  if (!input)
    return std::nullopt;
  Shape shape = shapeOf(input);
  int64_t rank = static_cast<int64_t>(shape.size());
  bool valid = startCount == rank && limitCount == rank && strideCount == rank;
  Shape sliced;
  for (int64_t d = 0; valid && d < rank; ++d) {
    valid = 0 <= starts[d] && starts[d] <= limits[d] && limits[d] <= shape[d] &&
            strides[d] >= 1;
    sliced.push_back(
        valid ? (limits[d] - starts[d] + strides[d] - 1) / strides[d] : 0);
  }
  if (!valid) {
    failFrame(frame, "slice: starts " + formatList(startCount, starts) +
                         ", limits " + formatList(limitCount, limits) +
                         " and strides " + formatList(strideCount, strides) +
                         " are not a slice of " + formatShape(shape) +
                         " (one entry per dimension, 0 <= start <= limit <= "
                         "size, stride >= 1)");
    return std::nullopt;
  }
  // A slice is the transpose of its gradient's scatter.
  std::string error;
  std::optional<StridedCopy> copy =
      planSliceGrad(sliced, rank, shape.data(), startCount, starts, limitCount,
                    limits, strideCount, strides, error);
  if (!copy) {
    failFrame(frame, error);
    return std::nullopt;
  }
  std::swap(copy->sourceStrides, copy->destStrides);
  std::swap(copy->sourceOffset, copy->destOffset);
  return copy;
}

std::optional<StridedCopy> broadcastCopy(pp_frame *frame, pp_tensor *input,
                                         int64_t rank, const int64_t *shape) {
  if (!input)
    return std::nullopt;
  Shape from = shapeOf(input), to(shape, shape + rank);
  // `from` broadcasts to `to` exactly when summing `to` back to it works.
  if (std::string error = sumToError(to, from); !error.empty()) {
    failFrame(frame, "broadcast_to: " + formatShape(from) +
                         " does not broadcast to " + formatShape(to));
    return std::nullopt;
  }
  StridedCopy copy;
  copy.shape = to;
  copy.sourceStrides = broadcastStrides(from, to);
  copy.destStrides = rowMajorStrides(to);
  return copy;
}

std::optional<ConcatPlan> concatPlan(pp_frame *frame, int64_t count,
                                     pp_tensor *const *inputs, int64_t axis) {
  if (count < 1) {
    failFrame(frame, "concat: needs at least one input");
    return std::nullopt;
  }
  if (std::any_of(inputs, inputs + count,
                  [](pp_tensor *input) { return !input; }))
    return std::nullopt;
  ConcatPlan plan;
  plan.shape = shapeOf(inputs[0]);
  plan.dtype = pp_tensor_dtype(inputs[0]);
  std::string error;
  std::optional<AxisLayout> layout =
      axisLayout(plan.shape, axis, "concat", error);
  if (!layout) {
    failFrame(frame, error);
    return std::nullopt;
  }
  size_t dim = static_cast<size_t>(
      axis < 0 ? axis + static_cast<int64_t>(plan.shape.size()) : axis);
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    Shape shape = shapeOf(inputs[i]);
    bool agree = pp_tensor_dtype(inputs[i]) == plan.dtype &&
                 shape.size() == plan.shape.size();
    for (size_t d = 0; agree && d < shape.size(); ++d)
      agree = d == dim || shape[d] == plan.shape[d];
    if (!agree) {
      failFrame(frame, "concat: input " + std::to_string(i) + " (" +
                           pp_dtype_name(pp_tensor_dtype(inputs[i])) + " " +
                           formatShape(shape) + ") does not match input 0 (" +
                           pp_dtype_name(plan.dtype) + " " +
                           formatShape(shapeOf(inputs[0])) + ") outside axis " +
                           std::to_string(dim));
      return std::nullopt;
    }
    StridedCopy copy;
    copy.shape = shape;
    copy.sourceStrides = rowMajorStrides(shape);
    copy.destOffset = offset; // In units of the result's axis stride.
    plan.copies.push_back(std::move(copy));
    offset += shape[dim];
  }
  plan.shape[dim] = offset;
  Shape strides = rowMajorStrides(plan.shape);
  for (StridedCopy &copy : plan.copies) {
    copy.destOffset *= strides[dim];
    copy.destStrides = strides;
  }
  return plan;
}

bool checkConstantCount(pp_frame *frame, const Shape &shape, int64_t count) {
  if (count == 1 || count == numElements(shape))
    return true;
  failFrame(frame, "constant: " + std::to_string(count) +
                       " values for a tensor of " + formatShape(shape) +
                       "; give one per element, or one to repeat");
  return false;
}

std::optional<MatrixStack> triluMatrices(pp_frame *frame, pp_tensor *input) {
  if (!input)
    return std::nullopt;
  Shape shape = shapeOf(input);
  if (shape.size() < 2) {
    failFrame(frame, "trilu: input " + formatShape(shape) + " has rank " +
                         std::to_string(shape.size()) +
                         "; it needs rank 2 or more");
    return std::nullopt;
  }
  MatrixStack stack;
  stack.rows = shape[shape.size() - 2];
  stack.columns = shape.back();
  stack.matrices = stack.rows * stack.columns > 0
                       ? numElements(shape) / (stack.rows * stack.columns)
                       : 0;
  return stack;
}

} // namespace pp::runtime
