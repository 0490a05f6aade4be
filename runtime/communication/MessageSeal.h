//===- MessageSeal.h - integrity of a link's messages -----------*- C++ -*-===//
//
// A link between ranks on different machines crosses a network other hosts
// share. Its two ends proved the job's secret when it connected, and both
// derived the link's key from the secret and the proof's two random nonces
// (JobSecret.h); from then on each piece of a message (its header, its
// bytes: LinkFrames.h) carries a seal: HMAC-SHA256, truncated to 16 bytes,
// of the piece's number in its direction and its bytes, under a key for
// that direction derived from the link's key and the two ranks. A piece
// altered, dropped, replayed or reordered on the way, or made by a host that
// does not know the secret, fails the receiver's check.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COMMUNICATION_MESSAGESEAL_H
#define PP_RUNTIME_COMMUNICATION_MESSAGESEAL_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace pp::runtime {

class MessageSeal {
public:
  static constexpr size_t kTagBytes = 16;
  using Tag = std::array<unsigned char, kTagBytes>;

  /// The seal of one end of a link whose key is `linkKey`, between job
  /// ranks `connector` and `acceptor`: `connecting` for the end that
  /// connected. Both ranks enter the keys, so the ends agree on them only
  /// when each is the rank the other takes it for. Throws
  /// std::runtime_error when OpenSSL has no HMAC.
  MessageSeal(const std::string &linkKey, bool connecting, int connector,
              int acceptor);
  ~MessageSeal();
  MessageSeal(const MessageSeal &) = delete;
  MessageSeal &operator=(const MessageSeal &) = delete;

  /// The tag of the next piece sent, the `size` bytes at `data`.
  Tag seal(const void *data, size_t size);
  /// Whether `tag` is that of the next piece received, the `size` bytes at
  /// `data`.
  bool verify(const void *data, size_t size, const Tag &tag);

private:
  /// HMAC contexts keyed for each direction, copied per message.
  struct Keyed;
  std::unique_ptr<Keyed> sending, receiving;
  uint64_t sent = 0, received = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATION_MESSAGESEAL_H
