//===- Shapes.cpp - shape rules shared by the CPU and CUDA kernels --------===//

#include "runtime/core/Shapes.h"

#include <algorithm>

namespace pp::runtime {

std::optional<Shape> broadcastShapes(const Shape &lhs, const Shape &rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a != b && a != 1 && b != 1)
      return std::nullopt;
    result[i] = a == 1 ? b : a;
  }
  return result;
}

Shape broadcastStrides(const Shape &shape, const Shape &target) {
  Shape strides(target.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t dim = shape.size() - 1 - i;
    size_t targetDim = target.size() - 1 - i;
    strides[targetDim] = shape[dim] == 1 ? 0 : stride;
    stride *= shape[dim];
  }
  return strides;
}

int64_t numElements(const Shape &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::string formatShape(const Shape &shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

std::string reshapeError(const Shape &input, const Shape &target) {
  if (numElements(input) == numElements(target))
    return "";
  return "reshape of " + formatShape(input) + " to " + formatShape(target) +
         " changes the element count";
}

std::string sumToError(const Shape &input, const Shape &target) {
  std::optional<Shape> broadcast = broadcastShapes(target, input);
  if (broadcast && *broadcast == input)
    return "";
  return "sum_to: " + formatShape(target) + " does not broadcast to " +
         formatShape(input);
}

std::optional<MatmulPlan> planMatmul(const Shape &lhs, const Shape &rhs,
                                     bool transposeLhs, bool transposeRhs,
                                     std::string &error) {
  if (lhs.size() < 2 || rhs.size() < 2) {
    error = "matmul needs operands of rank 2 or more, got " + formatShape(lhs) +
            " and " + formatShape(rhs);
    return std::nullopt;
  }
  MatmulPlan plan;
  size_t lr = lhs.size(), rr = rhs.size();
  plan.m = transposeLhs ? lhs[lr - 1] : lhs[lr - 2];
  plan.k = transposeLhs ? lhs[lr - 2] : lhs[lr - 1];
  int64_t rhsK = transposeRhs ? rhs[rr - 1] : rhs[rr - 2];
  plan.n = transposeRhs ? rhs[rr - 2] : rhs[rr - 1];
  Shape lhsBatch(lhs.begin(), lhs.end() - 2),
      rhsBatch(rhs.begin(), rhs.end() - 2);
  std::optional<Shape> batch = broadcastShapes(lhsBatch, rhsBatch);
  if (plan.k != rhsK || !batch) {
    error = "matmul operands " + formatShape(lhs) + " and " + formatShape(rhs) +
            " do not fit";
    return std::nullopt;
  }
  plan.result = *batch;
  plan.result.push_back(plan.m);
  plan.result.push_back(plan.n);
  Shape lhsStrides = broadcastStrides(lhsBatch, *batch);
  Shape rhsStrides = broadcastStrides(rhsBatch, *batch);
  int64_t batches = numElements(*batch);
  int64_t lhsMatrix = lhs[lr - 1] * lhs[lr - 2];
  int64_t rhsMatrix = rhs[rr - 1] * rhs[rr - 2];
  for (int64_t index = 0; index < batches; ++index) {
    int64_t rest = index, lhsOffset = 0, rhsOffset = 0;
    for (size_t d = batch->size(); d-- > 0;) {
      int64_t coordinate = rest % (*batch)[d];
      rest /= (*batch)[d];
      lhsOffset += coordinate * lhsStrides[d];
      rhsOffset += coordinate * rhsStrides[d];
    }
    plan.lhsOffsets.push_back(lhsOffset * lhsMatrix);
    plan.rhsOffsets.push_back(rhsOffset * rhsMatrix);
  }
  return plan;
}

std::optional<AxisLayout> axisLayout(const Shape &shape, int64_t axis,
                                     const char *kernel, std::string &error) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank) {
    error = std::string(kernel) + ": axis " + std::to_string(axis) +
            " is out of range for shape " + formatShape(shape);
    return std::nullopt;
  }
  if (axis < 0)
    axis += rank;
  AxisLayout layout;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis    ? layout.outer
     : d == axis ? layout.size
                 : layout.inner) *= shape[d];
  return layout;
}

Shape rowMajorStrides(const Shape &shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

std::optional<StridedCopy> planSplit(const Shape &input, int64_t axis,
                                     int64_t count, const int64_t *sizes,
                                     int64_t index, std::string &error) {
  std::optional<AxisLayout> layout = axisLayout(input, axis, "split", error);
  if (!layout)
    return std::nullopt;
  if (count < 1 || index < 0 || index >= count) {
    error = "split: result " + std::to_string(index) + " of " +
            std::to_string(count) + " pieces does not exist";
    return std::nullopt;
  }
  Shape pieces(sizes, sizes + count);
  int64_t total = 0, before = 0;
  bool negative = false;
  for (int64_t i = 0; i < count; ++i) {
    negative |= pieces[i] < 0;
    total += pieces[i];
    if (i < index)
      before += pieces[i];
  }
  if (negative || total != layout->size) {
    error = "split: sizes " + formatShape(pieces) +
            " are not non-negative sizes adding up to " +
            std::to_string(layout->size) + ", the axis of " +
            formatShape(input);
    return std::nullopt;
  }
  StridedCopy copy;
  copy.shape = input;
  copy.shape[axis < 0 ? axis + static_cast<int64_t>(input.size()) : axis] =
      pieces[index];
  copy.sourceStrides = rowMajorStrides(input);
  copy.destStrides = rowMajorStrides(copy.shape);
  copy.sourceOffset = before * layout->inner;
  return copy;
}

std::optional<StridedCopy>
planSliceGrad(const Shape &grad, int64_t inputRank, const int64_t *inputShape,
              int64_t startCount, const int64_t *starts, int64_t limitCount,
              const int64_t *limits, int64_t strideCount,
              const int64_t *strides, std::string &error) {
  int64_t rank = static_cast<int64_t>(grad.size());
  if (inputRank != rank || startCount != rank || limitCount != rank ||
      strideCount != rank) {
    error = "slice_grad: grad " + formatShape(grad) + " has rank " +
            std::to_string(rank) +
            " but input_shape, starts, limits and "
            "strides have " +
            std::to_string(inputRank) + ", " + std::to_string(startCount) +
            ", " + std::to_string(limitCount) + " and " +
            std::to_string(strideCount) + " entries";
    return std::nullopt;
  }
  Shape input(inputShape, inputShape + rank);
  Shape inputStrides = rowMajorStrides(input);
  StridedCopy copy;
  copy.shape = grad;
  copy.sourceStrides = rowMajorStrides(grad);
  copy.destStrides.resize(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t start = starts[d], limit = limits[d], stride = strides[d];
    bool fits = 0 <= start && start <= limit && limit <= input[d] &&
                stride >= 1 && grad[d] == (limit - start + stride - 1) / stride;
    if (!fits) {
      error = "slice_grad: dimension " + std::to_string(d) + " of grad " +
              formatShape(grad) + " is not the slice " + std::to_string(start) +
              ":" + std::to_string(limit) + ":" + std::to_string(stride) +
              " of input_shape " + formatShape(input);
      return std::nullopt;
    }
    copy.destOffset += start * inputStrides[d];
    copy.destStrides[d] = stride * inputStrides[d];
  }
  return copy;
}

std::optional<GatherPlan> planGather(const Shape &data, const Shape &indices,
                                     int64_t axis, const char *kernel,
                                     std::string &error) {
  std::optional<AxisLayout> layout = axisLayout(data, axis, kernel, error);
  if (!layout)
    return std::nullopt;
  int64_t rank = static_cast<int64_t>(data.size());
  auto at = data.begin() + (axis < 0 ? axis + rank : axis);
  GatherPlan plan;
  plan.layout = *layout;
  plan.result.assign(data.begin(), at);
  plan.result.insert(plan.result.end(), indices.begin(), indices.end());
  plan.result.insert(plan.result.end(), at + 1, data.end());
  return plan;
}

IndexGroups groupIndices(const std::vector<int64_t> &rows, int64_t size) {
  // A counting sort, stable: positions stay ascending within a row.
  IndexGroups groups;
  groups.offsets.assign(size + 1, 0);
  for (int64_t row : rows)
    ++groups.offsets[row + 1];
  for (int64_t r = 0; r < size; ++r)
    groups.offsets[r + 1] += groups.offsets[r];
  std::vector<int64_t> next(groups.offsets.begin(), groups.offsets.end() - 1);
  groups.positions.resize(rows.size());
  for (size_t j = 0; j < rows.size(); ++j)
    groups.positions[next[rows[j]]++] = static_cast<int64_t>(j);
  return groups;
}

} // namespace pp::runtime
