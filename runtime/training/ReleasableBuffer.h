//===- ReleasableBuffer.h - floats whose memory can be handed back -*- C++ -*-===//
//
// A buffer of floats in pages of its own (an anonymous mapping), parts of
// which can be handed back to the system between uses: ZeRO-2 keeps only a
// rank's share of a stage's gradients between steps, ZeRO-3 only its share
// of the parameters between uses. The addresses stay valid; released
// elements read 0 until written again. On the host the floats lie in pages
// of their own; on a GPU in one allocation of its memory, which a release
// keeps whole (handing back part of it needs the device's virtual memory
// mapping, which the CUDA device layer does not have yet).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_RELEASABLEBUFFER_H
#define PP_RUNTIME_RELEASABLEBUFFER_H

#include "runtime/device/Buffer.h"
#include "runtime/device/Queue.h"

#include <cstdint>
#include <optional>

namespace pp::runtime {

class ReleasableBuffer {
public:
  /// `count` zero floats on `queue`'s device, usable by the work queued
  /// there. Throws std::runtime_error when the device has no memory for
  /// them.
  ReleasableBuffer(int64_t count, Queue &queue);
  ~ReleasableBuffer();
  ReleasableBuffer(const ReleasableBuffer &) = delete;
  ReleasableBuffer &operator=(const ReleasableBuffer &) = delete;

  float *data() { return values; }
  const float *data() const { return values; }
  int64_t size() const { return count; }

  /// Hands back the pages that hold no element of [keepBegin, keepEnd):
  /// their elements read 0 afterwards; the kept range keeps its values.
  void releaseOutside(int64_t keepBegin, int64_t keepEnd);

  /// The bytes of the buffer in memory now (its resident pages, at most
  /// size() floats): what the rank holds, measured.
  int64_t residentBytes() const;

private:
  /// The allocation on a device other than the host.
  std::optional<Buffer> onDevice;
  float *values = nullptr;
  int64_t count = 0;
  /// The mapping's length, whole pages.
  int64_t mappedBytes = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_RELEASABLEBUFFER_H
