//===- InputFile.h - the one way pp opens a file it reads -------*- C++ -*-===//
//
// Every file pp reads from a user (models, manifests, parameter and
// safetensors files, datasets, schedule files, tokenizers, caches) is
// opened through InputFile: only a regular file is read, so that a FIFO
// never blocks a rank past its timeout and a device (/dev/zero) is never
// read without bound; its size is taken once, at open, and bounds what is
// read.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_INPUTFILE_H
#define PP_RUNTIME_INPUTFILE_H

#include "runtime/core/FileDescriptor.h"

#include <cstdint>
#include <string>
#include <utility>

namespace pp::runtime {

/// A regular file open for reading.
class InputFile {
public:
  /// Opens `path`, which `what` describes in messages ("the schedule
  /// file"), without waiting on a FIFO. Throws std::runtime_error when it
  /// cannot be opened or is not a regular file ("cannot read the schedule
  /// file '/dev/zero': it is a character device, and pp reads only regular
  /// files").
  static InputFile open(const std::string &path, const std::string &what);

  int fd() const { return descriptor.get(); }
  /// The size at open.
  uint64_t size() const { return bytes; }
  /// Reads `size` bytes at `offset` into `data`; false when reading fails
  /// (errno set) or the file ends first (errno 0).
  bool readAt(void *data, uint64_t size, uint64_t offset) const;
  /// Reads the whole file: size() bytes. Throws std::runtime_error when
  /// reading fails or the file shrank meanwhile.
  std::string readAll() const;

private:
  InputFile(FileDescriptor descriptor, uint64_t bytes, std::string path,
            std::string what)
      : descriptor(std::move(descriptor)), bytes(bytes), path(std::move(path)),
        what(std::move(what)) {}

  FileDescriptor descriptor;
  uint64_t bytes;
  std::string path, what;
};

/// InputFile::open(path, what).readAll().
std::string readInputFile(const std::string &path, const std::string &what);

/// Why `path` cannot be read as `what` (missing, unreadable, not a regular
/// file: the message InputFile::open throws), or "".
std::string inputFileProblem(const std::string &path, const std::string &what);

} // namespace pp::runtime

#endif // PP_RUNTIME_INPUTFILE_H
