//===- Device.cpp - devices and queues, and their C ABI -------------------===//

#include "runtime/device/Device.h"

#include "runtime/device/Allocator.h"
#include "runtime/device/Queue.h"

namespace pp::runtime {

std::string Device::name() const {
  return std::string(pp_device_kind_name(kind)) + ":" +
         std::to_string(ordinal);
}

namespace {

/// The queue's allocator as the C ABI calls it.
void *allocateInOrder(const pp_allocator *self, size_t bytes) {
  auto *queue = static_cast<Queue *>(self->context);
  return queue->device().allocator().allocate(bytes, *queue);
}

void releaseInOrder(const pp_allocator *self, void *data) {
  auto *queue = static_cast<Queue *>(self->context);
  queue->device().allocator().release(data, *queue);
}

} // namespace

Queue::Queue(Device &device)
    : owner(device),
      allocatorInOrder{allocateInOrder, releaseInOrder, &device, this} {}

} // namespace pp::runtime

extern "C" const pp_device *pp_host_device(void) {
  return &pp::runtime::hostDevice();
}

extern "C" pp_device_kind pp_device_get_kind(const pp_device *device) {
  return device->kind;
}

extern "C" int pp_device_ordinal(const pp_device *device) {
  return device->ordinal;
}

extern "C" const char *pp_device_kind_name(pp_device_kind kind) {
  switch (kind) {
  case PP_DEVICE_CPU:
    return "cpu";
  case PP_DEVICE_CUDA:
    return "cuda";
  }
  return "unknown";
}
