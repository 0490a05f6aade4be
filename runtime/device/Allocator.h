//===- Allocator.h - where a device's memory comes from ---------*- C++ -*-===//

#ifndef PP_RUNTIME_DEVICE_ALLOCATOR_H
#define PP_RUNTIME_DEVICE_ALLOCATOR_H

#include <cstddef>

namespace pp::runtime {

class Device;
class Queue;

/// Allocates a device's memory in a queue's order: the host's caches
/// 64-byte-aligned host memory per thread (pp_host_cache_allocator); a
/// GPU's takes stream-ordered memory from a pool (cudaMallocFromPoolAsync).
class Allocator {
public:
  virtual ~Allocator() = default;
  /// The device whose memory this is.
  virtual Device &device() = 0;
  /// The alignment of every allocation, in bytes.
  virtual size_t alignment() const = 0;
  /// `bytes` (0 is allowed) of uninitialized memory that the work queued on
  /// `queue` from now on may use; null when there is none to be had.
  virtual void *allocate(size_t bytes, Queue &queue) = 0;
  /// Frees `data` (from allocate) once the work queued on `queue` so far
  /// is done.
  virtual void release(void *data, Queue &queue) = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_DEVICE_ALLOCATOR_H
