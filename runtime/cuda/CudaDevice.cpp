//===- CudaDevice.cpp - a GPU as a device of the device layer -------------===//
//
// The default queue is a blocking stream: work on the legacy default stream
// (a caller outside the device layer) and on it wait for each other, as all
// work on the legacy stream did. Queues from createQueue are non-blocking:
// communication streams that wait for nothing implicitly.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDevice.h"

#include "runtime/cuda/CudaChecks.h"
#include "runtime/device/Allocator.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

namespace pp::runtime {
namespace {

class CudaEvent : public Event {
public:
  CudaEvent() {
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
          "cudaEventCreate");
  }
  ~CudaEvent() override { cudaEventDestroy(event); }

  void synchronize() override {
    check(cudaEventSynchronize(event), "cudaEventSynchronize");
  }

  bool isDone() override {
    cudaError_t state = cudaEventQuery(event);
    if (state == cudaErrorNotReady)
      return false;
    check(state, "cudaEventQuery");
    return true;
  }

  cudaEvent_t handle() const { return event; }

private:
  cudaEvent_t event = nullptr;
};

/// The CUDA event behind `event`; throws for another device's event.
cudaEvent_t cudaEventOf(Event &event, const Device &device) {
  auto *cuda = dynamic_cast<CudaEvent *>(&event);
  if (!cuda)
    throw std::runtime_error("a queue of " + device.name() +
                             " records only CUDA events");
  return cuda->handle();
}

/// What kind of memory `pointer` points into.
cudaMemoryType memoryTypeOf(const void *pointer) {
  cudaPointerAttributes attributes = {};
  check(cudaPointerGetAttributes(&attributes, pointer),
        "cudaPointerGetAttributes");
  return attributes.type;
}

/// Whether memory of `type` is the host's: pinned, or pageable (unknown to
/// CUDA).
bool isHostMemory(cudaMemoryType type) {
  return type == cudaMemoryTypeHost || type == cudaMemoryTypeUnregistered;
}

class CudaQueue : public Queue {
public:
  /// A stream made with `flags` that adds the bytes it copies between the
  /// host and a GPU to `hostCopied`.
  CudaQueue(Device &device, unsigned flags, std::atomic<int64_t> &hostCopied)
      : Queue(device), hostCopied(hostCopied) {
    check(cudaStreamCreateWithFlags(&stream, flags), "cudaStreamCreate");
  }
  ~CudaQueue() override {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }

  void *nativeHandle() const override { return stream; }

  /// A copy from pageable host memory returns once the bytes are staged; one
  /// from pinned host memory (which the DMA reads later) waits for the copy,
  /// so that the source may change once copy returns. A copy between host
  /// and GPU memory counts towards the device's hostCopiedBytes.
  void copy(void *destination, const void *source, size_t bytes) override {
    if (bytes == 0)
      return;
    check(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault,
                          stream),
          "copying " + std::to_string(bytes) + " bytes on " + device().name());
    cudaMemoryType from = memoryTypeOf(source);
    if (isHostMemory(from) != isHostMemory(memoryTypeOf(destination)))
      hostCopied += static_cast<int64_t>(bytes);
    if (from == cudaMemoryTypeHost)
      synchronize();
  }

  void zero(void *data, size_t bytes) override {
    if (bytes > 0)
      check(cudaMemsetAsync(data, 0, bytes, stream), "cudaMemsetAsync");
  }

  void enqueueHost(std::function<void()> work) override {
    auto *queued = new std::function<void()>(std::move(work));
    cudaError_t error = cudaLaunchHostFunc(
        stream,
        [](void *data) {
          auto *run = static_cast<std::function<void()> *>(data);
          (*run)();
          delete run;
        },
        queued);
    if (error != cudaSuccess)
      delete queued;
    check(error, "cudaLaunchHostFunc");
  }

  void record(Event &event) override {
    check(cudaEventRecord(cudaEventOf(event, device()), stream),
          "cudaEventRecord");
  }

  void wait(Event &event) override {
    if (auto *cuda = dynamic_cast<CudaEvent *>(&event))
      check(cudaStreamWaitEvent(stream, cuda->handle(), 0),
            "cudaStreamWaitEvent");
    else
      event.synchronize(); // A host queue's event: reached when recorded.
  }

  void synchronize() override {
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }

private:
  cudaStream_t stream = nullptr;
  std::atomic<int64_t> &hostCopied;
};

/// Stream-ordered allocations from a pool of the device that keeps freed
/// memory (its release threshold is unlimited).
class CudaAllocator : public Allocator {
public:
  explicit CudaAllocator(Device &device) : owner(device) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device.deviceOrdinal();
    check(cudaMemPoolCreate(&pool, &props),
          "creating a memory pool on " + device.name());
    uint64_t keepAll = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
                                  &keepAll),
          "cudaMemPoolSetAttribute");
  }

  Device &device() override { return owner; }
  /// What cudaMalloc guarantees.
  size_t alignment() const override { return 256; }

  void *allocate(size_t bytes, Queue &queue) override {
    void *data = nullptr;
    if (cudaMallocFromPoolAsync(&data, bytes == 0 ? 1 : bytes, pool,
                                streamOf(queue)) != cudaSuccess) {
      // The caller reports it: leave no error for a later launch's check.
      cudaGetLastError();
      return nullptr;
    }
    return data;
  }

  void release(void *data, Queue &queue) override {
    cudaFreeAsync(data, streamOf(queue));
  }

private:
  Device &owner;
  cudaMemPool_t pool = nullptr;
};

class CudaDevice : public Device {
public:
  explicit CudaDevice(int ordinal)
      : Device(PP_DEVICE_CUDA, ordinal), memory(*this),
        queue(*this, cudaStreamDefault, hostCopied) {}

  Allocator &allocator() override { return memory; }
  Queue &defaultQueue() override { return queue; }
  std::unique_ptr<Queue> createQueue() override {
    check(cudaSetDevice(ordinal), "cudaSetDevice");
    return std::make_unique<CudaQueue>(*this, cudaStreamNonBlocking,
                                       hostCopied);
  }
  std::unique_ptr<Event> createEvent() override {
    check(cudaSetDevice(ordinal), "cudaSetDevice");
    return std::make_unique<CudaEvent>();
  }
  void makeCurrent() override {
    check(cudaSetDevice(ordinal), "cudaSetDevice");
  }
  int64_t hostCopiedBytes() const override { return hostCopied; }

private:
  /// Declared first: the queues count into it.
  std::atomic<int64_t> hostCopied{0};
  CudaAllocator memory;
  CudaQueue queue;
};

} // namespace

Device &cudaDevice(int ordinal) {
  check(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) +
                                    ")");
  static std::mutex mutex;
  // Never destroyed: the CUDA runtime may be torn down before static
  // destructors run.
  static auto *devices = new std::map<int, CudaDevice *>();
  std::lock_guard<std::mutex> lock(mutex);
  CudaDevice *&device = (*devices)[ordinal];
  if (!device)
    device = new CudaDevice(ordinal);
  return *device;
}

Device &currentCudaDevice() {
  int ordinal = 0;
  check(cudaGetDevice(&ordinal), "cudaGetDevice");
  return cudaDevice(ordinal);
}

} // namespace pp::runtime
