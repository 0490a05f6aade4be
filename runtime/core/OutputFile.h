//===- OutputFile.h - the one way pp writes an output file ------*- C++ -*-===//
//
// Every file pp writes for a user (pp-data pack -o, --export-onnx,
// --save-weights, --save-params, --metrics, --trace, --profile, --svg,
// package files, cache entries) goes through OutputFile, which never
// replaces what is not a regular file:
//   - a new path or a regular file is written to a temporary file in the
//     same folder, fsync'd and renamed over the path (AtCommit), so that a
//     crash leaves the old file or the whole new one; or written in place
//     (WhileWritten), for an output a user follows as it grows (--metrics);
//   - a symbolic link is followed: its target is what is replaced;
//   - a character device (/dev/null, a terminal) or a FIFO is written
//     through, never renamed over (a FIFO must have a reader);
//   - a directory, socket or block device is refused.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_OUTPUTFILE_H
#define PP_RUNTIME_OUTPUTFILE_H

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pp::runtime {

/// `size` bytes at `data`: one piece of a file.
struct FilePiece {
  const void *data;
  size_t size;
};

/// An output file being written. Throws std::runtime_error naming the path,
/// the step that failed and why ("cannot write '/dev/full': No space left
/// on device", "cannot write --metrics 'm.jsonl': Is a directory; ..."); a
/// temporary file is removed on every failure and when the
/// OutputFile is destroyed without commit().
class OutputFile {
public:
  enum class Visibility {
    /// Readers see the old file until commit(), then the whole new one.
    AtCommit,
    /// Readers see the file grow as it is written (truncated on open).
    WhileWritten,
  };

  /// Opens `path` for writing; `what` names it in messages ("--metrics",
  /// "the token dataset"). `mode` is the permission bits a new file gets
  /// (less the umask).
  OutputFile(const std::string &path, Visibility visibility,
             const std::string &what = "", unsigned mode = 0666);
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;
  ~OutputFile();

  void write(const void *data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  /// Makes what was written durable and, for AtCommit, puts it in place of
  /// the path. Nothing may be written after it.
  void commit();
  /// The path as given.
  const std::string &path() const { return given; }

private:
  [[noreturn]] void fail(const std::string &action);
  /// Closes the file and removes the temporary one, if any.
  void discard();

  std::string given;
  /// Where the bytes go: the temporary file (AtCommit onto a regular file
  /// or a new path), else the path itself; and what commit() renames it to.
  std::string writing, target;
  /// `what` and the path, for messages.
  std::string named;
  bool regular = false;
  int fd = -1;
};

/// Writes the concatenation of `pieces` to `path` with OutputFile (AtCommit).
void writeOutputFile(const std::string &path,
                     const std::vector<FilePiece> &pieces,
                     const std::string &what = "", unsigned mode = 0666);
void writeOutputFile(const std::string &path, std::string_view contents,
                     const std::string &what = "", unsigned mode = 0666);

/// Why `path` (named `what` in the message) cannot take an output, checked before a long run so that it
/// fails before its first step and not at its end: a directory, a socket or
/// block device, a missing or unwritable folder, an unwritable file; "" when
/// it can (a character device or FIFO is accepted as it is).
std::string outputPathProblem(const std::string &path,
                              const std::string &what = "");

} // namespace pp::runtime

#endif // PP_RUNTIME_OUTPUTFILE_H
