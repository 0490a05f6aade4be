//===- OutputFile.cpp - the one way pp writes an output file --------------===//

#include "runtime/core/OutputFile.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace pp::runtime {
namespace {

std::string quoted(const std::string &path) { return "'" + path + "'"; }

/// The folder of `path` ("." for a bare name).
std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "."
         : slash == 0               ? "/"
                                    : path.substr(0, slash);
}

/// Opens what `path` names for writing without creating or truncating it
/// (and without waiting for a FIFO's reader); -1 with errno set when that
/// fails.
int openExisting(const std::string &path) {
  return ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
}

/// Why `path` can take no output, given that opening it failed with
/// `error`; "" for ENOENT (a new file).
std::string openProblem(const std::string &path, int error) {
  struct stat status;
  if (error == ENOENT)
    return ::lstat(path.c_str(), &status) == 0 && S_ISLNK(status.st_mode)
               ? "it is a symbolic link to a missing file; remove the link "
                 "or name another path"
               : "";
  if (error == EISDIR)
    return "Is a directory; name a file in it";
  if (error == ENXIO && ::stat(path.c_str(), &status) == 0 &&
      S_ISFIFO(status.st_mode))
    return "it is a FIFO without a reader; start the program that reads it "
           "first";
  if (error == ENXIO)
    return "it is a socket; name a regular file, a character device or a "
           "FIFO";
  return std::strerror(error);
}

/// Why the file open at `fd` takes no output ("" when it does): a block
/// device or another kind that is not a regular file, character device or
/// FIFO.
std::string kindProblem(int fd, bool &regular) {
  struct stat status;
  if (::fstat(fd, &status) != 0)
    return std::strerror(errno);
  regular = S_ISREG(status.st_mode);
  if (regular || S_ISCHR(status.st_mode) || S_ISFIFO(status.st_mode))
    return "";
  return std::string("it is a ") +
         (S_ISBLK(status.st_mode) ? "block device" : "special file") +
         ", which pp never writes; name a regular file, a character device "
         "or a FIFO";
}

/// A new temporary file beside `target` with permissions `mode` less the
/// umask; -1 with errno set when it cannot be created.
int createTemporary(const std::string &target, unsigned mode,
                    std::string &temporary) {
  temporary = target + ".tmp-XXXXXX";
  int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0)
    return -1;
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, mode & ~mask) != 0) {
    int error = errno;
    ::close(fd);
    ::unlink(temporary.c_str());
    errno = error;
    return -1;
  }
  return fd;
}

} // namespace

OutputFile::OutputFile(const std::string &path, Visibility visibility,
                       const std::string &what, unsigned mode)
    : given(path), target(path),
      named((what.empty() ? "" : what + " ") + quoted(path)) {
  fd = openExisting(path);
  if (fd < 0) {
    std::string problem = openProblem(path, errno);
    if (!problem.empty())
      throw std::runtime_error("cannot write " + named + ": " + problem);
    regular = true;
  } else {
    std::string problem = kindProblem(fd, regular);
    if (!problem.empty()) {
      ::close(std::exchange(fd, -1));
      throw std::runtime_error("cannot write " + named + ": " + problem);
    }
    if (!regular) {
      // Written through: the device or FIFO stays what it is.
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      writing = path;
      return;
    }
    if (visibility == Visibility::WhileWritten) {
      if (::ftruncate(fd, 0) != 0)
        fail("cannot truncate");
      writing = path;
      return;
    }
    ::close(std::exchange(fd, -1));
    // Replace what a symbolic link points to, not the link.
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved))
      target = resolved;
  }
  if (visibility == Visibility::WhileWritten) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
      fail("cannot create");
    writing = path;
    return;
  }
  fd = createTemporary(target, mode, writing);
  if (fd < 0)
    throw std::runtime_error("cannot write " + named + ": " +
                             std::strerror(errno) + " (the folder '" +
                             folderOf(target) +
                             "' must exist and be writable)");
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (fd >= 0)
    ::close(std::exchange(fd, -1));
  if (regular && writing != target && !writing.empty())
    ::unlink(writing.c_str());
  writing.clear();
}

void OutputFile::fail(const std::string &action) {
  std::string reason = std::strerror(errno);
  discard();
  throw std::runtime_error(action + " " + named + ": " + reason);
}

void OutputFile::write(const void *data, size_t size) {
  const char *bytes = static_cast<const char *>(data);
  for (size_t written = 0; written < size;) {
    ssize_t wrote = ::write(fd, bytes + written, size - written);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote < 0)
      fail("cannot write");
    written += static_cast<size_t>(wrote);
  }
}

void OutputFile::commit() {
  if (regular && ::fsync(fd) != 0)
    fail("cannot flush");
  if (::close(std::exchange(fd, -1)) != 0)
    fail("cannot close");
  if (!regular || writing == target)
    return;
  if (::rename(writing.c_str(), target.c_str()) != 0)
    fail("cannot rename a temporary file to");
  writing.clear();
  // Make the rename itself durable (best effort: some file systems cannot
  // sync a directory).
  int folder = ::open(folderOf(target).c_str(),
                      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder >= 0) {
    ::fsync(folder);
    ::close(folder);
  }
}

void writeOutputFile(const std::string &path,
                     const std::vector<FilePiece> &pieces,
                     const std::string &what, unsigned mode) {
  OutputFile file(path, OutputFile::Visibility::AtCommit, what, mode);
  for (const FilePiece &piece : pieces)
    file.write(piece.data, piece.size);
  file.commit();
}

void writeOutputFile(const std::string &path, std::string_view contents,
                     const std::string &what, unsigned mode) {
  writeOutputFile(path, {FilePiece{contents.data(), contents.size()}}, what,
                  mode);
}

std::string outputPathProblem(const std::string &path,
                              const std::string &what) {
  std::string named = (what.empty() ? "" : what + " ") + quoted(path);
  int fd = openExisting(path);
  if (fd < 0) {
    int error = errno;
    struct stat status;
    if (error == ENXIO && ::stat(path.c_str(), &status) == 0 &&
        S_ISFIFO(status.st_mode))
      return ""; // Its reader may start later.
    std::string problem = openProblem(path, error);
    if (!problem.empty())
      return "cannot write " + named + ": " + problem;
  } else {
    bool regular = false;
    std::string problem = kindProblem(fd, regular);
    ::close(fd);
    if (!problem.empty())
      return "cannot write " + named + ": " + problem;
    if (!regular)
      return "";
  }
  // A regular file is replaced through a temporary file beside it.
  char resolved[PATH_MAX];
  std::string target = ::realpath(path.c_str(), resolved) ? resolved : path;
  std::string temporary;
  int probe = createTemporary(target, 0600, temporary);
  if (probe < 0)
    return "cannot write " + named + ": " + std::strerror(errno) +
           " (the folder '" + folderOf(target) +
           "' must exist and be writable)";
  ::close(probe);
  ::unlink(temporary.c_str());
  return "";
}

} // namespace pp::runtime
