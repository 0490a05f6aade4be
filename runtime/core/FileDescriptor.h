//===- FileDescriptor.h - a POSIX file descriptor, closed once --*- C++ -*-===//

#ifndef PP_RUNTIME_FILEDESCRIPTOR_H
#define PP_RUNTIME_FILEDESCRIPTOR_H

#include <unistd.h>

#include <utility>

namespace pp::runtime {

/// A file descriptor, closed when it goes out of scope.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd) : fd(fd) {}
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor(FileDescriptor &&other) noexcept
      : fd(std::exchange(other.fd, -1)) {}
  FileDescriptor &operator=(FileDescriptor &&other) noexcept {
    std::swap(fd, other.fd);
    return *this;
  }
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
  int get() const { return fd; }
  /// Closes the descriptor; returns false (errno set) when close fails.
  bool close() {
    int closing = std::exchange(fd, -1);
    return ::close(closing) == 0;
  }

private:
  int fd;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_FILEDESCRIPTOR_H
