//===- SentencePieceTokenizer.cpp - SentencePiece models ------------------===//

#include "runtime/tokenizers/SentencePieceTokenizer.h"

#include <sentencepiece_processor.h>

#include <stdexcept>

namespace pp::runtime {

SentencePieceTokenizer::SentencePieceTokenizer()
    : processor(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer>
SentencePieceTokenizer::load(const std::string &path, std::string_view model) {
  std::unique_ptr<SentencePieceTokenizer> tokenizer(new SentencePieceTokenizer);
  sentencepiece::util::Status status =
      tokenizer->processor->LoadFromSerializedProto(model);
  if (!status.ok())
    throw std::runtime_error("tokenizer '" + path +
                             "': not a SentencePiece model the sentencepiece "
                             "library loads (" +
                             status.ToString() +
                             "); pass the model's tokenizer.model or its "
                             "tokenizer.json");
  return tokenizer;
}

void SentencePieceTokenizer::encode(std::string_view text,
                                    std::vector<uint32_t> &tokens) const {
  std::vector<int> ids;
  sentencepiece::util::Status status = processor->Encode(text, &ids);
  if (!status.ok())
    throw std::runtime_error("SentencePiece cannot encode it: " +
                             status.ToString());
  tokens.insert(tokens.end(), ids.begin(), ids.end());
}

std::string
SentencePieceTokenizer::decode(const std::vector<uint32_t> &tokens) const {
  std::vector<int> ids;
  ids.reserve(tokens.size());
  for (uint32_t token : tokens) {
    tokenText(token);
    ids.push_back(static_cast<int>(token));
  }
  return processor->DecodeIds(ids);
}

uint32_t SentencePieceTokenizer::vocabularySize() const {
  return static_cast<uint32_t>(processor->GetPieceSize());
}

std::optional<uint32_t>
SentencePieceTokenizer::tokenId(std::string_view text) const {
  int id = processor->PieceToId(text);
  // PieceToId answers unk_id for a piece it does not have.
  if (id < 0 || (id == processor->unk_id() && processor->IdToPiece(id) != text))
    return std::nullopt;
  return static_cast<uint32_t>(id);
}

std::string SentencePieceTokenizer::tokenText(uint32_t id) const {
  if (id >= vocabularySize())
    throw std::runtime_error("token " + std::to_string(id) +
                             " is not in the SentencePiece model's "
                             "vocabulary of " +
                             std::to_string(vocabularySize()) + " pieces");
  return processor->IdToPiece(static_cast<int>(id));
}

std::optional<EndOfDocumentToken>
SentencePieceTokenizer::defaultEndOfDocument() const {
  int eos = processor->eos_id();
  if (eos < 0)
    return std::nullopt;
  return EndOfDocumentToken{static_cast<uint32_t>(eos),
                            processor->IdToPiece(eos), "the model's eos_id"};
}

std::string SentencePieceTokenizer::endOfDocumentRule() const {
  return "the model's eos_id, which this model does not have (it was trained "
         "with eos_id -1)";
}

std::string SentencePieceTokenizer::describe() const {
  return "SentencePiece model";
}

} // namespace pp::runtime
