//===- Shapes.h - shape rules shared by the CPU and CUDA kernels -*- C++
//-*-===//

#ifndef PP_RUNTIME_SHAPES_H
#define PP_RUNTIME_SHAPES_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

using Shape = std::vector<int64_t>;

/// NumPy broadcasting of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &lhs, const Shape &rhs);

/// Element strides of a row-major tensor of `shape` read as `target`
/// (right-aligned; 0 along broadcast dimensions).
Shape broadcastStrides(const Shape &shape, const Shape &target);

/// The number of elements of `shape`.
int64_t numElements(const Shape &shape);

/// "4x8" for {4, 8}; "scalar" for {}.
std::string formatShape(const Shape &shape);

/// Why `input` cannot be reshaped to `target` ("" when it can).
std::string reshapeError(const Shape &input, const Shape &target);

/// Why `input` cannot be summed to `target` ("" when it can: `target`
/// broadcasts to `input`).
std::string sumToError(const Shape &input, const Shape &target);

/// How a (batched) matrix product maps onto GEMMs.
struct MatmulPlan {
  Shape result;
  int64_t m = 0, n = 0, k = 0;
  /// Element offsets of each batch's lhs and rhs matrices.
  std::vector<int64_t> lhsOffsets, rhsOffsets;
};

/// Plans `op(lhs) x op(rhs)` over broadcast batch dimensions; nullopt and
/// `error` set when the shapes do not fit.
std::optional<MatmulPlan> planMatmul(const Shape &lhs, const Shape &rhs,
                                     bool transposeLhs, bool transposeRhs,
                                     std::string &error);

} // namespace pp::runtime

#endif // PP_RUNTIME_SHAPES_H
