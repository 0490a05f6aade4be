//===- Buffer.h - memory on a device ----------------------------*- C++ -*-===//

#ifndef PP_RUNTIME_DEVICE_BUFFER_H
#define PP_RUNTIME_DEVICE_BUFFER_H

#include <cstddef>

namespace pp::runtime {

class Device;
class Queue;

/// Bytes on a device: owned (from the device's allocator, freed in the
/// order of the queue that allocated them) or borrowed (the caller's, left
/// alone).
class Buffer {
public:
  /// `bytes` from the allocator of `queue`'s device, usable by the work
  /// queued on `queue` from now on. Throws std::runtime_error when the
  /// device has no memory to give.
  static Buffer allocate(Queue &queue, size_t bytes);
  /// A buffer over `bytes` at `data` on `device`, which the caller keeps
  /// alive while the buffer is used.
  static Buffer borrow(Device &device, void *data, size_t bytes);

  Buffer(Buffer &&other) noexcept;
  Buffer &operator=(Buffer &&other) noexcept;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  /// Frees owned memory after the work queued on its queue so far.
  ~Buffer();

  void *data() const { return bytes; }
  size_t size() const { return count; }
  Device &device() const { return *owner; }
  /// Whether the buffer frees its memory.
  bool owned() const { return queue != nullptr; }

private:
  Buffer(Device &device, Queue *queue, void *data, size_t bytes)
      : owner(&device), queue(queue), bytes(data), count(bytes) {}
  void release();

  Device *owner;
  /// The queue that allocated the memory; null for borrowed memory.
  Queue *queue;
  void *bytes;
  size_t count;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_DEVICE_BUFFER_H
