//===- ReductionPlans.h - shapes of the reducing kernels --------*- C++ -*-===//
//
// The checked shapes of the kernels that reduce groups of elements
// (reduce_*, layer_norm and their gradients), shared by the CPU and CUDA
// kernels: each records its error in the frame and returns nullopt.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_REDUCTIONPLANS_H
#define PP_RUNTIME_KERNELS_REDUCTIONPLANS_H

#include "runtime/kernels/Frame.h"

namespace pp::runtime {

/// A reduction of a tensor of shape `input` over some axes: element `i`
/// (row-major) belongs to group `sum(index(i)[d] * groupStrides[d])`, the
/// row-major index of its group in `kept` (the input shape with the reduced
/// dimensions set to 1), which has `groups` elements of `groupSize` inputs.
/// `removed` is the input shape without the reduced dimensions.
struct ReducePlan {
  Shape input, kept, removed, groupStrides;
  int64_t groups = 0, groupSize = 0;
};

/// The plan of reducing `input` over `axes[0..count)` (unique, negative
/// values counting from the end).
std::optional<ReducePlan> reducePlan(pp_frame *frame, const char *kernel,
                                     const Shape &input, int64_t count,
                                     const int64_t *axes);

/// The plan of a reduction gradient: `reduced` (a gradient or forward
/// result) must be `input` reduced over the axes, with or without the kept
/// dimensions.
std::optional<ReducePlan> reduceGradPlan(pp_frame *frame, const char *kernel,
                                         const Shape &reduced,
                                         const Shape &input, int64_t count,
                                         const int64_t *axes);

/// The plan of reduce_max_grad: `grad` and the forward `result` of the
/// maximum of `input` over the axes share a shape (reduceGradPlan's).
std::optional<ReducePlan> reduceMaxGradPlan(pp_frame *frame, pp_tensor *grad,
                                            pp_tensor *input, pp_tensor *result,
                                            int64_t count, const int64_t *axes);

/// layer_norm over the dimensions from `axis` on: `rows` rows of `size`
/// contiguous elements.
struct LayerNormPlan {
  int64_t rows = 0, size = 0;
};

/// The plan of layer_norm (or its gradient) of `input` over the dimensions
/// from `axis` (negative: from the end) with the optional `weight` and
/// `bias` shaped like those dimensions, and the optional `grad` shaped like
/// `input`; fails too for a negative `epsilon` or a missing tensor.
std::optional<LayerNormPlan> layerNormPlan(pp_frame *frame, const char *kernel,
                                           pp_tensor *input, pp_tensor *weight,
                                           pp_tensor *bias, pp_tensor *grad,
                                           int64_t axis, double epsilon);

/// The plan of result `resultIndex` (0: input, 1: weight, 2: bias) of
/// layer_norm_grad (layerNormPlan's checks, and that the result exists).
std::optional<LayerNormPlan> layerNormGradPlan(pp_frame *frame, pp_tensor *grad,
                                               pp_tensor *input,
                                               pp_tensor *weight, int64_t axis,
                                               double epsilon,
                                               int64_t resultIndex);

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_REDUCTIONPLANS_H
