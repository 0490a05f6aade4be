//===- LinkFrames.cpp - one message on a link -----------------------------===//

#include "runtime/communication/LinkFrames.h"
#include "runtime/communication/Socket.h"

#include <cstddef>
#include <new>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// The header's bytes its tag covers: channel, slot and size.
constexpr size_t kSealedHeaderBytes = offsetof(FrameHeader, tag);

} // namespace

bool writeFrame(int fd, MessageSeal *seal, uint64_t channel, uint64_t slot,
                const void *bytes, size_t size) {
  FrameHeader header{channel, slot, size, {}};
  MessageSeal::Tag bytesTag{};
  if (seal) {
    header.tag = seal->seal(&header, kSealedHeaderBytes);
    bytesTag = seal->seal(bytes, size);
  }
  return writeAll(fd, {{&header, sizeof(header)},
                       {bytes, size},
                       {bytesTag.data(), bytesTag.size()}});
}

FrameRead readFrame(int fd, MessageSeal *seal, FrameHeader &header,
                    MessageBytes &bytes) {
  if (!readAll(fd, &header, sizeof(header)))
    return FrameRead::Closed;
  if (seal && !seal->verify(&header, kSealedHeaderBytes, header.tag))
    return FrameRead::Altered;
  try {
    bytes.resize(header.size);
  } catch (const std::bad_alloc &) {
    return FrameRead::TooLarge;
  } catch (const std::length_error &) {
    return FrameRead::TooLarge;
  }
  MessageSeal::Tag bytesTag;
  if (!readAll(fd, bytes.data(), bytes.size()) ||
      !readAll(fd, bytesTag.data(), bytesTag.size()))
    return FrameRead::Closed;
  if (seal && !seal->verify(bytes.data(), bytes.size(), bytesTag))
    return FrameRead::Altered;
  return FrameRead::Received;
}

} // namespace pp::runtime
