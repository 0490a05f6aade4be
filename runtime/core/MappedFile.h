//===- MappedFile.h - a regular file mapped read-only, guarded --*- C++ -*-===//
//
// Datasets, checkpoints and pretrained weights are read through read-only
// mappings. A mapped file that another program truncates meanwhile makes a
// read of a page it no longer has raise SIGBUS, which would kill a rank
// without a word. A MappedFile registers its range with a SIGBUS handler
// (installed with the first mapping) that names the file and the byte read
// before the process ends (exit status 1), through the reporter a tool
// sets (pp-run: its report to the launcher); any other SIGBUS keeps its
// default action.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_MAPPEDFILE_H
#define PP_RUNTIME_MAPPEDFILE_H

#include <cstddef>
#include <string>

namespace pp::runtime {

/// A read-only mapping of a whole regular file. Move-only; unmaps when
/// destroyed.
class MappedFile {
public:
  MappedFile() = default;
  /// Maps the `size` bytes of the regular file open at `fd`, named `path`
  /// (`what` in messages: "the token dataset"). Throws std::runtime_error
  /// when it cannot.
  MappedFile(int fd, size_t size, const std::string &path,
             const std::string &what);
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  const unsigned char *data() const {
    return static_cast<const unsigned char *>(mapping);
  }
  size_t size() const { return bytes; }

private:
  void unmap();

  void *mapping = nullptr;
  size_t bytes = 0;
};

/// Writes a message from the SIGBUS handler: only async-signal-safe calls.
using TruncationReporter = void (*)(const char *message, size_t length);
/// Where the handler's message about a truncated file goes; by default
/// stderr, prefixed "pp: error: ".
void setTruncationReporter(TruncationReporter reporter);

} // namespace pp::runtime

#endif // PP_RUNTIME_MAPPEDFILE_H
