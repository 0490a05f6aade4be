//===- LinearCrossEntropyGeometry.h - an LM head loss's shapes --*- C++ -*-===//
//
// nn.linear_cross_entropy and its gradient (dialects/nn/IR/NNOps.td) on one
// target: `rows` rows of hidden states of depth D times a [D, V] (or [V, D])
// weight gives `rows` rows of V logits, made `chunkRows` rows at a time.
// The CPU and CUDA kernels share it, and the GEMMs of one chunk
// (LinearCrossEntropyChunks.h), so that both read their operands the same
// way.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_LINEARCROSSENTROPYGEOMETRY_H
#define PP_RUNTIME_KERNELS_LINEARCROSSENTROPYGEOMETRY_H

#include "runtime/core/Shapes.h"
#include "runtime/pp_kernels.h"

#include <algorithm>
#include <optional>

namespace pp::runtime {

/// One linear_cross_entropy call's shapes.
struct LinearCrossEntropyGeometry {
  int64_t rows = 0;      ///< Positions: the hidden states' leading elements.
  int64_t depth = 0;     ///< D
  int64_t classes = 0;   ///< V
  int64_t chunkRows = 1; ///< Rows whose logits are made at once.
  bool transposeWeight = false; ///< The weight is [V, D].
  bool hasBias = false;         ///< A bias [V] is added to the logits.
  /// The logits the product would make, [..., V]: the labels' checks read
  /// it.
  Shape logitsShape;
  /// The loss: rank 0, or the positions for reduction none.
  Shape lossShape;

  /// Elements between two rows of the weight.
  int64_t weightStride() const { return transposeWeight ? depth : classes; }
  /// The weight's rows (its columns: weightStride).
  int64_t weightRows() const { return transposeWeight ? classes : depth; }
  /// Rows of the chunk that starts at row `first`.
  int64_t rowsFrom(int64_t first) const {
    return std::min(chunkRows, rows - first);
  }
  /// Elements of one chunk's logits.
  int64_t chunkElements() const { return std::min(chunkRows, rows) * classes; }
};

/// The geometry of a call of `kernel` on `hidden`, `weight`, `labels` and
/// `bias` (null without one) with reduction `reduction` (0 mean, 1 sum, 2
/// none): f32 hidden [..., D], weight [D, V] (or [V, D] with
/// `transposeWeight`) and bias [V], positive `chunkRows`. nullopt, the
/// error in `frame`, when they do not fit (the labels' values are checked
/// by crossEntropyLabels).
std::optional<LinearCrossEntropyGeometry>
linearCrossEntropyCall(pp_frame *frame, const char *kernel, pp_tensor *hidden,
                       pp_tensor *weight, pp_tensor *labels, pp_tensor *bias,
                       int64_t chunkRows, int reduction, int transposeWeight);

/// linearCrossEntropyCall for linear_cross_entropy_grad, also checking that
/// `grad` is an f32 tensor of the loss's shape.
std::optional<LinearCrossEntropyGeometry>
linearCrossEntropyGradCall(pp_frame *frame, pp_tensor *grad, pp_tensor *hidden,
                           pp_tensor *weight, pp_tensor *labels,
                           pp_tensor *bias, int64_t chunkRows, int reduction,
                           int transposeWeight);

/// True when `sum`, where the gradient of the head's `parameter` (its
/// "weight" or "bias": `what`) adds up (pp_frame_gradient_sum), is f32 of
/// its shape; else false, the error in `frame`.
bool checkGradientSum(pp_frame *frame, const char *what, pp_tensor *sum,
                      pp_tensor *parameter);

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_LINEARCROSSENTROPYGEOMETRY_H
