//===- CudaDevice.h - a GPU as a device of the device layer -----*- C++ -*-===//
//
// The CUDA implementation of runtime/device: a queue is a CUDA stream, an
// event a CUDA event, and memory comes from the device's own memory pool in
// stream order (cudaMallocFromPoolAsync), which keeps what is freed for the
// next allocation instead of returning it to the driver.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CUDA_CUDADEVICE_H
#define PP_RUNTIME_CUDA_CUDADEVICE_H

#include "runtime/device/Device.h"
#include "runtime/device/Queue.h"

#include <cuda_runtime.h>

namespace pp::runtime {

/// The device layer's GPU number `ordinal`, made on first use and kept for
/// the life of the process (a GPU's memory pool and default stream outlive
/// every tensor). Makes `ordinal` the calling thread's current device.
/// Throws std::runtime_error when there is no such GPU.
Device &cudaDevice(int ordinal);

/// The calling thread's current GPU (cudaGetDevice) as cudaDevice.
Device &currentCudaDevice();

/// The stream of a CUDA queue (Queue::nativeHandle).
inline cudaStream_t streamOf(const Queue &queue) {
  return static_cast<cudaStream_t>(queue.nativeHandle());
}

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_CUDADEVICE_H
