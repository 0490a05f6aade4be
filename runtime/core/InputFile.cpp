//===- InputFile.cpp - the one way pp opens a file it reads ---------------===//

#include "runtime/core/InputFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// What kind of file `mode` is, for a message.
const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

} // namespace

InputFile InputFile::open(const std::string &path, const std::string &what) {
  auto refuse = [&](const std::string &why) -> InputFile {
    throw std::runtime_error("cannot read " + what + " '" + path + "': " + why);
  };
  // O_NONBLOCK: opening a FIFO does not wait for a writer.
  FileDescriptor fd(
      ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0)
    return refuse(std::strerror(errno));
  struct stat status;
  if (::fstat(fd.get(), &status) != 0)
    return refuse(std::strerror(errno));
  if (!S_ISREG(status.st_mode))
    return refuse(std::string("it is ") + kindOf(status.st_mode) +
                  ", and pp reads only regular files (copy it into one)");
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return InputFile(std::move(fd), static_cast<uint64_t>(status.st_size), path,
                   what);
}

bool InputFile::readAt(void *data, uint64_t size, uint64_t offset) const {
  char *into = static_cast<char *>(data);
  for (uint64_t done = 0; done < size;) {
    ssize_t got = ::pread(fd(), into + done, size - done,
                          static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      if (got == 0)
        errno = 0;
      return false;
    }
    done += static_cast<uint64_t>(got);
  }
  return true;
}

std::string InputFile::readAll() const {
  std::string contents(bytes, '\0');
  if (!readAt(contents.data(), bytes, 0))
    throw std::runtime_error(
        "cannot read " + what + " '" + path + "': " +
        (errno ? std::strerror(errno)
               : "it shrank while being read (another program is writing "
                 "it?)"));
  return contents;
}

std::string readInputFile(const std::string &path, const std::string &what) {
  return InputFile::open(path, what).readAll();
}

std::string inputFileProblem(const std::string &path,
                             const std::string &what) {
  try {
    InputFile::open(path, what);
  } catch (const std::runtime_error &failure) {
    return failure.what();
  }
  return "";
}

} // namespace pp::runtime
