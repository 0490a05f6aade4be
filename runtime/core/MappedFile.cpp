//===- MappedFile.cpp - a regular file mapped read-only, guarded ----------===//

#include "runtime/core/MappedFile.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace pp::runtime {
namespace {

/// A registered mapping: [begin, end) and the message's start, read by
/// the signal handler without locks (begin is set last, cleared first).
struct Guarded {
  std::atomic<uintptr_t> begin{0}, end{0};
  char message[480] = {};
  size_t length = 0;
};

constexpr size_t kGuardedMappings = 256;
std::array<Guarded, kGuardedMappings> guarded;
std::mutex registering;
std::atomic<TruncationReporter> reporter{nullptr};

void reportToStderr(const char *message, size_t length) {
  static const char prefix[] = "pp: error: ";
  (void)!::write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
  (void)!::write(STDERR_FILENO, message, length);
}

/// Appends the decimal digits of `value` to `text` at `length`.
size_t appendNumber(char *text, size_t length, size_t capacity,
                    uintptr_t value) {
  char digits[24];
  size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value && count < sizeof(digits));
  while (count && length < capacity)
    text[length++] = digits[--count];
  return length;
}

size_t appendText(char *text, size_t length, size_t capacity,
                  const char *more) {
  for (; *more && length < capacity; ++more)
    text[length++] = *more;
  return length;
}

void onBusError(int signal, siginfo_t *info, void *) {
  uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Guarded &slot : guarded) {
    uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (!begin || address < begin ||
        address >= slot.end.load(std::memory_order_acquire))
      continue;
    char text[600];
    std::memcpy(text, slot.message, slot.length);
    size_t length = slot.length;
    length = appendNumber(text, length, sizeof(text), address - begin);
    length = appendText(text, length, sizeof(text),
                        " is gone: another program truncated it during "
                        "the run; restore the file and run again\n");
    TruncationReporter report = reporter.load();
    (report ? report : reportToStderr)(text, length);
    ::_exit(1);
  }
  // Not a guarded file: the default action (a core dump).
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void installHandlerOnce() {
  static const bool installed = [] {
    struct sigaction action = {};
    action.sa_sigaction = onBusError;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, nullptr);
    return true;
  }();
  (void)installed;
}

void guard(const void *mapping, size_t bytes, const std::string &path,
           const std::string &what) {
  installHandlerOnce();
  std::lock_guard<std::mutex> lock(registering);
  for (Guarded &slot : guarded) {
    if (slot.begin.load())
      continue;
    std::string message = what + " '" + path +
                          "' shrank while pp read it: byte ";
    slot.length = std::min(message.size(), sizeof(slot.message));
    std::memcpy(slot.message, message.data(), slot.length);
    uintptr_t begin = reinterpret_cast<uintptr_t>(mapping);
    slot.end.store(begin + bytes, std::memory_order_release);
    slot.begin.store(begin, std::memory_order_release);
    return;
  }
  // More mappings than slots: this one is read unguarded.
}

void unguard(const void *mapping) {
  std::lock_guard<std::mutex> lock(registering);
  for (Guarded &slot : guarded)
    if (slot.begin.load() == reinterpret_cast<uintptr_t>(mapping))
      slot.begin.store(0, std::memory_order_release);
}

} // namespace

MappedFile::MappedFile(int fd, size_t size, const std::string &path,
                       const std::string &what)
    : bytes(size) {
  if (bytes == 0)
    return;
  mapping = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapping == MAP_FAILED) {
    mapping = nullptr;
    throw std::runtime_error("cannot map " + what + " '" + path +
                             "': " + std::strerror(errno));
  }
  guard(mapping, bytes, path, what);
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : mapping(std::exchange(other.mapping, nullptr)),
      bytes(std::exchange(other.bytes, 0)) {}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    unmap();
    mapping = std::exchange(other.mapping, nullptr);
    bytes = std::exchange(other.bytes, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() {
  if (!mapping)
    return;
  unguard(mapping);
  ::munmap(mapping, bytes);
  mapping = nullptr;
}

void setTruncationReporter(TruncationReporter report) {
  reporter.store(report);
}

} // namespace pp::runtime
