//===- Device.h - a device of the runtime's device layer --------*- C++ -*-===//
//
// The device layer follows IREE's HAL: a Device (the host or a GPU) has an
// Allocator (runtime/device/Allocator.h) of its memory and Queues
// (runtime/device/Queue.h) that run work in order, synchronized with
// Events; a Buffer (runtime/device/Buffer.h) is memory on a device. The
// host's implementation is runtime/device/CpuDevice.cpp; the CUDA one is
// runtime/cuda/CudaDevice.h.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_DEVICE_DEVICE_H
#define PP_RUNTIME_DEVICE_DEVICE_H

#include "runtime/pp_runtime.h"

#include <cstdint>
#include <memory>
#include <string>

/// What the C ABI knows of a device (pp_device_get_kind, pp_device_ordinal):
/// every pp::runtime::Device is one.
struct pp_device {
  pp_device_kind kind;
  int ordinal;
};

namespace pp::runtime {

class Allocator;
class Event;
class Queue;

/// A device: where memory lives and work runs.
class Device : public pp_device {
public:
  Device(pp_device_kind kind, int ordinal) : pp_device{kind, ordinal} {}
  virtual ~Device() = default;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  pp_device_kind deviceKind() const { return kind; }
  int deviceOrdinal() const { return ordinal; }
  /// "cpu:0", "cuda:1": for messages.
  std::string name() const;

  /// Where the device's memory comes from.
  virtual Allocator &allocator() = 0;
  /// The queue work goes to unless the caller made one of its own: the
  /// host's inline queue; a GPU's compute stream.
  virtual Queue &defaultQueue() = 0;
  /// A new queue, ordered independently of the others (a GPU: a stream that
  /// does not wait for the legacy default stream). Throws
  /// std::runtime_error when the device cannot make one.
  virtual std::unique_ptr<Queue> createQueue() = 0;
  /// A new event, recorded by Queue::record. Throws std::runtime_error when
  /// the device cannot make one.
  virtual std::unique_ptr<Event> createEvent() = 0;
  /// Makes this device the calling thread's current one, where the device
  /// API puts the work and memory a thread asks for without naming a
  /// device (a GPU: cudaSetDevice); a thread of the runtime's own calls it
  /// before it works on the device. Nothing to do on the host. Throws
  /// std::runtime_error when the device cannot be made current.
  virtual void makeCurrent() {}
  /// Bytes its queues have copied between host memory and this device's
  /// memory so far (Queue::copy in either direction); 0 for the host,
  /// whose memory is the host's.
  virtual int64_t hostCopiedBytes() const { return 0; }
};

/// The host: the process's one CPU device.
Device &hostDevice();

} // namespace pp::runtime

#endif // PP_RUNTIME_DEVICE_DEVICE_H
