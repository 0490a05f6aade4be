//===- DataMovement.h - plans of the data-movement kernels ------*- C++ -*-===//
//
// transpose, slice, concat, broadcast_to, trilu and constant move elements
// without reading them, so their kernels work for every dtype. The CPU kernels
// (CpuDataMovementKernels.cpp) and their CUDA twins share these plans: each
// checks its arguments, records what is wrong in the frame, and describes
// the move as StridedCopy values (runtime/core/Shapes.h).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_DATAMOVEMENT_H
#define PP_RUNTIME_KERNELS_DATAMOVEMENT_H

#include "runtime/kernels/Frame.h"

namespace pp::runtime {

/// The copy of transpose: result dimension i is input dimension
/// `permutation[i]`; it fills a row-major tensor of the copy's shape. nullopt
/// with the error recorded (or after an earlier failure: `input` null).
std::optional<StridedCopy> transposeCopy(pp_frame *frame, pp_tensor *input,
                                         int64_t count,
                                         const int64_t *permutation);

/// The copy of a strided slice (`starts`, `limits`, `strides`, each with
/// one entry per dimension, as nn.slice); it fills a row-major tensor of the
/// copy's shape. nullopt as transposeCopy.
std::optional<StridedCopy> sliceCopy(pp_frame *frame, pp_tensor *input,
                                     int64_t limitCount, const int64_t *limits,
                                     int64_t startCount, const int64_t *starts,
                                     int64_t strideCount,
                                     const int64_t *strides);

/// The copy of broadcast_to `shape` (NumPy rules); it fills a row-major
/// tensor of `shape`. nullopt as transposeCopy.
std::optional<StridedCopy> broadcastCopy(pp_frame *frame, pp_tensor *input,
                                         int64_t rank, const int64_t *shape);

/// How concat fills its result: one copy per input into a row-major
/// tensor of `shape`, with the inputs' dtype.
struct ConcatPlan {
  Shape shape;
  pp_dtype dtype = PP_DTYPE_F32;
  std::vector<StridedCopy> copies;
};

/// The plan of concatenating `count` tensors along `axis` (negative values
/// count from the end): one or more inputs of one dtype and rank that agree
/// outside the axis. nullopt as transposeCopy (any input null).
std::optional<ConcatPlan> concatPlan(pp_frame *frame, int64_t count,
                                     pp_tensor *const *inputs, int64_t axis);

/// `input` seen as `matrices` matrices of `rows` x `columns`, its two
/// trailing dimensions.
struct MatrixStack {
  int64_t matrices = 1, rows = 1, columns = 1;
};

/// The matrices of trilu's input (rank 2 or more); nullopt as
/// transposeCopy.
std::optional<MatrixStack> triluMatrices(pp_frame *frame, pp_tensor *input);

/// Whether `count` values make a constant of `shape`: one (a splat) or one
/// per element; false with the error recorded.
bool checkConstantCount(pp_frame *frame, const Shape &shape, int64_t count);

/// Whether trilu keeps element (`row`, `column`) of each matrix.
PP_HOST_DEVICE inline bool triluKeeps(int64_t row, int64_t column,
                                      int64_t diagonal, int upper) {
  return upper ? column - row >= diagonal : column - row <= diagonal;
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_DATAMOVEMENT_H
