//===- HfTokenizer.cpp - Hugging Face tokenizer.json pipelines ------------===//

#include "runtime/tokenizers/HfTokenizer.h"

#include "runtime/tokenizers/TokenizerJson.h"
#include "runtime/tokenizers/Utf8.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace pp::runtime {
namespace {

using nlohmann::json;

/// The largest token id pp takes (16M): far above any model's vocabulary
/// (LLaMA 3: 128256), low enough that a corrupt id cannot make the
/// vocabulary tables exhaust memory.
constexpr uint64_t kLargestTokenId = (1 << 24) - 1;

/// Refuses `value` at `where` unless it is a token id.
uint32_t tokenIdValue(const json &value, const std::string &where) {
  if (!value.is_number_unsigned() || value.get<uint64_t>() > kLargestTokenId)
    refuseField(where, "is not a token id (an integer from 0 to " +
                           std::to_string(kLargestTokenId) + ")");
  return value.get<uint32_t>();
}

/// The end-of-document tokens pp looks for, in this order.
constexpr const char *kEndOfDocumentNames[] = {"<|endoftext|>",
                                               "<|end_of_text|>", "</s>",
                                               "<eos>"};

uint32_t idField(const json &object, const std::string &where,
                 const std::string &name) {
  return tokenIdValue(requireField(object, where, name), where + "." + name);
}

std::unordered_map<std::string, uint32_t> parseVocabulary(const json &model) {
  const json &vocab = requireField(model, "model", "vocab");
  if (!vocab.is_object())
    refuseField("model.vocab", "is not an object of token strings to ids");
  std::unordered_map<std::string, uint32_t> ids;
  for (const auto &[text, id] : vocab.items())
    ids.emplace(text, tokenIdValue(id, "model.vocab[\"" + text + "\"]"));
  return ids;
}

/// A merge as "left right" (tokenizers before 0.20) or ["left", "right"].
std::pair<std::string, std::string> parseMerge(const json &merge,
                                               const std::string &where) {
  if (merge.is_string()) {
    std::string text = merge.get<std::string>();
    size_t space = text.find(' ');
    if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
      refuseField(where, "\"" + text +
                             "\" is not two tokens separated by one space");
    return {text.substr(0, space), text.substr(space + 1)};
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
      merge[1].is_string())
    return {merge[0].get<std::string>(), merge[1].get<std::string>()};
  refuseField(where, "is neither \"left right\" nor [\"left\", \"right\"]");
}

/// Refuses the BPE options pp does not run.
void checkBpeOptions(const json &model) {
  auto dropout = model.find("dropout");
  if (dropout != model.end() && !dropout->is_null() &&
      !(dropout->is_number() && dropout->get<double>() == 0))
    refuseField("model.dropout", "BPE dropout is not supported (it makes "
                                 "encoding random); set it to null");
  for (const char *affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto found = model.find(affix);
    if (found != model.end() && !found->is_null() &&
        !(found->is_string() && found->get<std::string>().empty()))
      refuseField(std::string("model.") + affix,
                  "BPE with a subword prefix or suffix is not supported; pp "
                  "runs byte-level and Metaspace BPE");
  }
}

std::unique_ptr<BpeModel> parseModel(const json &root) {
  const json &model = requireField(root, "", "model");
  std::string type = model.is_object() && model.contains("type")
                         ? stringField(model, "model", "type")
                         : "BPE";
  if (type != "BPE")
    refuseField("model.type",
                "\"" + type +
                    "\" models are not supported; pp runs BPE models from "
                    "tokenizer.json (and SentencePiece models from a "
                    ".model file)");
  checkBpeOptions(model);
  BpeOptions options;
  auto unknown = model.find("unk_token");
  if (unknown != model.end() && !unknown->is_null())
    options.unknownToken = stringField(model, "model", "unk_token");
  options.fuseUnknown = boolField(model, "model", "fuse_unk", false);
  options.byteFallback = boolField(model, "model", "byte_fallback", false);
  options.ignoreMerges = boolField(model, "model", "ignore_merges", false);
  const json &mergeList = requireField(model, "model", "merges");
  if (!mergeList.is_array())
    refuseField("model.merges", "is not a list");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(mergeList.size());
  for (size_t i = 0; i < mergeList.size(); ++i)
    merges.push_back(
        parseMerge(mergeList[i], "model.merges[" + std::to_string(i) + "]"));
  try {
    return std::make_unique<BpeModel>(parseVocabulary(model), merges, options);
  } catch (const std::invalid_argument &failure) {
    refuseField("model", failure.what());
  }
}

/// The added tokens; those matched in normalized text ("normalized": true,
/// by default the non-special ones) go to `normalizedTokens`.
std::vector<AddedToken> parseAddedTokens(const json &root,
                                         std::vector<AddedToken> &normalizedTokens) {
  std::vector<AddedToken> tokens;
  auto list = root.find("added_tokens");
  if (list == root.end() || list->is_null())
    return tokens;
  if (!list->is_array())
    refuseField("added_tokens", "is not a list");
  for (size_t i = 0; i < list->size(); ++i) {
    const json &entry = (*list)[i];
    std::string where = "added_tokens[" + std::to_string(i) + "]";
    AddedToken token;
    token.content = stringField(entry, where, "content");
    token.id = idField(entry, where, "id");
    token.leftStrip = boolField(entry, where, "lstrip", false);
    token.rightStrip = boolField(entry, where, "rstrip", false);
    if (boolField(entry, where, "single_word", false))
      refuseField(where + ".single_word",
                  "added tokens matched as single words are not supported");
    bool special = boolField(entry, where, "special", false);
    if (boolField(entry, where, "normalized", !special))
      normalizedTokens.push_back(std::move(token));
    else
      tokens.push_back(std::move(token));
  }
  return tokens;
}

/// `tokens` as they read after `normalizer`, which is how Hugging Face
/// matches added tokens in normalized text ("</s>" as "▁</s>" after
/// Prepend("▁")).
std::vector<AddedToken> normalizedForms(std::vector<AddedToken> tokens,
                                        const Normalizer *normalizer) {
  if (normalizer)
    for (AddedToken &token : tokens)
      normalizer->normalize(token.content);
  return tokens;
}

} // namespace

HfTokenizer::HfTokenizer(std::unique_ptr<BpeModel> bpe,
                         std::unique_ptr<Normalizer> textNormalizer,
                         const std::vector<AddedToken> &raw,
                         const std::vector<AddedToken> &normalized)
    : model(std::move(bpe)), rawAddedTokens(raw),
      normalizedAddedTokens(normalizedForms(normalized, textNormalizer.get())),
      normalizer(std::move(textNormalizer)),
      vocabulary(model->vocabularySize()) {
  // As in Hugging Face, a token matched in normalized text is spelled in
  // its normalized form ("▁</s>"), and found by its content.
  const std::vector<AddedToken> spelled =
      normalizedForms(normalized, normalizer.get());
  for (const auto &[tokens, spellings] :
       {std::pair(&raw, &raw), std::pair(&normalized, &spelled)})
    for (size_t i = 0; i < tokens->size(); ++i) {
      const AddedToken &token = (*tokens)[i];
      addedById.emplace(token.id, (*spellings)[i].content);
      addedByText.emplace(token.content, token.id);
      vocabulary = std::max(vocabulary, token.id + 1);
    }
}

std::unique_ptr<HfTokenizer> HfTokenizer::parse(const std::string &path,
                                                std::string_view text) {
  try {
    json root = json::parse(text);
    if (!root.is_object())
      refuseField("the file", std::string("is a JSON ") + root.type_name() +
                                  ", not a tokenizer.json object");
    std::vector<AddedToken> normalizedTokens;
    std::vector<AddedToken> rawTokens = parseAddedTokens(root, normalizedTokens);
    std::unique_ptr<HfTokenizer> tokenizer(new HfTokenizer(
        parseModel(root),
        parseNormalizer(root.value("normalizer", json()), "normalizer"),
        rawTokens, normalizedTokens));
    tokenizer->preTokenizer =
        parsePreTokenizer(root.value("pre_tokenizer", json()), "pre_tokenizer");
    try {
      tokenizer->decoder = parseDecoder(root.value("decoder", json()), "decoder");
    } catch (const TokenizerJsonError &unsupported) {
      tokenizer->decoderProblem = unsupported.what();
    }
    return tokenizer;
  } catch (const json::exception &failure) {
    throw std::runtime_error("tokenizer '" + path +
                             "': not valid JSON: " + failure.what() +
                             "; a tokenizer.json is the file "
                             "save_pretrained writes");
  } catch (const TokenizerJsonError &failure) {
    throw std::runtime_error("tokenizer '" + path + "': " + failure.what());
  }
}

void HfTokenizer::encode(std::string_view text,
                         std::vector<uint32_t> &tokens) const {
  size_t invalid = findInvalidUtf8(text);
  if (invalid != std::string_view::npos)
    throw std::runtime_error(
        "byte " + std::to_string(invalid) +
        " is not UTF-8, and a tokenizer.json tokenizes UTF-8 text only; "
        "convert the text to UTF-8 (iconv -f ENCODING -t UTF-8)");
  std::vector<PreToken> words;
  for (const TextSegment &segment : rawAddedTokens.split(text)) {
    if (segment.addedToken >= 0) {
      tokens.push_back(static_cast<uint32_t>(segment.addedToken));
      continue;
    }
    std::string normalized(segment.text);
    if (normalizer)
      normalizer->normalize(normalized);
    for (const TextSegment &piece : normalizedAddedTokens.split(normalized)) {
      if (piece.addedToken >= 0) {
        tokens.push_back(static_cast<uint32_t>(piece.addedToken));
        continue;
      }
      words.assign(1, PreToken{std::string(piece.text),
                               segment.atStart && piece.atStart});
      if (preTokenizer)
        preTokenizer->split(words);
      for (const PreToken &word : words)
        model->encode(word.text, tokens);
    }
  }
}

std::string HfTokenizer::tokenText(uint32_t id) const {
  auto added = addedById.find(id);
  if (added != addedById.end())
    return added->second;
  if (const std::string *text = model->tokenText(id))
    return *text;
  throw std::runtime_error("token " + std::to_string(id) +
                           " is not in the tokenizer's vocabulary of " +
                           std::to_string(vocabulary) + " tokens");
}

std::string HfTokenizer::decode(const std::vector<uint32_t> &ids) const {
  if (!decoderProblem.empty())
    throw std::runtime_error("cannot decode: " + decoderProblem);
  std::vector<std::string> strings;
  strings.reserve(ids.size());
  for (uint32_t id : ids)
    strings.push_back(tokenText(id));
  if (decoder)
    decoder->decode(strings);
  std::string text;
  for (const std::string &piece : strings)
    text += piece;
  return text;
}

std::optional<uint32_t> HfTokenizer::tokenId(std::string_view text) const {
  auto added = addedByText.find(std::string(text));
  if (added != addedByText.end())
    return added->second;
  return model->tokenId(text);
}

std::optional<EndOfDocumentToken> HfTokenizer::defaultEndOfDocument() const {
  for (const char *name : kEndOfDocumentNames)
    if (std::optional<uint32_t> id = tokenId(name))
      return EndOfDocumentToken{*id, name,
                                std::string("the token named ") + name};
  return std::nullopt;
}

std::string HfTokenizer::endOfDocumentRule() const {
  std::string names;
  for (const char *name : kEndOfDocumentNames)
    names += std::string(names.empty() ? "" : ", ") + name;
  return "the first of " + names + " that it has";
}

std::string HfTokenizer::describe() const { return "tokenizer.json BPE"; }

} // namespace pp::runtime
