//===- Sha256.h - SHA-256 digests -------------------------------*- C++ -*-===//
//
// One incremental SHA-256 (over OpenSSL) for what the runtime digests:
// params_sha256 and the files of a package.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_SHA256_H
#define PP_RUNTIME_SHA256_H

#include <array>
#include <cstddef>
#include <istream>
#include <string>

namespace pp::runtime {

/// An incremental SHA-256.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256 &) = delete;
  Sha256 &operator=(const Sha256 &) = delete;

  void update(const void *data, size_t bytes);
  /// Adds the rest of `stream`; returns the number of bytes read.
  size_t update(std::istream &stream);
  /// The digest of everything added, as 32 bytes. Call digest() or hex()
  /// once.
  std::array<unsigned char, 32> digest();
  /// The digest of everything added, as 64 lowercase hex digits.
  std::string hex();

private:
  struct Context;
  Context *context;
};

/// The SHA-256 of the `bytes` bytes at `data`, as 64 lowercase hex digits.
std::string sha256Hex(const void *data, size_t bytes);

/// `bytes` bytes at `data` as lowercase hex digits, two per byte.
std::string hexDigits(const unsigned char *data, size_t bytes);

} // namespace pp::runtime

#endif // PP_RUNTIME_SHA256_H
