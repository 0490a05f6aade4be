//===- FileLock.h - an exclusive lock on a file -----------------*- C++ -*-===//
//
// Processes that build one cache entry (a compiled model, a stage library)
// take turns by an flock(2) on a lock file: the lock goes with the process,
// so a compile that crashed holds none.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CORE_FILELOCK_H
#define PP_RUNTIME_CORE_FILELOCK_H

#include <optional>
#include <string>

namespace pp::runtime {

/// An exclusive flock(2) on a file, released when this is destroyed or the
/// process dies.
class FileLock {
public:
  /// Locks `path` (created if missing); waits for the holder unless
  /// `wait` is false. Fails with `problem` set (empty when the lock is
  /// merely held by another process and `wait` is false).
  static std::optional<FileLock> acquire(const std::string &path, bool wait,
                                         std::string &problem);
  FileLock(FileLock &&other);
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  FileLock &operator=(FileLock &&) = delete;
  ~FileLock();

private:
  explicit FileLock(int fd) : fd(fd) {}
  int fd;
};

/// The lock file of the cache entry `key` of the cache `root`:
/// `ROOT/.locks/KEY`, its directory created (0700) as needed.
std::string cacheLockPath(const std::string &root, const std::string &key);

} // namespace pp::runtime

#endif // PP_RUNTIME_CORE_FILELOCK_H
