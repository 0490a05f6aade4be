//===- HfTokenizer.h - Hugging Face tokenizer.json pipelines ----*- C++ -*-===//
//
// A tokenizer.json's BPE pipeline, run as Hugging Face tokenizers runs
// it: added tokens split out of the raw text (AddedTokens.h), each piece
// between them normalized (Normalizers.h), the added tokens with
// "normalized": true split out of that, the rest cut into words
// (PreTokenizers.h) and each word byte-pair encoded (BpeModel.h).
// Decoding maps ids to token strings and runs the decoder (Decoders.h).
//
// Supported: model.type BPE (merges as "a b" strings or [a, b] pairs,
// unk_token, fuse_unk, byte_fallback, ignore_merges); anything else
// (WordPiece, Unigram, WordLevel, BPE dropout or subword affixes, a
// component the other headers do not list, an added token with
// single_word) is refused, naming the field. The post-processor (BOS/EOS
// templates), truncation and padding are not applied: pp-data packs whole
// documents and places the end-of-document token itself.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_HFTOKENIZER_H
#define PP_RUNTIME_TOKENIZERS_HFTOKENIZER_H

#include "runtime/tokenizers/AddedTokens.h"
#include "runtime/tokenizers/BpeModel.h"
#include "runtime/tokenizers/Decoders.h"
#include "runtime/tokenizers/Normalizers.h"
#include "runtime/tokenizers/PreTokenizers.h"
#include "runtime/tokenizers/Tokenizer.h"

#include <unordered_map>

namespace pp::runtime {

/// A tokenizer.json's tokenizer. Encoding caches words: one per thread.
class HfTokenizer : public Tokenizer {
public:
  /// Parses `json`, the content of the tokenizer.json `path`. Throws
  /// std::runtime_error "tokenizer 'PATH': FIELD: problem; fix", or with
  /// the JSON parser's position for text that is no JSON.
  static std::unique_ptr<HfTokenizer> parse(const std::string &path,
                                            std::string_view json);

  void encode(std::string_view text,
              std::vector<uint32_t> &tokens) const override;
  std::string decode(const std::vector<uint32_t> &tokens) const override;
  uint32_t vocabularySize() const override { return vocabulary; }
  std::optional<uint32_t> tokenId(std::string_view text) const override;
  std::string tokenText(uint32_t id) const override;
  std::optional<EndOfDocumentToken> defaultEndOfDocument() const override;
  std::string endOfDocumentRule() const override;
  std::string describe() const override;

private:
  /// `raw` added tokens are matched before `normalizer` (may be null),
  /// `normalized` ones after.
  HfTokenizer(std::unique_ptr<BpeModel> model,
              std::unique_ptr<Normalizer> normalizer,
              const std::vector<AddedToken> &raw,
              const std::vector<AddedToken> &normalized);

  std::unique_ptr<BpeModel> model;
  std::unordered_map<uint32_t, std::string> addedById;
  std::unordered_map<std::string, uint32_t> addedByText;
  AddedTokenMatcher rawAddedTokens;
  /// Matches the normalized forms of the "normalized": true tokens.
  AddedTokenMatcher normalizedAddedTokens;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> preTokenizer;
  std::unique_ptr<Decoder> decoder;
  /// Why the decoder cannot run, when it is one pp does not support
  /// (packing does not need it).
  std::string decoderProblem;
  uint32_t vocabulary = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_HFTOKENIZER_H
