//===- CudaFrame.h - where a frame's CUDA kernels run -----------*- C++ -*-===//

#ifndef PP_RUNTIME_CUDA_CUDAFRAME_H
#define PP_RUNTIME_CUDA_CUDAFRAME_H

#include "runtime/core/Shapes.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>

namespace pp::runtime::cuda {

/// The CUDA queue a frame's kernels run on: the frame's queue, or the
/// current GPU's default queue for a frame without one (a caller outside
/// the trainer); null, with the error recorded, for a queue on another
/// kind of device or without a GPU.
Queue *kernelQueue(pp_frame *frame);

/// The stream of kernelQueue (the legacy default stream where it failed:
/// then nothing launches, as the result's allocation failed first).
cudaStream_t kernelStream(pp_frame *frame);

/// A new device tensor of `dtype` and `shape` allocated in the order of
/// the frame's kernel queue; null with the error recorded.
pp_tensor *newDeviceTensor(pp_frame *frame, pp_dtype dtype,
                           const Shape &shape);

} // namespace pp::runtime::cuda

#endif // PP_RUNTIME_CUDA_CUDAFRAME_H
