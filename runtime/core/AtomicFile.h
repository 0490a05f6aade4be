//===- AtomicFile.h - replace a file all at once ----------------*- C++ -*-===//
//
// Writes a file so that a crash at any moment leaves either the old file or
// the whole new one: a temporary file in the same folder, fsync, rename
// over the path, fsync of the folder.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_ATOMICFILE_H
#define PP_RUNTIME_ATOMICFILE_H

#include <cstddef>
#include <string>
#include <vector>

namespace pp::runtime {

/// Replaces `path` by the `size` bytes at `data` atomically (a new file
/// gets the permissions that umask allows). Throws std::runtime_error
/// saying which step failed on which file and why ("cannot create a
/// temporary file in 'DIR/': ..."), leaving no temporary file behind.
void writeFileAtomically(const std::string &path, const void *data,
                         size_t size);

/// `size` bytes at `data`: one piece of a file.
struct FilePiece {
  const void *data;
  size_t size;
};
/// Replaces `path` by the concatenation of `pieces` atomically, as above
/// (no copy of the pieces is assembled).
void writeFileAtomically(const std::string &path,
                         const std::vector<FilePiece> &pieces);

} // namespace pp::runtime

#endif // PP_RUNTIME_ATOMICFILE_H
