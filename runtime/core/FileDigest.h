//===- FileDigest.h - a file's recorded size and SHA-256 --------*- C++ -*-===//
//
// pp records the size and SHA-256 of every file it will read back (a
// package's files in its manifest, a stage library built on first use in
// the cache) and checks the open file against them before using it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CORE_FILEDIGEST_H
#define PP_RUNTIME_CORE_FILEDIGEST_H

#include "runtime/core/InputFile.h"

#include <cstdint>
#include <optional>
#include <string>

namespace pp::runtime {

/// A file's size and SHA-256, as recorded when it was written.
struct FileDigest {
  uint64_t bytes = 0;
  /// 64 lowercase hex digits.
  std::string sha256;
};

/// The size and SHA-256 of the open `file`, read whole; nullopt with
/// `problem` set when it cannot be read.
std::optional<FileDigest> digestOf(const InputFile &file, std::string &problem);

/// Why the open `file`, named `fileName`, does not have the size and
/// SHA-256 `recordedIn` (a file name, for messages) records as `expected`
/// ("libstages.so has 100 bytes, but manifest.json records 15656"), or "".
std::string digestProblem(const std::string &fileName, const InputFile &file,
                          const FileDigest &expected,
                          const std::string &recordedIn);

} // namespace pp::runtime

#endif // PP_RUNTIME_CORE_FILEDIGEST_H
