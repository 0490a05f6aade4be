//===- CudaCollectiveKernels.h - device steps of the collectives -*- C++ -*-===//
//
// The device kernels that the CUDA collectives (CudaShardedKernels.cpp) run
// after gathering every device's tensor (CollectiveGroup::allGather on the
// frame's queue), on that queue like the other CUDA kernels.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CUDA_CUDACOLLECTIVEKERNELS_H
#define PP_RUNTIME_CUDA_CUDACOLLECTIVEKERNELS_H

#include "runtime/kernels/Frame.h"

namespace pp::runtime::cuda {

/// A new device tensor of `source`'s dtype and of `shape` (as many elements
/// as the copy moves) filled by `copy` from device tensor `source`; null
/// with the error recorded in `frame`, naming `kernel`.
pp_tensor *copyOnDevice(pp_frame *frame, const char *kernel,
                        const StridedCopy &copy, pp_tensor *source,
                        const Shape &shape);

/// A new device tensor of `shape` and of `gathered`'s float dtype (f32,
/// bf16 or f16): `piece` (a copy out of one device's tensor,
/// ShardLayout::piece) where each element is the group's values at that
/// place in `gathered` ([devices, one device's tensor]) combined as
/// `reduction` in group order (reduceInOrder), rounded once; null with the
/// error recorded.
pp_tensor *reduceGathered(pp_frame *frame, const char *kernel,
                          pp_tensor *gathered, const StridedCopy &piece,
                          const Shape &shape, int reduction);

} // namespace pp::runtime::cuda

#endif // PP_RUNTIME_CUDA_CUDACOLLECTIVEKERNELS_H
