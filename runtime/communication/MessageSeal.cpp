//===- MessageSeal.cpp - integrity of a link's messages -------------------===//

#include "runtime/communication/MessageSeal.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <stdexcept>

namespace pp::runtime {
namespace {

struct MacDeleter {
  void operator()(EVP_MAC_CTX *context) const { EVP_MAC_CTX_free(context); }
};
using MacContext = std::unique_ptr<EVP_MAC_CTX, MacDeleter>;

/// An HMAC-SHA256 context keyed with `key`.
MacContext keyedHmac(const void *key, size_t size) {
  static EVP_MAC *hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (!hmac)
    throw std::runtime_error("OpenSSL has no HMAC (EVP_MAC_fetch)");
  MacContext context(EVP_MAC_CTX_new(hmac));
  char digest[] = "SHA256";
  OSSL_PARAM parameters[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end()};
  if (!context ||
      !EVP_MAC_init(context.get(), static_cast<const unsigned char *>(key),
                    size, parameters))
    throw std::runtime_error("cannot key an HMAC (OpenSSL EVP_MAC_init)");
  return context;
}

} // namespace

struct MessageSeal::Keyed {
  MacContext context;

  /// HMAC(this key, `number` || `data`), truncated.
  Tag tagOf(uint64_t number, const void *data, size_t size) const {
    MacContext copy(EVP_MAC_CTX_dup(context.get()));
    unsigned char full[EVP_MAX_MD_SIZE];
    size_t length = 0;
    if (!copy ||
        !EVP_MAC_update(copy.get(),
                        reinterpret_cast<const unsigned char *>(&number),
                        sizeof(number)) ||
        (size > 0 &&
         !EVP_MAC_update(copy.get(), static_cast<const unsigned char *>(data),
                         size)) ||
        !EVP_MAC_final(copy.get(), full, &length, sizeof(full)))
      throw std::runtime_error("cannot seal a message (OpenSSL HMAC failed)");
    Tag tag;
    std::copy_n(full, tag.size(), tag.begin());
    return tag;
  }
};

MessageSeal::MessageSeal(const std::string &linkKey, bool connecting,
                         int connector, int acceptor) {
  // A key per direction: HMAC(link key, "up" or "down", the ranks).
  int32_t ranks[2] = {connector, acceptor};
  auto direction = [&](const char *label) {
    MacContext derive = keyedHmac(linkKey.data(), linkKey.size());
    unsigned char key[EVP_MAX_MD_SIZE];
    size_t length = 0;
    if (!EVP_MAC_update(derive.get(),
                        reinterpret_cast<const unsigned char *>(label),
                        std::char_traits<char>::length(label)) ||
        !EVP_MAC_update(derive.get(),
                        reinterpret_cast<const unsigned char *>(ranks),
                        sizeof(ranks)) ||
        !EVP_MAC_final(derive.get(), key, &length, sizeof(key)))
      throw std::runtime_error("cannot derive a link's keys (OpenSSL HMAC)");
    return std::unique_ptr<Keyed>(new Keyed{keyedHmac(key, length)});
  };
  std::unique_ptr<Keyed> up = direction("pp-link up"),
                         down = direction("pp-link down");
  sending = std::move(connecting ? up : down);
  receiving = std::move(connecting ? down : up);
}

MessageSeal::~MessageSeal() = default;

MessageSeal::Tag MessageSeal::seal(const void *data, size_t size) {
  return sending->tagOf(sent++, data, size);
}

bool MessageSeal::verify(const void *data, size_t size, const Tag &tag) {
  Tag expected = receiving->tagOf(received++, data, size);
  return CRYPTO_memcmp(expected.data(), tag.data(), tag.size()) == 0;
}

} // namespace pp::runtime
