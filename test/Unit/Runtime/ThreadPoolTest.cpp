//===- ThreadPoolTest.cpp - parallelFor's chunks and failures ---*- C++ -*-===//

#include "runtime/core/ThreadPool.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

using namespace pp::runtime;

namespace {

/// The chunks parallelFor hands out at `threads` threads.
std::set<std::pair<int64_t, int64_t>> chunksAt(int threads, int64_t count,
                                               int64_t grain) {
  setThreadCount(threads);
  std::mutex mutex;
  std::set<std::pair<int64_t, int64_t>> chunks;
  parallelFor(count, grain, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_TRUE(chunks.emplace(begin, end).second) << begin << ".." << end;
  });
  setThreadCount(1);
  return chunks;
}

TEST(ThreadPool, ChunksDependOnCountAndGrainOnly) {
  std::set<std::pair<int64_t, int64_t>> expected = {{0, 4}, {4, 8}, {8, 10}};
  for (int threads : {1, 2, 3, 8})
    EXPECT_EQ(chunksAt(threads, 10, 4), expected) << threads << " threads";
  EXPECT_EQ(chunksAt(2, 3, 0), (std::set<std::pair<int64_t, int64_t>>{
                                   {0, 1}, {1, 2}, {2, 3}}));
  EXPECT_TRUE(chunksAt(2, 0, 4).empty());
}

TEST(ThreadPool, NestedLoopsRunInline) {
  setThreadCount(2);
  std::mutex mutex;
  int64_t cells = 0;
  parallelFor(4, 1, [&](int64_t, int64_t) {
    parallelFor(5, 2, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mutex);
      cells += end - begin;
    });
  });
  setThreadCount(1);
  EXPECT_EQ(cells, 20);
  EXPECT_EQ(threadCount(), 1);
}

TEST(ThreadPool, RethrowsAChunksExceptionAfterAllChunksRan) {
  setThreadCount(2);
  std::mutex mutex;
  int64_t ran = 0;
  EXPECT_THROW(parallelFor(8, 1,
                           [&](int64_t begin, int64_t) {
                             {
                               std::lock_guard<std::mutex> lock(mutex);
                               ++ran;
                             }
                             if (begin == 3)
                               throw std::runtime_error("chunk 3");
                           }),
               std::runtime_error);
  setThreadCount(1);
  EXPECT_EQ(ran, 8);
}

} // namespace
