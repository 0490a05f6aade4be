//===- HostCache.cpp - reusing host memory for kernel results -------------===//
//
// Kernels allocate a result for every op of every microbatch. Reusing freed
// buffers of the same size (per thread) avoids zero-filling them and the
// page faults of fresh large allocations. The cache keeps at most
// kMaxCachedBytes per thread and frees what does not fit. A buffer freed on
// another thread than the one that made it goes to that thread's cache.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/HostCache.h"

#include "runtime/pp_runtime.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <vector>

using namespace pp::runtime;

namespace {

constexpr size_t kMaxCachedBytes = size_t(1) << 31;

/// This thread's freed buffers by padded size. A buffer's padded size lies
/// in the kHostAlignment bytes before it, so that any thread can take back
/// a buffer any thread handed out.
struct Cache {
  std::unordered_map<size_t, std::vector<void *>> free;
  size_t cachedBytes = 0;

  ~Cache() {
    for (auto &[size, buffers] : free)
      for (void *buffer : buffers)
        std::free(startOf(buffer));
  }

  /// Where the allocation holding `buffer` (and its size) starts.
  static void *startOf(void *buffer) {
    return static_cast<char *>(buffer) - kHostAlignment;
  }
};

Cache &threadCache() {
  thread_local Cache cache;
  return cache;
}

size_t padded(size_t bytes) {
  size_t size = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  return size == 0 ? kHostAlignment : size;
}

} // namespace

void *pp::runtime::allocateCachedHost(size_t bytes) {
  Cache &cache = threadCache();
  size_t size = padded(bytes);
  auto it = cache.free.find(size);
  if (it != cache.free.end() && !it->second.empty()) {
    void *buffer = it->second.back();
    it->second.pop_back();
    cache.cachedBytes -= size;
    return buffer;
  }
  if (size > std::numeric_limits<size_t>::max() - kHostAlignment)
    return nullptr;
  void *start = std::aligned_alloc(kHostAlignment, size + kHostAlignment);
  if (!start)
    return nullptr;
  std::memcpy(start, &size, sizeof(size));
  return static_cast<char *>(start) + kHostAlignment;
}

void pp::runtime::releaseCachedHost(void *buffer) {
  if (!buffer)
    return;
  Cache &cache = threadCache();
  size_t size = 0;
  std::memcpy(&size, Cache::startOf(buffer), sizeof(size));
  if (cache.cachedBytes + size > kMaxCachedBytes) {
    std::free(Cache::startOf(buffer));
    return;
  }
  cache.free[size].push_back(buffer);
  cache.cachedBytes += size;
}

namespace {

void *allocateCached(const pp_allocator *, size_t bytes) {
  return allocateCachedHost(bytes);
}

void releaseCached(const pp_allocator *, void *buffer) {
  releaseCachedHost(buffer);
}

const pp_allocator cachedHostAllocator = {allocateCached, releaseCached,
                                          nullptr, nullptr};

} // namespace

extern "C" const pp_allocator *pp_host_cache_allocator(void) {
  return &cachedHostAllocator;
}
