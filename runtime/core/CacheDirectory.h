//===- CacheDirectory.h - where pp keeps what it builds ---------*- C++ -*-===//
//
// pp keeps compiled models, stage libraries built on first use, machine
// rates and GEMM engine choices in one cache directory, this user's alone
// (TrustedFiles.h).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CORE_CACHEDIRECTORY_H
#define PP_RUNTIME_CORE_CACHEDIRECTORY_H

#include <string>

namespace pp::runtime {

/// The cache directory: `cacheDir` (pp-run --cache-dir) unless empty, else
/// $PP_CACHE_DIR, else ~/.cache/pp.
std::string cacheRoot(const std::string &cacheDir);

} // namespace pp::runtime

#endif // PP_RUNTIME_CORE_CACHEDIRECTORY_H
