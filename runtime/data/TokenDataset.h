//===- TokenDataset.h - memory-mapped token files ---------------*- C++ -*-===//
//
// The token streams a language model trains on, memory-mapped read-only.
// Two formats:
//
// pp's token dataset (pp-data pack writes it): a 72-byte header, then the
// tokens. Every field is little-endian:
//
//   bytes   field
//   0-7     magic, the ASCII characters "PPTOKENS"
//   8-11    uint32 format version: 1
//   12-15   uint32 token width in bytes: 2 or 4
//   16-23   uint64 token count N
//   24-31   uint64 document count
//   32-35   uint32 vocabulary size the tokenizer declares (257 for
//           pp-data's byte-level tokenizer); every token is below it
//   36-39   uint32 largest token present
//   40-71   SHA-256 of the token payload (bytes 72 to the end), raw bytes
//   72-     N tokens, each an unsigned little-endian integer of the width
//
// The file is exactly 72 + N x width bytes. Opening one verifies every
// field, the size, the checksum and the largest token.
//
// Flat token files: a bare array of little-endian uint16 or uint32 tokens,
// as nanoGPT's prepare.py writes train.bin (np.uint16 ... tofile). They
// carry no header, so the caller names the width.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENDATASET_H
#define PP_RUNTIME_TOKENDATASET_H

#include "runtime/core/MappedFile.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// The header fields of a pp token dataset that a flat file lacks.
struct TokenDatasetHeader {
  uint32_t version = 0;
  int64_t documents = 0;
  /// The vocabulary size the tokenizer declares.
  uint32_t vocabulary = 0;
  /// The SHA-256 of the token payload, 64 lowercase hex digits (verified).
  std::string checksum;
};

/// A read-only, memory-mapped token file (a MappedFile: a truncation while
/// it is read is reported, naming the file and byte). Move-only; unmaps
/// when destroyed.
class TokenDataset {
public:
  /// Opens `path`; tokenWidth 0 = pp format only, 2 or 4 = also flat files.
  /// Throws std::runtime_error saying what is wrong, in which file, where
  /// and how to fix it.
  static std::unique_ptr<TokenDataset> open(const std::string &path,
                                            int tokenWidth = 0);

  /// The token count of `path` from its header (pp format) or its size
  /// (a flat file of `tokenWidth`-byte tokens), reading no token: for
  /// ranks that need the size of data they do not read. Refuses, as open
  /// does, everything the header and the size show (a directory, a
  /// truncated file, a corrupt header, a width that does not fit); the
  /// checksum and the largest token are left to open.
  static int64_t countTokens(const std::string &path, int tokenWidth = 0);

  TokenDataset(TokenDataset &&other) noexcept;
  TokenDataset &operator=(TokenDataset &&other) noexcept;
  TokenDataset(const TokenDataset &) = delete;
  TokenDataset &operator=(const TokenDataset &) = delete;
  ~TokenDataset();

  const std::string &path() const { return filePath; }
  /// The number of tokens.
  int64_t size() const { return tokenCount; }
  /// Bytes per token: 2 or 4.
  int tokenWidth() const { return width; }
  /// Whether the file is in pp's format (has a header) rather than flat.
  bool packed() const { return packedHeader != nullptr; }
  /// The pp format's header fields; null for a flat file.
  const TokenDatasetHeader *header() const { return packedHeader.get(); }
  /// The largest token: the header's for the pp format (verified), computed
  /// on open for flat files.
  uint32_t maxToken() const { return largest; }

  /// Token `index` (0 <= index < size()).
  uint32_t token(int64_t index) const;
  /// For a flat file of 2-byte tokens of at least 16: whether every token
  /// at an odd index is 0, as when a file of uint32 tokens is read as
  /// uint16 (the high halves).
  bool looksLikeWiderTokens() const;
  /// Index of the first token >= bound, or -1.
  int64_t firstTokenAtLeast(uint32_t bound) const;
  /// Copies tokens [first, first + count) as int64. Throws
  /// std::runtime_error naming the range and the size when the range leaves
  /// the dataset.
  void read(int64_t first, int64_t count, int64_t *out) const;

private:
  TokenDataset() = default;

  std::string filePath;
  MappedFile mapped;
  /// The first token's byte in the mapping.
  const unsigned char *tokens = nullptr;
  int64_t tokenCount = 0;
  int width = 0;
  uint32_t largest = 0;
  std::unique_ptr<TokenDatasetHeader> packedHeader;
};

/// The size in bytes of a pp token dataset's header.
constexpr size_t kTokenDatasetHeaderBytes = 72;

/// Writes `tokens` as a pp token dataset atomically: a temporary file in
/// the same folder, fsync, rename over `path`. Throws std::runtime_error
/// (leaving no temporary file) for no tokens, a width other than 2 or 4, a
/// token at or above `vocabulary` or too wide for `tokenWidth` (naming its
/// index), or a failed write.
void writeTokenDataset(const std::string &path,
                       const std::vector<uint32_t> &tokens, int64_t documents,
                       uint32_t vocabulary, int tokenWidth);

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENDATASET_H
