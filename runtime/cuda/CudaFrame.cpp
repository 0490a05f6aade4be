//===- CudaFrame.cpp - where a frame's CUDA kernels run -------------------===//

#include "runtime/cuda/CudaFrame.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/device/Queue.h"

#include <stdexcept>

namespace pp::runtime::cuda {

Queue *kernelQueue(pp_frame *frame) {
  if (frame->queue) {
    if (frame->queue->device().deviceKind() == PP_DEVICE_CUDA)
      return frame->queue;
    failFrame(frame, "a CUDA kernel was called on a frame whose queue is on " +
                         frame->queue->device().name() +
                         "; CUDA stage functions run on a CUDA backend "
                         "(pp-run --device cuda)");
    return nullptr;
  }
  try {
    return &currentCudaDevice().defaultQueue();
  } catch (const std::exception &error) {
    failFrame(frame, error.what());
    return nullptr;
  }
}

cudaStream_t kernelStream(pp_frame *frame) {
  Queue *queue = kernelQueue(frame);
  return queue ? streamOf(*queue) : nullptr;
}

pp_tensor *newDeviceTensor(pp_frame *frame, pp_dtype dtype,
                           const Shape &shape) {
  Queue *queue = kernelQueue(frame);
  pp_tensor *tensor = nullptr;
  if (queue && pp_tensor_create_in(&queue->tensorAllocator(), dtype,
                                   static_cast<int64_t>(shape.size()),
                                   shape.data(), &tensor) != PP_OK)
    failFrame(frame, pp_last_error());
  return tensor;
}

} // namespace pp::runtime::cuda
