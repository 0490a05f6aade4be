//===- CrossEntropyLabels.h - checked cross_entropy labels -----*- C++ -*-===//

#ifndef PP_RUNTIME_KERNELS_CROSSENTROPYLABELS_H
#define PP_RUNTIME_KERNELS_CROSSENTROPYLABELS_H

#include "runtime/kernels/Frame.h"

namespace pp::runtime {

/// The labels of cross_entropy and cross_entropy_grad as i64 values, read
/// from `hostLabels` (the labels' values in host memory): `labels` is i64 or
/// i32, shaped like `logits` ([..., classes]) without the class dimension,
/// and each label is in [0, classes) or `ignoreIndex`. nullopt with the
/// error, naming `kernel`, recorded in `frame`. Logits that are one of
/// `pieces` equal pieces of the classes (a vocabulary-parallel loss) take
/// labels in [0, pieces * classes).
std::optional<std::vector<int64_t>>
crossEntropyLabels(pp_frame *frame, const char *kernel, pp_tensor *logits,
                   pp_tensor *labels, int64_t ignoreIndex,
                   const void *hostLabels, int64_t pieces = 1);

/// crossEntropyLabels for logits of shape `logitsShape`, which no tensor
/// holds (nn.linear_cross_entropy's, made a chunk at a time).
std::optional<std::vector<int64_t>>
crossEntropyLabels(pp_frame *frame, const char *kernel,
                   const Shape &logitsShape, pp_tensor *labels,
                   int64_t ignoreIndex, const void *hostLabels,
                   int64_t pieces = 1);

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_CROSSENTROPYLABELS_H
