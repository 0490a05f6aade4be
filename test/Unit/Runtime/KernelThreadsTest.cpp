//===- KernelThreadsTest.cpp - host kernels on the thread pool ------------===//
//
// The host kernels split their elements, rows or lines into chunks that
// depend on the shapes only (ThreadPool.h, forEachChunk): the same bits at
// 1 thread and at several, and the chunks do run on several threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/ThreadPool.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// An f32 tensor of `shape` with values of both signs and many magnitudes.
Tensor values(const std::vector<int64_t> &shape, float seed) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, shape.size(), shape.data(), &tensor),
            PP_OK);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = std::sin(seed * static_cast<float>(i + 1)) *
              std::exp2(static_cast<float>(i * 7 % 13) - 6.0f);
  return Tensor(tensor);
}

/// An i64 tensor of `rows` labels, label(r) each.
Tensor labelsOf(int64_t rows, const std::function<int64_t(int64_t)> &label) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_I64, 1, &rows, &tensor), PP_OK);
  int64_t *y = static_cast<int64_t *>(pp_tensor_data(tensor));
  for (int64_t r = 0; r < rows; ++r)
    y[r] = label(r);
  return Tensor(tensor);
}

std::vector<uint8_t> bytesOf(pp_tensor *tensor) {
  const uint8_t *data = static_cast<const uint8_t *>(pp_tensor_data(tensor));
  return std::vector<uint8_t>(data, data + pp_tensor_nbytes(tensor));
}

/// The bytes of every tensor `run` returns, computed with `threads` threads.
std::vector<std::vector<uint8_t>>
runWithThreads(int threads,
               const std::function<std::vector<Tensor>(pp_frame &)> &run) {
  pp::runtime::setThreadCount(threads);
  pp_frame frame;
  std::vector<Tensor> results = run(frame);
  pp::runtime::setThreadCount(1);
  EXPECT_TRUE(frame.error.empty()) << frame.error;
  std::vector<std::vector<uint8_t>> bytes;
  for (Tensor &result : results)
    bytes.push_back(result ? bytesOf(result.get()) : std::vector<uint8_t>());
  return bytes;
}

/// Expects `run` to give the same bytes at 1 and at 3 threads.
void expectSameAtAnyThreadCount(
    const std::function<std::vector<Tensor>(pp_frame &)> &run) {
  EXPECT_EQ(runWithThreads(1, run), runWithThreads(3, run));
}

TEST(KernelThreads, ParallelForChunksByShapeOnSeveralThreads) {
  struct Record {
    std::mutex mutex;
    std::condition_variable entered;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    std::set<std::thread::id> threads;
    bool awaitSecondThread = false;
  };
  auto chunksAt = [](int threads) {
    pp::runtime::setThreadCount(threads);
    Record record;
    record.awaitSecondThread = threads > 1;
    pp_cpu_parallel_for(
        100, 1000,
        [](void *context, int64_t begin, int64_t end) {
          auto &record = *static_cast<Record *>(context);
          std::unique_lock<std::mutex> lock(record.mutex);
          record.chunks.emplace_back(begin, end);
          record.threads.insert(std::this_thread::get_id());
          record.entered.notify_all();
          // A chunk waits (a while at most) until another thread runs one:
          // the pool's workers take chunks however loaded the machine is.
          if (record.awaitSecondThread)
            record.entered.wait_for(lock, std::chrono::seconds(10),
                                    [&] { return record.threads.size() > 1; });
        },
        &record);
    pp::runtime::setThreadCount(1);
    std::sort(record.chunks.begin(), record.chunks.end());
    return std::make_pair(record.chunks, record.threads.size());
  };
  auto [oneThread, oneThreadCount] = chunksAt(1);
  auto [threeThreads, threeThreadCount] = chunksAt(3);
  // 100 items of 1000 elements in chunks of 16 (16384 elements at most).
  using Chunk = std::pair<int64_t, int64_t>;
  ASSERT_EQ(oneThread.size(), 7u);
  EXPECT_EQ(oneThread.front(), Chunk(0, 16));
  EXPECT_EQ(oneThread.back(), Chunk(96, 100));
  EXPECT_EQ(oneThread, threeThreads);
  EXPECT_EQ(oneThreadCount, 1u);
  EXPECT_GT(threeThreadCount, 1u);
}

TEST(KernelThreads, ElementwiseKernelsGiveTheSameBits) {
  Tensor x = values({70001}, 1.7f), y = values({70001}, 0.3f);
  expectSameAtAnyThreadCount([&](pp_frame &frame) {
    std::vector<Tensor> results;
    results.emplace_back(pp_cpu_add(&frame, x.get(), y.get()));
    results.emplace_back(pp_cpu_gelu_grad(&frame, x.get(), y.get(), 1));
    results.emplace_back(pp_cpu_gelu(&frame, y.get(), 0));
    return results;
  });
}

TEST(KernelThreads, RowKernelsGiveTheSameBits) {
  // 300 rows of 257 classes and 700 rows of 96: several chunks each.
  Tensor logits = values({300, 257}, 0.9f), grad = values({}, 0.5f);
  Tensor rows = values({700, 96}, 1.1f), rowGrad = values({700, 96}, 2.3f);
  Tensor weight = values({96}, 0.7f), bias = values({96}, 0.2f);
  Tensor labels = labelsOf(
      300, [](int64_t r) { return r % 11 == 0 ? -100 : (r * 37) % 257; });
  expectSameAtAnyThreadCount([&](pp_frame &frame) {
    std::vector<Tensor> results;
    results.emplace_back(pp_cpu_softmax(&frame, logits.get(), -1));
    // Along the first axis: 257 strided lines.
    results.emplace_back(pp_cpu_softmax(&frame, logits.get(), 0));
    results.emplace_back(pp_cpu_log_softmax(&frame, logits.get(), -1));
    results.emplace_back(
        pp_cpu_cross_entropy(&frame, logits.get(), labels.get(), -100, 0));
    results.emplace_back(
        pp_cpu_cross_entropy(&frame, logits.get(), labels.get(), -100, 2));
    results.emplace_back(pp_cpu_cross_entropy_grad(
        &frame, grad.get(), logits.get(), labels.get(), -100, 0));
    results.emplace_back(pp_cpu_layer_norm(&frame, rows.get(), weight.get(),
                                           bias.get(), -1, 1e-5));
    for (int64_t index = 0; index < 3; ++index)
      results.emplace_back(pp_cpu_layer_norm_grad(
          &frame, rowGrad.get(), rows.get(), weight.get(), -1, 1e-5, index));
    return results;
  });
}

TEST(KernelThreads, Bf16RowKernelsGiveTheSameBits) {
  // bf16 rows go through the readers and writers that convert each element.
  Tensor logits = values({300, 257}, 0.4f), grad = values({}, 0.5f);
  Tensor labels = labelsOf(300, [](int64_t r) { return (r * 13) % 257; });
  pp_frame castFrame;
  Tensor narrowLogits(pp_cpu_cast(&castFrame, logits.get(), PP_DTYPE_BF16));
  Tensor narrowGrad(pp_cpu_cast(&castFrame, grad.get(), PP_DTYPE_BF16));
  ASSERT_TRUE(castFrame.error.empty()) << castFrame.error;
  expectSameAtAnyThreadCount([&](pp_frame &frame) {
    std::vector<Tensor> results;
    results.emplace_back(pp_cpu_softmax(&frame, narrowLogits.get(), -1));
    results.emplace_back(pp_cpu_cross_entropy_grad(
        &frame, narrowGrad.get(), narrowLogits.get(), labels.get(), -100, 0));
    return results;
  });
}

} // namespace
