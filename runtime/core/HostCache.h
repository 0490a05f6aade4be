//===- HostCache.h - reusing host memory for kernel results -----*- C++ -*-===//

#ifndef PP_RUNTIME_CORE_HOSTCACHE_H
#define PP_RUNTIME_CORE_HOSTCACHE_H

#include <cstddef>

namespace pp::runtime {

/// The alignment of host tensors' memory, in bytes.
constexpr size_t kHostAlignment = 64;

/// Uninitialized, kHostAlignment-aligned host memory, reused from the
/// buffers of the same padded size the calling thread freed; null when out
/// of memory.
void *allocateCachedHost(size_t bytes);

/// Frees memory from allocateCachedHost into the calling thread's cache.
void releaseCachedHost(void *data);

} // namespace pp::runtime

#endif // PP_RUNTIME_CORE_HOSTCACHE_H
