//===- MessageSeal.h - integrity of link messages ---------------*- C++ -*-===//
//
// A link between ranks on different machines crosses a network other hosts
// share. Its two ends proved the job's secret when it connected
// (JobSecret.h); from then on each message carries a seal: HMAC-SHA256,
// truncated to 16 bytes, of the message's number in its direction, its
// header and its bytes, under a key for that direction derived from the
// secret and the two random nonces the ends exchanged on connecting. A
// message altered, dropped, replayed or reordered on the way, or made by a
// host that does not know the secret, fails the receiver's check.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COMMUNICATION_MESSAGESEAL_H
#define PP_RUNTIME_COMMUNICATION_MESSAGESEAL_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace pp::runtime {

class MessageSeal {
public:
  static constexpr size_t kNonceBytes = 16, kTagBytes = 16;
  using Nonce = std::array<unsigned char, kNonceBytes>;
  using Tag = std::array<unsigned char, kTagBytes>;

  /// A fresh random nonce for one end of a connection. Throws
  /// std::runtime_error when no random bytes can be drawn.
  static Nonce randomNonce();

  /// The seal of one end of a link: `connecting` for the end that
  /// connected (its nonce `mine`), the other's nonce `theirs`.
  MessageSeal(const std::string &secret, bool connecting, const Nonce &mine,
              const Nonce &theirs);

  /// The tag of the next message sent: `header` then `data`.
  Tag seal(const void *header, size_t headerSize, const void *data,
           size_t size);
  /// Whether `tag` is that of the next message received.
  bool verify(const void *header, size_t headerSize, const void *data,
              size_t size, const Tag &tag);

private:
  std::string sendKey, receiveKey;
  uint64_t sent = 0, received = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATION_MESSAGESEAL_H
