//===- ThreadPool.h - the runtime's deterministic parallel loops -*- C++ -*-===//
//
// One process-wide pool of worker threads (pp_set_threads) behind
// parallelFor. Its chunking is a function of the loop's size and grain only,
// never of the thread count, so a kernel whose chunks each compute their own
// outputs gives the same bits at 1 thread and at N: threads decide which
// chunk runs where, never what a chunk computes.
//
// How a kernel uses it (GEMM panels do; elementwise and reduction kernels
// may):
//
//   parallelFor(rows, /*grain=*/64, [&](int64_t begin, int64_t end) {
//     for (int64_t row = begin; row < end; ++row)
//       out[row] = f(in[row]);
//   });
//
// Each chunk must write outputs no other chunk writes and must not depend on
// the order in which chunks run; a reduction across chunks must combine
// per-chunk partial results afterwards in chunk order, on the caller.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_THREADPOOL_H
#define PP_RUNTIME_THREADPOOL_H

#include <cstdint>
#include <functional>

namespace pp::runtime {

/// Sets how many threads parallelFor uses: the calling thread plus
/// `threads - 1` workers (values below 1 mean 1). Waits for a running loop.
/// Throws std::system_error when the system cannot start a worker; the
/// loops then run on those that started.
void setThreadCount(int threads);

/// The threads parallelFor uses (1 until setThreadCount).
int threadCount();

/// Runs `body(begin, end)` once for each chunk of [0, count): chunk i is
/// [i * grain, min(count, (i + 1) * grain)) (a grain below 1 means 1). The
/// chunks run on the pool's threads in any order and at once; the call
/// returns when all have finished and rethrows the first exception a chunk
/// threw (the other chunks still run). Runs every chunk on the calling
/// thread when the pool has 1 thread, when another thread's loop holds the
/// pool, or when called from inside a chunk.
void parallelFor(int64_t count, int64_t grain,
                 const std::function<void(int64_t begin, int64_t end)> &body);

} // namespace pp::runtime

#endif // PP_RUNTIME_THREADPOOL_H
