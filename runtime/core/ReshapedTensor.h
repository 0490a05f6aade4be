//===- ReshapedTensor.h - a tensor given a new shape in place ---*- C++ -*-===//
//
// A row-major reshape only renames the elements: where the code owns a
// tensor and reads it no more as it was, the tensor itself takes the new
// shape, and no copy is made (pp_frame_reshape_owned).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CORE_RESHAPEDTENSOR_H
#define PP_RUNTIME_CORE_RESHAPEDTENSOR_H

#include "runtime/pp_runtime.h"

#include <vector>

namespace pp::runtime {

/// Gives `tensor` the shape `shape`, which holds as many elements (the
/// caller has checked): the same bytes, read under the new shape.
void reshapeTensor(pp_tensor *tensor, const std::vector<int64_t> &shape);

} // namespace pp::runtime

#endif // PP_RUNTIME_CORE_RESHAPEDTENSOR_H
