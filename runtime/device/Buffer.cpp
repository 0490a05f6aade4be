//===- Buffer.cpp - memory on a device ------------------------------------===//

#include "runtime/device/Buffer.h"

#include "runtime/device/Allocator.h"
#include "runtime/device/Device.h"
#include "runtime/device/Queue.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace pp::runtime {

Buffer Buffer::allocate(Queue &queue, size_t bytes) {
  Device &device = queue.device();
  void *data = device.allocator().allocate(bytes, queue);
  if (!data)
    throw std::runtime_error("cannot allocate " + std::to_string(bytes) +
                             " bytes on " + device.name());
  return Buffer(device, &queue, data, bytes);
}

Buffer Buffer::borrow(Device &device, void *data, size_t bytes) {
  return Buffer(device, nullptr, data, bytes);
}

Buffer::Buffer(Buffer &&other) noexcept
    : owner(other.owner), queue(std::exchange(other.queue, nullptr)),
      bytes(std::exchange(other.bytes, nullptr)),
      count(std::exchange(other.count, 0)) {}

Buffer &Buffer::operator=(Buffer &&other) noexcept {
  if (this != &other) {
    release();
    owner = other.owner;
    queue = std::exchange(other.queue, nullptr);
    bytes = std::exchange(other.bytes, nullptr);
    count = std::exchange(other.count, 0);
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (queue && bytes)
    owner->allocator().release(bytes, *queue);
  queue = nullptr;
  bytes = nullptr;
}

} // namespace pp::runtime
