//===- Queue.h - ordered work on a device, and events -----------*- C++ -*-===//
//
// A queue runs the work given to it in the order given: on the host it runs
// at once, on the caller's thread; on a GPU it is a CUDA stream. An event
// marks a point of a queue's work: another queue waits for it
// (Queue::wait), the host too (Event::synchronize).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_DEVICE_QUEUE_H
#define PP_RUNTIME_DEVICE_QUEUE_H

#include "runtime/pp_runtime.h"

#include <cstddef>
#include <functional>

namespace pp::runtime {

class Device;

/// A point in a queue's work, set by Queue::record.
class Event {
public:
  virtual ~Event() = default;
  /// Blocks the calling thread until the work queued before the event's
  /// last record is done; returns at once for an event never recorded.
  virtual void synchronize() = 0;
  /// Whether the work queued before the last record is done (true for an
  /// event never recorded).
  virtual bool isDone() = 0;
};

/// Work on one device, run in the order it is queued. Methods throw
/// std::runtime_error when the device fails.
class Queue {
public:
  explicit Queue(Device &device);
  virtual ~Queue() = default;
  Queue(const Queue &) = delete;
  Queue &operator=(const Queue &) = delete;

  Device &device() const { return owner; }
  /// The device API's handle of the queue: a CUDA queue's cudaStream_t;
  /// null for the host's queues.
  virtual void *nativeHandle() const = 0;
  /// The device's allocator in this queue's order, for the C ABI
  /// (pp_tensor_create_in): memory allocated and freed after the work
  /// queued before. It lives as long as the queue.
  const pp_allocator &tensorAllocator() const { return allocatorInOrder; }

  /// Copies `bytes` from `source` to `destination`, each in host memory or
  /// this device's, after the work queued before. Host memory at `source`
  /// may change once copy returns; host memory at `destination` holds the
  /// bytes once the queue is synchronized.
  virtual void copy(void *destination, const void *source, size_t bytes) = 0;
  /// Sets `bytes` bytes of this device's memory at `data` to zero.
  virtual void zero(void *data, size_t bytes) = 0;
  /// Runs `work` on the host after the work queued before; the work queued
  /// after waits for it.
  virtual void enqueueHost(std::function<void()> work) = 0;
  /// Sets `event` to the point after the work queued so far. Throws
  /// std::runtime_error for an event of another kind of device.
  virtual void record(Event &event) = 0;
  /// Makes the work queued from now on wait until `event`'s point is
  /// reached (on whatever queue recorded it).
  virtual void wait(Event &event) = 0;
  /// Blocks the calling thread until the work queued so far is done.
  virtual void synchronize() = 0;

private:
  Device &owner;
  pp_allocator allocatorInOrder;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_DEVICE_QUEUE_H
