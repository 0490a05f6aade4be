//===- MessageSeal.cpp - integrity of a link's messages -------------------===//

#include "runtime/communication/MessageSeal.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// HMAC-SHA256(secret, label || the connecting end's nonce || the other's).
std::string directionKey(const std::string &secret, const char *label,
                         const MessageSeal::Nonce &connecting,
                         const MessageSeal::Nonce &accepting) {
  std::string message = std::string("pp-link ") + label;
  message.append(connecting.begin(), connecting.end());
  message.append(accepting.begin(), accepting.end());
  unsigned char key[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char *>(message.data()), message.size(),
       key, &length);
  return std::string(reinterpret_cast<char *>(key), length);
}

struct MacContextDeleter {
  void operator()(EVP_MAC_CTX *context) const { EVP_MAC_CTX_free(context); }
};

/// HMAC-SHA256(key, number || header || data), truncated.
MessageSeal::Tag tagOf(const std::string &key, uint64_t number,
                       const void *header, size_t headerSize, const void *data,
                       size_t size) {
  static EVP_MAC *hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (!hmac)
    throw std::runtime_error("OpenSSL has no HMAC (EVP_MAC_fetch)");
  std::unique_ptr<EVP_MAC_CTX, MacContextDeleter> context(
      EVP_MAC_CTX_new(hmac));
  char digest[] = "SHA256";
  OSSL_PARAM parameters[] = {
      OSSL_PARAM_construct_utf8_string("digest", digest, 0),
      OSSL_PARAM_construct_end()};
  unsigned char full[EVP_MAX_MD_SIZE];
  size_t length = 0;
  if (!context ||
      !EVP_MAC_init(context.get(),
                    reinterpret_cast<const unsigned char *>(key.data()),
                    key.size(), parameters) ||
      !EVP_MAC_update(context.get(),
                      reinterpret_cast<const unsigned char *>(&number),
                      sizeof(number)) ||
      !EVP_MAC_update(context.get(), static_cast<const unsigned char *>(header),
                      headerSize) ||
      (size > 0 &&
       !EVP_MAC_update(context.get(), static_cast<const unsigned char *>(data),
                       size)) ||
      !EVP_MAC_final(context.get(), full, &length, sizeof(full)))
    throw std::runtime_error("cannot seal a message (OpenSSL HMAC failed)");
  MessageSeal::Tag tag;
  std::copy_n(full, tag.size(), tag.begin());
  return tag;
}

} // namespace

MessageSeal::Nonce MessageSeal::randomNonce() {
  Nonce nonce;
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1)
    throw std::runtime_error("cannot draw random bytes (OpenSSL RAND_bytes)");
  return nonce;
}

MessageSeal::MessageSeal(const std::string &secret, bool connecting,
                         const Nonce &mine, const Nonce &theirs) {
  const Nonce &connector = connecting ? mine : theirs;
  const Nonce &acceptor = connecting ? theirs : mine;
  std::string up = directionKey(secret, "up", connector, acceptor);
  std::string down = directionKey(secret, "down", connector, acceptor);
  sendKey = connecting ? up : down;
  receiveKey = connecting ? down : up;
}

MessageSeal::Tag MessageSeal::seal(const void *header, size_t headerSize,
                                   const void *data, size_t size) {
  return tagOf(sendKey, sent++, header, headerSize, data, size);
}

bool MessageSeal::verify(const void *header, size_t headerSize,
                         const void *data, size_t size, const Tag &tag) {
  Tag expected = tagOf(receiveKey, received++, header, headerSize, data, size);
  return CRYPTO_memcmp(expected.data(), tag.data(), tag.size()) == 0;
}

} // namespace pp::runtime
