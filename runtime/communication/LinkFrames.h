//===- LinkFrames.h - one message on a link ---------------------*- C++ -*-===//
//
// A message crosses a link as a frame: its header (channel, slot, size and
// the header's tag), its bytes, then the bytes' tag. On a sealed link
// (MessageSeal.h) the receiver checks the header's tag before it takes the
// size for true, so an altered size neither allocates nor desynchronizes
// anything, and the bytes' tag before it hands them on; on an unsealed link
// (ranks of one host) the tags are zero and unchecked.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COMMUNICATION_LINKFRAMES_H
#define PP_RUNTIME_COMMUNICATION_LINKFRAMES_H

#include "runtime/communication/MessageSeal.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace pp::runtime {

/// Allocates like std::allocator but leaves a vector's new chars
/// uninitialized: a message's bytes are read into them at once.
template <typename T> struct UnfilledAllocator : std::allocator<T> {
  template <typename U> struct rebind { using other = UnfilledAllocator<U>; };
  UnfilledAllocator() = default;
  template <typename U> UnfilledAllocator(const UnfilledAllocator<U> &) {}
  template <typename U> void construct(U *at) noexcept {
    ::new (static_cast<void *>(at)) U;
  }
  template <typename U, typename... Args>
  void construct(U *at, Args &&...args) {
    ::new (static_cast<void *>(at)) U(std::forward<Args>(args)...);
  }
};

/// The bytes of one message.
using MessageBytes = std::vector<char, UnfilledAllocator<char>>;

/// What precedes a message's bytes on a link.
struct FrameHeader {
  uint64_t channel = 0;
  uint64_t slot = 0;
  uint64_t size = 0;
  /// The seal of the three fields above.
  MessageSeal::Tag tag{};
};

/// Writes the message of `size` bytes at `bytes` on (`channel`, `slot`) to
/// `fd`, sealed by `seal` unless it is null; false when the connection
/// failed. Callers serialize a link's writes.
bool writeFrame(int fd, MessageSeal *seal, uint64_t channel, uint64_t slot,
                const void *bytes, size_t size);

/// How reading a frame ended.
enum class FrameRead {
  Received,
  /// The connection closed or failed.
  Closed,
  /// A tag did not match: the frame was altered, reordered or forged.
  Altered,
  /// Its bytes could not be allocated.
  TooLarge,
};

/// Reads the next frame from `fd` into `header` and `bytes`, checking it
/// with `seal` unless it is null.
FrameRead readFrame(int fd, MessageSeal *seal, FrameHeader &header,
                    MessageBytes &bytes);

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATION_LINKFRAMES_H
