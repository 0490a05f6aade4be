//===- SentencePieceTokenizer.h - SentencePiece models ----------*- C++ -*-===//
//
// A SentencePiece model (tokenizer.model) run by the sentencepiece
// library, encoding as SentencePieceProcessor::Encode does by default (the
// model's normalizer, no BOS or EOS); its end-of-document token is the
// model's eos_id.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_SENTENCEPIECETOKENIZER_H
#define PP_RUNTIME_TOKENIZERS_SENTENCEPIECETOKENIZER_H

#include "runtime/tokenizers/Tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
} // namespace sentencepiece

namespace pp::runtime {

/// A SentencePiece model.
class SentencePieceTokenizer : public Tokenizer {
public:
  /// Loads the serialized model `model`, the content of `path`. Throws
  /// std::runtime_error naming the file and the library's message.
  static std::unique_ptr<SentencePieceTokenizer>
  load(const std::string &path, std::string_view model);
  ~SentencePieceTokenizer() override;

  void encode(std::string_view text,
              std::vector<uint32_t> &tokens) const override;
  std::string decode(const std::vector<uint32_t> &tokens) const override;
  uint32_t vocabularySize() const override;
  std::optional<uint32_t> tokenId(std::string_view text) const override;
  std::string tokenText(uint32_t id) const override;
  std::optional<EndOfDocumentToken> defaultEndOfDocument() const override;
  std::string endOfDocumentRule() const override;
  std::string describe() const override;

private:
  SentencePieceTokenizer();

  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_SENTENCEPIECETOKENIZER_H
