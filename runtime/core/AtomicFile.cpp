//===- AtomicFile.cpp - replace a file all at once ------------------------===//

#include "runtime/core/AtomicFile.h"

#include "runtime/core/FileDescriptor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pp::runtime {

void writeFileAtomically(const std::string &path, const void *data,
                         size_t size) {
  writeFileAtomically(path, {FilePiece{data, size}});
}

void writeFileAtomically(const std::string &path,
                         const std::vector<FilePiece> &pieces) {
  size_t slash = path.rfind('/');
  std::string folder =
      slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string temporary = path + ".tmp-XXXXXX";
  FileDescriptor fd(::mkostemp(temporary.data(), O_CLOEXEC));
  if (fd.get() < 0)
    throw std::runtime_error("cannot create a temporary file in '" + folder +
                             "': " + std::strerror(errno));
  auto failWritten = [&](const std::string &action,
                         const std::string &object = "") {
    std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw std::runtime_error(action + " '" + temporary + "'" + object + ": " +
                             reason);
  };
  // mkostemp creates the file for its owner only; give it the permissions
  // a new file gets.
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd.get(), 0666 & ~mask) != 0)
    failWritten("cannot set the permissions of");
  for (const FilePiece &piece : pieces) {
    const char *bytes = static_cast<const char *>(piece.data);
    for (size_t written = 0; written < piece.size;) {
      ssize_t wrote = ::write(fd.get(), bytes + written, piece.size - written);
      if (wrote < 0 && errno == EINTR)
        continue;
      if (wrote < 0)
        failWritten("cannot write");
      written += static_cast<size_t>(wrote);
    }
  }
  if (::fsync(fd.get()) != 0)
    failWritten("cannot flush");
  if (!fd.close())
    failWritten("cannot close");
  if (::rename(temporary.c_str(), path.c_str()) != 0)
    failWritten("cannot rename", " to it");
  // Make the rename itself durable (best effort: some file systems cannot
  // sync a directory).
  FileDescriptor directory(
      ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory.get() >= 0)
    ::fsync(directory.get());
}

} // namespace pp::runtime
