//===- OnnxShapes.h - The shape arithmetic of ONNX's ops --------*- C++ -*-===//
//
// Private to frontends/onnx. What ONNX's shape and data-movement ops do to
// shapes (Reshape's 0 and -1, Slice's clamping, Expand's broadcasting, ...),
// shared by the constant folder and the converters so that a folded node and
// a converted one agree. Each reports what is wrong at the node.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_ONNX_ONNXSHAPES_H
#define PP_FRONTENDS_ONNX_ONNXSHAPES_H

#include "frontends/onnx/GraphImporter.h"

namespace pp::onnx_frontend {

using Shape = llvm::SmallVector<int64_t>;

/// `axis` of a tensor of rank `rank` counted from the front (negative axes
/// count from the back), or an error naming `what` (e.g. "axis").
mlir::FailureOr<int64_t> normalizeAxis(const NodeContext &ctx,
                                       llvm::StringRef what, int64_t axis,
                                       int64_t rank);
/// normalizeAxis for every element of `axes`, which must be unique.
mlir::FailureOr<Shape> normalizeAxes(const NodeContext &ctx,
                                     llvm::ArrayRef<int64_t> axes,
                                     int64_t rank);

/// Reshape's result shape: `requested`, where 0 copies the input's size
/// (unless `allowZero`) and one -1 takes the remaining elements.
mlir::FailureOr<Shape> reshapeShape(const NodeContext &ctx,
                                    llvm::ArrayRef<int64_t> input,
                                    llvm::ArrayRef<int64_t> requested,
                                    bool allowZero);
/// Unsqueeze's result shape: size-1 dimensions inserted at `axes` (of the
/// result).
mlir::FailureOr<Shape> unsqueezeShape(const NodeContext &ctx,
                                      llvm::ArrayRef<int64_t> input,
                                      llvm::ArrayRef<int64_t> axes);
/// Squeeze's result shape: the size-1 dimensions `axes` removed, or all
/// size-1 dimensions when `axes` is nullopt.
mlir::FailureOr<Shape>
squeezeShape(const NodeContext &ctx, llvm::ArrayRef<int64_t> input,
             std::optional<llvm::ArrayRef<int64_t>> axes);
/// Flatten's result shape: [prod(input[:axis]), prod(input[axis:])].
mlir::FailureOr<Shape> flattenShape(const NodeContext &ctx,
                                    llvm::ArrayRef<int64_t> input,
                                    int64_t axis);
/// Expand's result shape: `input` and `requested` broadcast against each
/// other (NumPy rules, in both directions).
mlir::FailureOr<Shape> expandShape(const NodeContext &ctx,
                                   llvm::ArrayRef<int64_t> input,
                                   llvm::ArrayRef<int64_t> requested);
/// Transpose's permutation: `perm`, or the reversed dimensions when absent.
mlir::FailureOr<Shape> transposePermutation(const NodeContext &ctx,
                                            int64_t rank);

/// A Slice in every dimension: elements starts[d], starts[d] + strides[d],
/// ... below limits[d] (nn.slice's form).
struct SliceBounds {
  Shape starts, limits, strides;
  /// The shape of the slice.
  Shape resultShape() const;
};
/// Slice's bounds from its `starts`, `ends`, `axes` (nullopt: the first
/// dimensions) and `steps` (nullopt: ones), clamped as ONNX says.
mlir::FailureOr<SliceBounds>
sliceBounds(const NodeContext &ctx, llvm::ArrayRef<int64_t> input,
            llvm::ArrayRef<int64_t> starts, llvm::ArrayRef<int64_t> ends,
            std::optional<llvm::ArrayRef<int64_t>> axes,
            std::optional<llvm::ArrayRef<int64_t>> steps);

/// The sizes of Split's outputs along dimension `dim` of `input`: `given`
/// (its second input), or `outputs` equal parts (opsets 13 to 17), or
/// (num_outputs, opset 18) parts of ceil(size / outputs) with a smaller
/// last one.
mlir::FailureOr<Shape> splitSizes(const NodeContext &ctx,
                                  llvm::ArrayRef<int64_t> input, int64_t dim,
                                  std::optional<llvm::ArrayRef<int64_t>> given,
                                  int64_t outputs);

/// The number of elements of `shape`.
int64_t elementCount(llvm::ArrayRef<int64_t> shape);

} // namespace pp::onnx_frontend

#endif // PP_FRONTENDS_ONNX_ONNXSHAPES_H
