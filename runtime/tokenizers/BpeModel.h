//===- BpeModel.h - byte-pair encoding of one word --------------*- C++ -*-===//
//
// The BPE model of a tokenizer.json: a vocabulary of token strings and
// the ranked merges that build them. A word (one pre-token) starts as its
// characters and, as Hugging Face tokenizers does, has the pair of lowest
// rank merged (the leftmost of equal pairs first) until no merge applies.
// A character outside the vocabulary becomes its <0xNN> byte tokens
// (byte_fallback), else the unknown token (runs of them fused into one
// with fuse_unk), else it is dropped, as Hugging Face drops it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_BPEMODEL_H
#define PP_RUNTIME_TOKENIZERS_BPEMODEL_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pp::runtime {

/// How a BPE model treats words and characters its merges do not cover.
struct BpeOptions {
  /// The token for characters outside the vocabulary, if any.
  std::optional<std::string> unknownToken;
  /// Whether a run of unknown characters is one unknown token.
  bool fuseUnknown = false;
  /// Whether a character outside the vocabulary becomes <0xNN> tokens.
  bool byteFallback = false;
  /// Whether a word that is a token is that token, merges or not (LLaMA 3).
  bool ignoreMerges = false;
};

/// A vocabulary and its merges. Encoding is const but caches words: use
/// one model per thread.
class BpeModel {
public:
  /// Token strings to ids, and the merges in rank order (first = applied
  /// first). Throws std::invalid_argument naming the merge (its index)
  /// whose tokens or result are not in the vocabulary, or an unknown token
  /// that is not.
  BpeModel(std::unordered_map<std::string, uint32_t> vocabulary,
           const std::vector<std::pair<std::string, std::string>> &merges,
           BpeOptions options);

  /// Appends the tokens of `word` (UTF-8) to `tokens`.
  void encode(std::string_view word, std::vector<uint32_t> &tokens) const;

  /// The id of the token `text`, if the vocabulary has it.
  std::optional<uint32_t> tokenId(std::string_view text) const;
  /// The string of token `id`, or null for an id outside the vocabulary.
  const std::string *tokenText(uint32_t id) const;
  /// One more than the largest id.
  uint32_t vocabularySize() const { return static_cast<uint32_t>(texts.size()); }

private:
  /// The word's starting symbols: one per character, byte tokens or the
  /// unknown token for characters outside the vocabulary.
  std::vector<uint32_t> characterTokens(std::string_view word) const;
  /// Applies the merges to `symbols` in rank order.
  void merge(std::vector<uint32_t> &symbols) const;

  /// The rank of a merge and the token it makes.
  struct Merge {
    uint32_t rank;
    uint32_t result;
  };
  static uint64_t pairKey(uint32_t left, uint32_t right) {
    return (uint64_t(left) << 32) | right;
  }

  std::unordered_map<std::string, uint32_t> ids;
  /// Token strings by id (empty for ids the vocabulary skips).
  std::vector<std::string> texts;
  std::unordered_map<uint64_t, Merge> merges;
  BpeOptions options;
  std::optional<uint32_t> unknownId;
  /// The tokens that are one character, by code point (the symbols a word
  /// starts as, found without building a string).
  std::unordered_map<uint32_t, uint32_t> characterIds;
  /// The <0xNN> token of each byte; -1 where the vocabulary lacks it.
  std::vector<int64_t> byteTokens;
  /// Words encoded before (short ones only), and their tokens.
  mutable std::unordered_map<std::string, std::vector<uint32_t>> cache;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_BPEMODEL_H
