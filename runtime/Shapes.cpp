//===- Shapes.cpp - shape rules shared by the CPU and CUDA kernels --------===//

#include "runtime/Shapes.h"

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

} // namespace pp::runtime
