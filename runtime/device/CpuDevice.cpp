//===- CpuDevice.cpp - the host as a device -------------------------------===//
//
// The host's queues run their work at once, on the caller's thread, so the
// work queued before any point is done when the caller gets there: an event
// is reached when it is recorded, and waiting for one is waiting for the
// queue that recorded it (a GPU's, say) from the host. Memory comes from
// the calling thread's cache of 64-byte-aligned host buffers
// (runtime/core/HostCache.h), as the kernels' results always have.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/HostCache.h"
#include "runtime/device/Allocator.h"
#include "runtime/device/Device.h"
#include "runtime/device/Queue.h"

#include <cstring>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// An event of a host queue: reached when recorded.
class CpuEvent : public Event {
public:
  void synchronize() override {}
  bool isDone() override { return true; }
};

class CpuQueue : public Queue {
public:
  using Queue::Queue;

  void *nativeHandle() const override { return nullptr; }

  void copy(void *destination, const void *source, size_t bytes) override {
    if (bytes > 0)
      std::memcpy(destination, source, bytes);
  }

  void zero(void *data, size_t bytes) override {
    if (bytes > 0)
      std::memset(data, 0, bytes);
  }

  void enqueueHost(std::function<void()> work) override { work(); }

  void record(Event &event) override {
    if (!dynamic_cast<CpuEvent *>(&event))
      throw std::runtime_error("a queue of " + device().name() +
                               " records only events of the host");
  }

  /// The host waits: the work queued here after it runs after the event.
  void wait(Event &event) override { event.synchronize(); }

  void synchronize() override {}
};

class CpuAllocator : public Allocator {
public:
  explicit CpuAllocator(Device &device) : owner(device) {}
  Device &device() override { return owner; }
  size_t alignment() const override { return kHostAlignment; }
  void *allocate(size_t bytes, Queue &) override {
    return allocateCachedHost(bytes);
  }
  void release(void *data, Queue &) override { releaseCachedHost(data); }

private:
  Device &owner;
};

class CpuDevice : public Device {
public:
  CpuDevice()
      : Device(PP_DEVICE_CPU, 0), memory(*this), queue(*this) {}

  Allocator &allocator() override { return memory; }
  Queue &defaultQueue() override { return queue; }
  std::unique_ptr<Queue> createQueue() override {
    return std::make_unique<CpuQueue>(*this);
  }
  std::unique_ptr<Event> createEvent() override {
    return std::make_unique<CpuEvent>();
  }

private:
  CpuAllocator memory;
  CpuQueue queue;
};

} // namespace

Device &hostDevice() {
  // Never destroyed: a tensor freed while statics are torn down still finds
  // its device.
  static CpuDevice *host = new CpuDevice;
  return *host;
}

} // namespace pp::runtime
