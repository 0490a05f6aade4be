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

/// A tensor seen as [outer, size, inner] around one axis: the `size`
/// elements of line (o, i) lie at `(o * size + k) * inner + i`.
struct AxisLayout {
  int64_t outer = 1, size = 1, inner = 1;
};

/// The layout of `shape` around `axis` (negative values count from the
/// end); nullopt and `error` set, naming `kernel`, when there is no such
/// axis.
std::optional<AxisLayout> axisLayout(const Shape &shape, int64_t axis,
                                     const char *kernel, std::string &error);

/// Row-major element strides of `shape`.
Shape rowMajorStrides(const Shape &shape);

/// Moves the elements of `shape` between two tensors: the element at
/// row-major index `index` goes from `sourceOffset + sum(index[d] *
/// sourceStrides[d])` to `destOffset + sum(index[d] * destStrides[d])`.
struct StridedCopy {
  Shape shape, sourceStrides, destStrides;
  int64_t sourceOffset = 0, destOffset = 0;
};

/// Piece `index` (of `count`, sized `sizes`) of `input` cut along `axis`:
/// the copy fills a row-major tensor of the copy's shape. nullopt and
/// `error` set when the arguments do not fit.
std::optional<StridedCopy> planSplit(const Shape &input, int64_t axis,
                                     int64_t count, const int64_t *sizes,
                                     int64_t index, std::string &error);

/// The gradient of a slice (`starts`, `limits`, `strides`, each with
/// `count` entries) of a tensor of `inputShape`: the copy scatters `grad`
/// into a row-major tensor of `inputShape` that holds zeros elsewhere.
/// nullopt and `error` set when the arguments do not fit.
std::optional<StridedCopy>
planSliceGrad(const Shape &grad, int64_t inputRank, const int64_t *inputShape,
              int64_t startCount, const int64_t *starts, int64_t limitCount,
              const int64_t *limits, int64_t strideCount,
              const int64_t *strides, std::string &error);

/// How gather moves data: `data` seen as [outer, size, inner] around the
/// axis (`layout`), the result as [outer, count, inner] with `count` the
/// number of indices; row `rows[j]` of the data goes to row j.
struct GatherPlan {
  AxisLayout layout;
  Shape result;
  /// The indices, each in [0, size) (negative ones counted from the end).
  std::vector<int64_t> rows;
};

/// The plan of a gather of `data` at `count` indices of shape `indices`
/// along `axis` (negative values count from the end), with `rows` still
/// empty; nullopt and `error` set, naming `kernel`, when there is no such
/// axis.
std::optional<GatherPlan> planGather(const Shape &data, const Shape &indices,
                                     int64_t axis, const char *kernel,
                                     std::string &error);

/// The positions j of `rows` (each in [0, size)) grouped by row: those of
/// row r are `positions[offsets[r]]` to `positions[offsets[r + 1] - 1]`, in
/// ascending order, the order in which gather_grad sums them.
struct IndexGroups {
  std::vector<int64_t> offsets, positions;
};
IndexGroups groupIndices(const std::vector<int64_t> &rows, int64_t size);

} // namespace pp::runtime

#endif // PP_RUNTIME_SHAPES_H
