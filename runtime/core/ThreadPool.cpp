//===- ThreadPool.cpp - the runtime's deterministic parallel loops -------===//

#include "runtime/core/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

using namespace pp::runtime;

namespace {

/// True on a thread while it runs a chunk: a nested loop runs inline.
thread_local bool insideChunk = false;

/// One parallelFor in flight: chunks are claimed by an atomic counter.
struct Loop {
  const std::function<void(int64_t, int64_t)> *body;
  int64_t count, grain, chunks;
  std::atomic<int64_t> nextChunk{0};
  std::mutex errorMutex;
  std::exception_ptr error;

  /// Claims and runs chunks until none is left.
  void work() {
    insideChunk = true;
    for (int64_t chunk = nextChunk++; chunk < chunks; chunk = nextChunk++) {
      int64_t begin = chunk * grain;
      try {
        (*body)(begin, std::min(count, begin + grain));
      } catch (...) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (!error)
          error = std::current_exception();
      }
    }
    insideChunk = false;
  }
};

class ThreadPool {
public:
  ~ThreadPool() { resize(1); }

  void resize(int threads) {
    std::lock_guard<std::mutex> use(useMutex);
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    for (std::thread &worker : workers)
      worker.join();
    workers.clear();
    stopping = false;
    // New workers wait for the loop after the last one (useMutex keeps
    // loops out until they exist).
    uint64_t started = generation;
    try {
      for (int index = 1; index < threads; ++index)
        workers.emplace_back([this, started] { serve(started); });
    } catch (...) {
      // Loops run on the workers that did start.
      size = static_cast<int>(workers.size()) + 1;
      throw;
    }
    size = threads;
  }

  int threads() const { return size; }

  void run(int64_t count, int64_t grain,
           const std::function<void(int64_t, int64_t)> &body) {
    Loop loop;
    loop.body = &body;
    loop.count = count;
    loop.grain = grain;
    loop.chunks = (count + grain - 1) / grain;
    std::unique_lock<std::mutex> use(useMutex, std::try_to_lock);
    bool parallel = use.owns_lock() && !insideChunk && !workers.empty() &&
                    loop.chunks > 1;
    if (parallel) {
      std::lock_guard<std::mutex> lock(mutex);
      current = &loop;
      busyWorkers = static_cast<int>(workers.size());
      ++generation;
    }
    if (parallel)
      wake.notify_all();
    loop.work();
    if (parallel) {
      std::unique_lock<std::mutex> lock(mutex);
      done.wait(lock, [&] { return busyWorkers == 0; });
      current = nullptr;
    }
    if (loop.error)
      std::rethrow_exception(loop.error);
  }

private:
  /// A worker: waits for each loop after loop `seen`, works on it,
  /// reports that it is done with it.
  void serve(uint64_t seen) {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping)
        return;
      seen = generation;
      Loop *loop = current;
      lock.unlock();
      loop->work();
      lock.lock();
      if (--busyWorkers == 0)
        done.notify_one();
    }
  }

  /// Held by the loop that uses the workers, and by resize.
  std::mutex useMutex;
  /// Guards the fields below.
  std::mutex mutex;
  std::condition_variable wake, done;
  std::vector<std::thread> workers;
  Loop *current = nullptr;
  uint64_t generation = 0;
  int busyWorkers = 0;
  bool stopping = false;
  std::atomic<int> size{1};
};

ThreadPool &pool() {
  static ThreadPool instance;
  return instance;
}

} // namespace

void pp::runtime::setThreadCount(int threads) {
  pool().resize(std::max(threads, 1));
}

int pp::runtime::threadCount() { return pool().threads(); }

void pp::runtime::parallelFor(
    int64_t count, int64_t grain,
    const std::function<void(int64_t begin, int64_t end)> &body) {
  if (count > 0)
    pool().run(count, std::max<int64_t>(grain, 1), body);
}
