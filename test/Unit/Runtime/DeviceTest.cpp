//===- DeviceTest.cpp - the host device of the device layer ---------------===//

#include "runtime/device/Allocator.h"
#include "runtime/device/Buffer.h"
#include "runtime/device/Device.h"
#include "runtime/device/Queue.h"
#include "runtime/kernels/Frame.h"
#include "runtime/training/Backend.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace pp::runtime;

namespace {

bool aligned(const void *data, size_t alignment) {
  return reinterpret_cast<uintptr_t>(data) % alignment == 0;
}

TEST(DeviceTest, TheHostIsCpuZeroThroughBothInterfaces) {
  Device &host = hostDevice();
  EXPECT_EQ(host.deviceKind(), PP_DEVICE_CPU);
  EXPECT_EQ(host.deviceOrdinal(), 0);
  EXPECT_EQ(host.name(), "cpu:0");
  EXPECT_EQ(pp_host_device(), &host);
  EXPECT_EQ(pp_device_get_kind(pp_host_device()), PP_DEVICE_CPU);
  EXPECT_EQ(pp_device_ordinal(pp_host_device()), 0);
  EXPECT_STREQ(pp_device_kind_name(PP_DEVICE_CPU), "cpu");
  EXPECT_STREQ(pp_device_kind_name(PP_DEVICE_CUDA), "cuda");
  EXPECT_STREQ(pp_device_kind_name(static_cast<pp_device_kind>(7)),
               "unknown");
  EXPECT_EQ(&host.allocator().device(), &host);
  EXPECT_EQ(&host.defaultQueue().device(), &host);
  EXPECT_EQ(host.defaultQueue().nativeHandle(), nullptr);
}

TEST(DeviceTest, AnOwnedBufferIsAlignedOnItsDevice) {
  Queue &queue = hostDevice().defaultQueue();
  for (size_t bytes : {size_t(0), size_t(1), size_t(100), size_t(4096)}) {
    Buffer buffer = Buffer::allocate(queue, bytes);
    EXPECT_TRUE(buffer.owned());
    EXPECT_EQ(buffer.size(), bytes);
    EXPECT_EQ(&buffer.device(), &hostDevice());
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_TRUE(aligned(buffer.data(), hostDevice().allocator().alignment()));
    std::memset(buffer.data(), 0xab, bytes);
  }
  EXPECT_EQ(hostDevice().allocator().alignment(), 64u);
}

TEST(DeviceTest, ABorrowedBufferLeavesItsMemoryAlone) {
  std::vector<float> values = {1, 2, 3};
  {
    Buffer buffer = Buffer::borrow(hostDevice(), values.data(),
                                   values.size() * sizeof(float));
    EXPECT_FALSE(buffer.owned());
    EXPECT_EQ(buffer.data(), values.data());
    EXPECT_EQ(buffer.size(), 12u);
  }
  EXPECT_EQ(values, (std::vector<float>{1, 2, 3}));
}

TEST(DeviceTest, AMovedBufferHandsOverItsMemory) {
  Queue &queue = hostDevice().defaultQueue();
  Buffer first = Buffer::allocate(queue, 256);
  void *data = first.data();
  Buffer second = std::move(first);
  EXPECT_EQ(second.data(), data);
  EXPECT_TRUE(second.owned());
  EXPECT_FALSE(first.owned());
  EXPECT_EQ(first.data(), nullptr);
  Buffer third = Buffer::allocate(queue, 64);
  third = std::move(second);
  EXPECT_EQ(third.data(), data);
}

TEST(DeviceTest, TheHostAllocatorReusesWhatTheThreadFreed) {
  Allocator &allocator = hostDevice().allocator();
  Queue &queue = hostDevice().defaultQueue();
  void *first = allocator.allocate(1000, queue);
  ASSERT_NE(first, nullptr);
  allocator.release(first, queue);
  // Same padded size (1024 bytes): the cached buffer comes back.
  void *second = allocator.allocate(1010, queue);
  EXPECT_EQ(second, first);
  allocator.release(second, queue);
}

TEST(DeviceTest, AHostBufferFreedOnAnotherThreadIsReusedThereAtItsSize) {
  Allocator &allocator = hostDevice().allocator();
  Queue &queue = hostDevice().defaultQueue();
  void *large = allocator.allocate(4096, queue);
  ASSERT_NE(large, nullptr);
  void *reused = nullptr, *small = nullptr;
  std::thread other([&] {
    allocator.release(large, queue);
    // This thread's cache files it under its own padded size, 4096 bytes,
    // and hands it out for that size only.
    small = allocator.allocate(64, queue);
    reused = allocator.allocate(4090, queue);
    std::memset(reused, 1, 4090);
    allocator.release(small, queue);
    allocator.release(reused, queue);
  });
  other.join();
  EXPECT_EQ(reused, large);
  EXPECT_NE(small, large);
}

TEST(DeviceTest, AHostQueueRunsItsWorkInOrder) {
  Queue &queue = hostDevice().defaultQueue();
  std::vector<int> order;
  std::vector<float> source = {1, 2, 3, 4}, destination(4, -1.0f);
  queue.enqueueHost([&] { order.push_back(1); });
  queue.copy(destination.data(), source.data(), 4 * sizeof(float));
  queue.enqueueHost([&] {
    order.push_back(destination[3] == 4.0f ? 2 : -2);
  });
  queue.zero(destination.data(), 2 * sizeof(float));
  queue.enqueueHost([&] { order.push_back(3); });
  queue.synchronize();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(destination, (std::vector<float>{0, 0, 3, 4}));
}

TEST(DeviceTest, AQueueWaitsForAnEventOfAnother) {
  Device &host = hostDevice();
  std::unique_ptr<Queue> producer = host.createQueue(),
                         consumer = host.createQueue();
  std::unique_ptr<Event> produced = host.createEvent();
  EXPECT_TRUE(produced->isDone()); // Never recorded.
  int value = 0;
  producer->enqueueHost([&] { value = 42; });
  producer->record(*produced);
  consumer->wait(*produced);
  int seen = 0;
  consumer->enqueueHost([&] { seen = value; });
  produced->synchronize();
  EXPECT_TRUE(produced->isDone());
  consumer->synchronize();
  EXPECT_EQ(seen, 42);
}

TEST(DeviceTest, TensorsKnowTheirDeviceThroughTheCAbi) {
  const int64_t shape[] = {2, 3};
  pp_tensor *created = nullptr, *cached = nullptr, *borrowed = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_F32, 2, shape, &created), PP_OK);
  EXPECT_EQ(pp_tensor_device(created), pp_host_device());
  ASSERT_EQ(pp_tensor_create_in(pp_host_cache_allocator(), PP_DTYPE_F32, 2,
                                shape, &cached),
            PP_OK);
  EXPECT_EQ(pp_tensor_device(cached), pp_host_device());
  float values[6] = {};
  ASSERT_EQ(pp_tensor_borrow(values, PP_DTYPE_F32, 2, shape, &borrowed),
            PP_OK);
  EXPECT_EQ(pp_tensor_device(borrowed), pp_host_device());
  EXPECT_EQ(pp_device_get_kind(pp_tensor_device(borrowed)), PP_DEVICE_CPU);
  for (pp_tensor *tensor : {created, cached, borrowed})
    pp_tensor_destroy(tensor);
}

TEST(DeviceTest, AQueueAllocatesTensorsOnItsDevice) {
  Queue &queue = hostDevice().defaultQueue();
  const int64_t shape[] = {5};
  pp_tensor *tensor = nullptr;
  ASSERT_EQ(pp_tensor_create_in(&queue.tensorAllocator(), PP_DTYPE_F64, 1,
                                shape, &tensor),
            PP_OK);
  EXPECT_EQ(pp_tensor_device(tensor), &hostDevice());
  EXPECT_TRUE(aligned(pp_tensor_data(tensor), 64));
  EXPECT_EQ(pp_tensor_nbytes(tensor), 40u);
  pp_tensor_destroy(tensor);
}

/// An allocator of host memory that says it is GPU 3's: tensors take the
/// device their allocator names.
void *allocateTagged(const pp_allocator *self, size_t bytes) {
  ++*static_cast<int *>(self->context);
  return ::operator new(bytes == 0 ? 1 : bytes);
}

void releaseTagged(const pp_allocator *self, void *data) {
  --*static_cast<int *>(self->context);
  ::operator delete(data);
}

TEST(DeviceTest, ATensorRecordsItsAllocatorsDevice) {
  const pp_device gpu3 = {PP_DEVICE_CUDA, 3};
  int live = 0;
  const pp_allocator tagged = {allocateTagged, releaseTagged, &gpu3, &live};
  const int64_t shape[] = {4};
  pp_tensor *tensor = nullptr;
  ASSERT_EQ(pp_tensor_create_in(&tagged, PP_DTYPE_I32, 1, shape, &tensor),
            PP_OK);
  EXPECT_EQ(live, 1);
  EXPECT_EQ(pp_tensor_device(tensor), &gpu3);
  EXPECT_EQ(pp_device_get_kind(pp_tensor_device(tensor)), PP_DEVICE_CUDA);
  EXPECT_EQ(pp_device_ordinal(pp_tensor_device(tensor)), 3);
  pp_tensor *view = nullptr;
  ASSERT_EQ(pp_tensor_borrow_on(&gpu3, pp_tensor_data(tensor), PP_DTYPE_I32,
                                1, shape, &view),
            PP_OK);
  EXPECT_EQ(pp_tensor_device(view), &gpu3);
  pp_tensor_destroy(view);
  EXPECT_EQ(live, 1); // A view frees nothing.
  pp_tensor_destroy(tensor);
  EXPECT_EQ(live, 0);
}

TEST(DeviceTest, TensorCreationNamesAMissingAllocatorOrDevice) {
  const int64_t shape[] = {1};
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create_in(nullptr, PP_DTYPE_F32, 1, shape, &tensor),
            PP_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pp_last_error()).find("allocator is NULL"),
            std::string::npos);
  float value = 0;
  EXPECT_EQ(pp_tensor_borrow_on(nullptr, &value, PP_DTYPE_F32, 1, shape,
                                &tensor),
            PP_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pp_last_error()).find("device pointer is NULL"),
            std::string::npos);
}

TEST(DeviceTest, AFrameAllocatesInItsQueuesOrderOnItsDevice) {
  pp_frame configured;
  configured.queue = &hostDevice().defaultQueue();
  EXPECT_EQ(pp_frame_device(&configured), pp_host_device());
  EXPECT_EQ(pp_frame_queue_handle(&configured), nullptr);
  pp_tensor *first = newTensor(&configured, PP_DTYPE_F32, {300});
  ASSERT_NE(first, nullptr) << configured.error;
  void *data = pp_tensor_data(first);
  EXPECT_EQ(pp_tensor_device(first), pp_host_device());
  pp_frame_release(&configured, first);
  // The queue's allocator is the host cache: the freed buffer comes back.
  pp_tensor *second = newTensor(&configured, PP_DTYPE_F32, {300});
  EXPECT_EQ(pp_tensor_data(second), data);
  pp_frame_release(&configured, second);

  pp_frame bare; // No backend configured it: zero-filled host memory.
  EXPECT_EQ(pp_frame_device(&bare), pp_host_device());
  pp_tensor *zeroed = newTensor(&bare, PP_DTYPE_F32, {300});
  ASSERT_NE(zeroed, nullptr);
  const float *values = static_cast<const float *>(pp_tensor_data(zeroed));
  for (int i = 0; i < 300; ++i)
    ASSERT_EQ(values[i], 0.0f);
  pp_frame_release(&bare, zeroed);
}

TEST(DeviceTest, TheCpuBackendWorksOnTheHostsQueue) {
  Communicator world(RendezvousInfo{});
  std::unique_ptr<Backend> backend = createCpuBackend(world);
  pp_frame frame;
  backend->configure(frame, 0, 0);
  EXPECT_EQ(frame.queue, &hostDevice().defaultQueue());
  EXPECT_EQ(pp_frame_device(&frame), pp_host_device());

  const int64_t shape[] = {3};
  std::vector<float> hostValues = {1, 2, 3}, otherValues = {10, 20, 30};
  pp_tensor *host = nullptr, *other = nullptr;
  ASSERT_EQ(pp_tensor_borrow(hostValues.data(), PP_DTYPE_F32, 1, shape, &host),
            PP_OK);
  ASSERT_EQ(
      pp_tensor_borrow(otherValues.data(), PP_DTYPE_F32, 1, shape, &other),
      PP_OK);
  TensorPtr copy;
  EXPECT_EQ(backend->place(host, copy), host); // The host is where it runs.
  EXPECT_FALSE(copy);
  // The training state lives on the host's queue too.
  StateDevice state = backend->stateDevice();
  EXPECT_EQ(&state.queue, &hostDevice().defaultQueue());
  state.kernels.accumulate(state.queue, hostValues.data(), otherValues.data(),
                           3);
  EXPECT_EQ(hostValues, (std::vector<float>{11, 22, 33}));
  backend->fetch(other, host);
  EXPECT_EQ(hostValues, otherValues);
  pp_tensor_destroy(host);
  pp_tensor_destroy(other);
}

} // namespace
