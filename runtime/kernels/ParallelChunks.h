//===- ParallelChunks.h - kernel loops in chunks on the pool ---*- C++ -*-===//
//
// The host kernels hand their elements, rows or lines to the runtime's
// thread pool (ThreadPool.h) in chunks of about kElementGrain elements,
// the chunks a function of the shape only, so that each item computed alone
// gives the same bits at any thread count.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_PARALLELCHUNKS_H
#define PP_RUNTIME_KERNELS_PARALLELCHUNKS_H

#include "runtime/core/ThreadPool.h"

#include <algorithm>
#include <cstdint>

namespace pp::runtime::cpu {

/// The elements of a chunk of an elementwise loop on the thread pool
/// (ThreadPool.h): enough that a chunk's work outweighs handing it to a
/// thread.
constexpr int64_t kElementGrain = 16384;

/// Runs `body(begin, end)` over [0, count) items of `itemSize` elements
/// each, in chunks of about kElementGrain elements on the thread pool. Each
/// item must be computed alone (its own outputs, in an order of its own),
/// so that the bits do not depend on the thread count.
template <typename Body>
void forEachChunk(int64_t count, int64_t itemSize, Body body) {
  int64_t grain =
      std::max<int64_t>(1, kElementGrain / std::max<int64_t>(itemSize, 1));
  if (count <= grain)
    return body(0, count);
  parallelFor(count, grain, body);
}

} // namespace pp::runtime::cpu

#endif // PP_RUNTIME_KERNELS_PARALLELCHUNKS_H
