//===- ReleasableBuffer.cpp - floats whose memory can be handed back ------===//

#include "runtime/training/ReleasableBuffer.h"

#include "runtime/device/Device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace pp::runtime {
namespace {

int64_t pageBytes() { return static_cast<int64_t>(::sysconf(_SC_PAGESIZE)); }

} // namespace

ReleasableBuffer::ReleasableBuffer(int64_t count, Queue &queue)
    : count(count) {
  if (count <= 0)
    return;
  int64_t bytes = count * static_cast<int64_t>(sizeof(float));
  if (queue.device().deviceKind() != PP_DEVICE_CPU) {
    onDevice = Buffer::allocate(queue, bytes);
    queue.zero(onDevice->data(), bytes);
    values = static_cast<float *>(onDevice->data());
    return;
  }
  int64_t page = pageBytes();
  mappedBytes = (bytes + page - 1) / page * page;
  void *mapped = ::mmap(nullptr, mappedBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED)
    throw std::runtime_error("no memory for a buffer of " +
                             std::to_string(bytes) +
                             " bytes: " + std::strerror(errno));
  values = static_cast<float *>(mapped);
}

ReleasableBuffer::~ReleasableBuffer() {
  if (values && !onDevice)
    ::munmap(values, mappedBytes);
}

void ReleasableBuffer::releaseOutside(int64_t keepBegin, int64_t keepEnd) {
  if (!values || onDevice)
    return;
  int64_t page = pageBytes();
  char *base = reinterpret_cast<char *>(values);
  // Pages before the page holding keepBegin, and after the one holding
  // keepEnd - 1 (all of them when the kept range is empty).
  auto release = [&](int64_t fromByte, int64_t toByte) {
    if (fromByte < toByte)
      ::madvise(base + fromByte, toByte - fromByte, MADV_DONTNEED);
  };
  if (keepBegin >= keepEnd) {
    release(0, mappedBytes);
    return;
  }
  int64_t firstKept = keepBegin * static_cast<int64_t>(sizeof(float)) / page;
  int64_t lastKept =
      (keepEnd * static_cast<int64_t>(sizeof(float)) - 1) / page;
  release(0, firstKept * page);
  release((lastKept + 1) * page, mappedBytes);
}

int64_t ReleasableBuffer::residentBytes() const {
  if (!values)
    return 0;
  if (onDevice)
    return count * static_cast<int64_t>(sizeof(float));
  int64_t page = pageBytes();
  std::vector<unsigned char> resident(mappedBytes / page);
  if (::mincore(values, mappedBytes, resident.data()) != 0)
    return count * static_cast<int64_t>(sizeof(float));
  int64_t pages = std::count_if(resident.begin(), resident.end(),
                                [](unsigned char flags) { return flags & 1; });
  return std::min(pages * page, count * static_cast<int64_t>(sizeof(float)));
}

} // namespace pp::runtime
