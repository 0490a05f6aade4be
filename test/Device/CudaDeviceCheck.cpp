//===- CudaDeviceCheck.cpp - the CUDA device of the device layer ----------===//
//
// Needs a GPU, so it is not part of the lit suites (CI has none): run
// build/test/Device/PPCudaDeviceCheck on a GPU machine. Checks GPU 0 as a
// device of runtime/device: buffers from its memory pool (aligned, reused
// in stream order), its queues (streams: copies, zeroing and host work in
// order; the bytes copied between host and GPU counted, no others), events
// between two queues and the host, tensors tagged with
// their device through the C ABI, and CUDA kernels on a frame's own queue
// (a non-blocking stream) giving the CPU kernels' bits. Prints one line per
// check and exits non-zero on any failure.
//
//===----------------------------------------------------------------------===//

#include "DeviceCheck.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/device/Allocator.h"
#include "runtime/device/Buffer.h"
#include "runtime/kernels/Frame.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

std::vector<float> ramp(size_t count, float start) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = start + 0.25f * static_cast<float>(i);
  return values;
}

} // namespace

int main() {
  Device &gpu = cudaDevice(0);
  Queue &queue = gpu.defaultQueue();

  expect("the device is cuda:0", [&]() -> std::string {
    if (gpu.deviceKind() != PP_DEVICE_CUDA || gpu.deviceOrdinal() != 0 ||
        gpu.name() != "cuda:0" || &currentCudaDevice() != &gpu)
      return "got " + gpu.name();
    if (!queue.nativeHandle())
      return "the default queue has no stream";
    return "";
  });

  expect("pool buffers are aligned and reused in stream order",
         [&]() -> std::string {
           void *first = nullptr;
           {
             Buffer buffer = Buffer::allocate(queue, 1 << 20);
             first = buffer.data();
             if (!buffer.owned() || &buffer.device() != &gpu)
               return "not an owned buffer of the GPU";
             if (reinterpret_cast<uintptr_t>(first) %
                     gpu.allocator().alignment() !=
                 0)
               return "misaligned";
           }
           Buffer again = Buffer::allocate(queue, 1 << 20);
           return again.data() == first ? "" : "the pool did not reuse it";
         });

  expect("a queue copies, zeroes and runs host work in order",
         [&]() -> std::string {
           std::vector<float> source = ramp(1000, 1.0f), back(1000, -1.0f);
           Buffer buffer = Buffer::allocate(queue, 4000);
           std::vector<int> order;
           queue.enqueueHost([&] { order.push_back(1); });
           queue.copy(buffer.data(), source.data(), 4000);
           queue.zero(buffer.data(), 400);
           queue.copy(back.data(), buffer.data(), 4000);
           queue.enqueueHost([&] { order.push_back(2); });
           queue.synchronize();
           std::vector<float> expected = source;
           std::fill(expected.begin(), expected.begin() + 100, 0.0f);
           if (back != expected)
             return "wrong bytes came back";
           return order == std::vector<int>{1, 2} ? "" : "host work reordered";
         });

  expect("the device counts the bytes its queues copy between host and GPU",
         [&]() -> std::string {
           std::vector<float> source = ramp(256, 2.0f), back(256);
           Buffer buffer = Buffer::allocate(queue, 1024),
                  other = Buffer::allocate(queue, 1024);
           int64_t before = gpu.hostCopiedBytes();
           queue.copy(buffer.data(), source.data(), 1024);  // host to GPU
           queue.copy(other.data(), buffer.data(), 512);    // GPU to GPU
           queue.copy(back.data(), other.data(), 256);      // GPU to host
           queue.copy(back.data() + 128, source.data(), 4); // host to host
           queue.synchronize();
           int64_t counted = gpu.hostCopiedBytes() - before;
           return counted == 1024 + 256
                      ? ""
                      : "counted " + std::to_string(counted) +
                            " bytes, expected 1280";
         });

  expect("events order two queues and the host", [&]() -> std::string {
    std::unique_ptr<Queue> producer = gpu.createQueue(),
                           consumer = gpu.createQueue();
    std::unique_ptr<Event> produced = gpu.createEvent();
    if (!produced->isDone())
      return "an event never recorded is not done";
    std::vector<float> source = ramp(1 << 20, 3.0f), back(1 << 20);
    Buffer buffer = Buffer::allocate(*producer, source.size() * 4);
    producer->copy(buffer.data(), source.data(), source.size() * 4);
    producer->record(*produced);
    consumer->wait(*produced);
    consumer->copy(back.data(), buffer.data(), source.size() * 4);
    consumer->synchronize();
    produced->synchronize();
    if (!produced->isDone())
      return "a synchronized event is not done";
    return back == source ? "" : "the consumer read before the producer";
  });

  expect("tensors carry the GPU through the C ABI", [&]() -> std::string {
    const int64_t shape[] = {3, 4};
    pp_tensor *tensor = nullptr;
    if (pp_tensor_create_in(pp_cuda_tensor_allocator(), PP_DTYPE_F32, 2, shape,
                            &tensor) != PP_OK)
      return pp_last_error();
    const pp_device *device = pp_tensor_device(tensor);
    bool tagged = device == &gpu &&
                  pp_device_get_kind(device) == PP_DEVICE_CUDA &&
                  pp_device_ordinal(device) == 0;
    pp_tensor_destroy(tensor);
    return tagged ? "" : "the tensor is not on cuda:0";
  });

  expect("kernels run on the frame's queue with the CPU's bits",
         [&]() -> std::string {
           std::unique_ptr<Queue> stream = gpu.createQueue();
           const int64_t shape[] = {64, 33};
           std::vector<float> lhs = ramp(64 * 33, -5.0f),
                              rhs = ramp(64 * 33, 2.0f);
           pp_tensor *hostLhs = nullptr, *hostRhs = nullptr;
           pp_tensor_borrow(lhs.data(), PP_DTYPE_F32, 2, shape, &hostLhs);
           pp_tensor_borrow(rhs.data(), PP_DTYPE_F32, 2, shape, &hostRhs);
           pp_frame frame, cpuFrame;
           frame.queue = stream.get();
           pp_tensor *deviceLhs = pp_cuda_empty(&frame, PP_DTYPE_F32, 2, shape);
           pp_tensor *deviceRhs = pp_cuda_empty(&frame, PP_DTYPE_F32, 2, shape);
           if (!deviceLhs || !deviceRhs)
             return frame.error;
           stream->copy(pp_tensor_data(deviceLhs), lhs.data(), lhs.size() * 4);
           stream->copy(pp_tensor_data(deviceRhs), rhs.data(), rhs.size() * 4);
           pp_tensor *sum = pp_cuda_add(&frame, deviceLhs, deviceRhs);
           pp_tensor *product =
               pp_cuda_matmul(&frame, sum, deviceRhs, 0, /*transpose_rhs=*/1);
           pp_tensor *cpuSum = pp_cpu_add(&cpuFrame, hostLhs, hostRhs);
           pp_tensor *cpuProduct =
               pp_cpu_matmul(&cpuFrame, cpuSum, hostRhs, 0, 1);
           if (!product || !cpuProduct)
             return frame.error + cpuFrame.error;
           std::vector<float> fetched(pp_tensor_numel(product));
           stream->copy(fetched.data(), pp_tensor_data(product),
                        fetched.size() * 4);
           stream->synchronize();
           std::string why;
           if (pp_tensor_device(product) != &gpu)
             why = "the result is not on cuda:0";
           const float *expected =
               static_cast<const float *>(pp_tensor_data(cpuProduct));
           for (size_t i = 0; i < fetched.size() && why.empty(); ++i)
             if (std::abs(fetched[i] - expected[i]) >
                 1e-4f * std::abs(expected[i]) + 1e-4f)
               why = "element " + std::to_string(i) + ": " +
                     std::to_string(fetched[i]) + " vs " +
                     std::to_string(expected[i]);
           for (pp_tensor *t : {deviceLhs, deviceRhs, sum, product})
             pp_frame_release(&frame, t);
           stream->synchronize();
           for (pp_tensor *t : {hostLhs, hostRhs, cpuSum, cpuProduct})
             pp_tensor_destroy(t);
           return why;
         });

  expect("a CUDA kernel refuses a host queue", [&]() -> std::string {
    pp_frame frame;
    frame.queue = &hostDevice().defaultQueue();
    const int64_t shape[] = {2};
    pp_tensor *tensor = pp_cuda_empty(&frame, PP_DTYPE_F32, 1, shape);
    if (tensor) {
      pp_tensor_destroy(tensor);
      return "it allocated";
    }
    return frame.error.find("cpu:0") != std::string::npos
               ? ""
               : "the error does not name the host: " + frame.error;
  });

  return failedChecks() == 0 ? 0 : 1;
}
