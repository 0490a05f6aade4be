//===- FuzzSupport.h - what the fuzz targets share --------------*- C++ -*-===//
//
// Every target in test/Fuzz defines LLVMFuzzerTestOneInput: it feeds one
// input to a reader of outside files and returns 0. A reader may reject the
// input with an error (an exception or diagnostics, as it would for a user);
// anything else (a crash, a sanitizer report, an escaping exception, a
// broken invariant the target checks) is a bug.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TEST_FUZZ_FUZZSUPPORT_H
#define PP_TEST_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace pp::fuzz {

/// A private temporary directory for the files a reader takes, removed
/// with everything in it when the process ends normally.
class ScratchDirectory {
public:
  ScratchDirectory();
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory &) = delete;
  ScratchDirectory &operator=(const ScratchDirectory &) = delete;

  const std::string &path() const { return directory; }
  /// Replaces the file `name` in the directory with `size` bytes from
  /// `data`; returns its path.
  std::string write(const std::string &name, const void *data,
                    size_t size) const;

private:
  std::string directory;
};

/// Reports a broken invariant of the code under test and aborts, so that
/// libFuzzer keeps the input as a crash.
[[noreturn]] void fail(const std::string &message);

} // namespace pp::fuzz

#endif // PP_TEST_FUZZ_FUZZSUPPORT_H
