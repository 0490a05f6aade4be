//===- FileLock.cpp - an exclusive lock on a file -------------------------===//

#include "runtime/core/FileLock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace pp::runtime {

std::optional<FileLock> FileLock::acquire(const std::string &path, bool wait,
                                          std::string &problem) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    problem = "cannot create the lock file '" + path +
              "': " + std::strerror(errno) +
              " (set --cache-dir or PP_CACHE_DIR to a writable directory)";
    return std::nullopt;
  }
  while (::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
    if (errno == EINTR)
      continue;
    if (errno != EWOULDBLOCK)
      problem = "cannot lock '" + path + "': " + std::strerror(errno);
    ::close(fd);
    return std::nullopt;
  }
  return FileLock(fd);
}

FileLock::FileLock(FileLock &&other) : fd(std::exchange(other.fd, -1)) {}

FileLock::~FileLock() {
  if (fd >= 0)
    ::close(fd);
}

std::string cacheLockPath(const std::string &root, const std::string &key) {
  std::string locks = root + "/.locks";
  ::mkdir(locks.c_str(), 0700);
  return locks + "/" + key;
}

} // namespace pp::runtime
