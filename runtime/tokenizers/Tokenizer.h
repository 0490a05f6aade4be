//===- Tokenizer.h - a model's tokenizer ------------------------*- C++ -*-===//
//
// What pp-data pack and inspect need of a model's tokenizer, whichever
// file it comes from: a Hugging Face tokenizer.json (HfTokenizer.h) or a
// SentencePiece model (SentencePieceTokenizer.h). loadTokenizer tells the
// two apart by their content.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_TOKENIZER_H
#define PP_RUNTIME_TOKENIZERS_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pp::runtime {

/// The token that ends each document, and why it is that one.
struct EndOfDocumentToken {
  uint32_t id = 0;
  /// The token's text ("<|endoftext|>").
  std::string text;
  /// How it was chosen ("the special named <|endoftext|>").
  std::string reason;
};

/// A model's tokenizer.
class Tokenizer {
public:
  virtual ~Tokenizer() = default;

  /// Appends the tokens of the document `text` to `tokens`, as the
  /// tokenizer's own library encodes it without special tokens around it
  /// (no BOS, no EOS). Throws std::runtime_error for text it cannot take
  /// (a tokenizer.json takes UTF-8 only), naming the byte offset.
  virtual void encode(std::string_view text,
                      std::vector<uint32_t> &tokens) const = 0;
  /// The text of `tokens`, as the library decodes it (special tokens
  /// spelled out). Throws std::runtime_error for a token outside the
  /// vocabulary or a tokenizer that cannot decode.
  virtual std::string decode(const std::vector<uint32_t> &tokens) const = 0;
  /// One more than the largest token id.
  virtual uint32_t vocabularySize() const = 0;
  /// The id of the token spelled `text`, if there is one.
  virtual std::optional<uint32_t> tokenId(std::string_view text) const = 0;
  /// How token `id` is spelled in the vocabulary ("Ġthe", "▁the").
  virtual std::string tokenText(uint32_t id) const = 0;
  /// The end-of-document token the tokenizer names, if any.
  virtual std::optional<EndOfDocumentToken> defaultEndOfDocument() const = 0;
  /// The rule defaultEndOfDocument follows, for the error when it finds
  /// none.
  virtual std::string endOfDocumentRule() const = 0;
  /// What kind of tokenizer it is ("tokenizer.json BPE, byte-level").
  virtual std::string describe() const = 0;
};

/// Loads the tokenizer file `path`: a tokenizer.json (a JSON object) or a
/// SentencePiece model (a serialized ModelProto). Throws
/// std::runtime_error naming the file for anything else, a file that does
/// not parse, or a tokenizer pp does not run.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string &path);

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_TOKENIZER_H
