//===- HostCache.cpp - reusing host memory for kernel results -------------===//
//
// Kernels allocate a result for every op of every microbatch. Reusing freed
// buffers of the same size (per thread) avoids zero-filling them and the
// page faults of fresh large allocations. The cache keeps at most
// kMaxCachedBytes per thread and frees what does not fit.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/HostCache.h"

#include "runtime/pp_runtime.h"

#include <cstdlib>
#include <unordered_map>
#include <vector>

using namespace pp::runtime;

namespace {

constexpr size_t kMaxCachedBytes = size_t(1) << 31;

/// This thread's freed buffers by padded size, and the padded size of each
/// buffer it handed out.
struct Cache {
  std::unordered_map<size_t, std::vector<void *>> free;
  std::unordered_map<void *, size_t> sizes;
  size_t cachedBytes = 0;

  ~Cache() {
    for (auto &[size, buffers] : free)
      for (void *buffer : buffers)
        std::free(buffer);
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
    cache.sizes[buffer] = size;
    return buffer;
  }
  void *buffer = std::aligned_alloc(kHostAlignment, size);
  if (buffer)
    cache.sizes[buffer] = size;
  return buffer;
}

void pp::runtime::releaseCachedHost(void *buffer) {
  Cache &cache = threadCache();
  auto it = cache.sizes.find(buffer);
  if (it == cache.sizes.end()) {
    // Allocated by another thread's cache: plain memory all the same.
    std::free(buffer);
    return;
  }
  size_t size = it->second;
  cache.sizes.erase(it);
  if (cache.cachedBytes + size > kMaxCachedBytes) {
    std::free(buffer);
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
