//===- Sha256.cpp - SHA-256 digests ---------------------------------------===//

#include "runtime/core/Sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace pp::runtime {

struct Sha256::Context {
  EVP_MD_CTX *md = EVP_MD_CTX_new();
};

Sha256::Sha256() : context(new Context) {
  if (!context->md || !EVP_DigestInit_ex(context->md, EVP_sha256(), nullptr))
    throw std::runtime_error("cannot start a SHA-256 digest (OpenSSL)");
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(context->md);
  delete context;
}

void Sha256::update(const void *data, size_t bytes) {
  EVP_DigestUpdate(context->md, data, bytes);
}

size_t Sha256::update(std::istream &stream) {
  char buffer[1 << 16];
  size_t total = 0;
  while (stream.read(buffer, sizeof(buffer)) || stream.gcount() > 0) {
    update(buffer, static_cast<size_t>(stream.gcount()));
    total += static_cast<size_t>(stream.gcount());
  }
  return total;
}

std::array<unsigned char, 32> Sha256::digest() {
  std::array<unsigned char, 32> digest;
  EVP_DigestFinal_ex(context->md, digest.data(), nullptr);
  return digest;
}

std::string Sha256::hex() {
  std::array<unsigned char, 32> bytes = digest();
  return hexDigits(bytes.data(), bytes.size());
}

std::string sha256Hex(const void *data, size_t bytes) {
  Sha256 sha;
  sha.update(data, bytes);
  return sha.hex();
}

std::string hexDigits(const unsigned char *data, size_t bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < bytes; ++i) {
    text += digits[data[i] >> 4];
    text += digits[data[i] & 15];
  }
  return text;
}

} // namespace pp::runtime
