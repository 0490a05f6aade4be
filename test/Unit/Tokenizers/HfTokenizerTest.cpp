//===- HfTokenizerTest.cpp - tokenizer.json pipelines end to end ----------===//

#include "runtime/tokenizers/HfTokenizer.h"

#include "runtime/tokenizers/ByteLevel.h"
#include "runtime/tokenizers/Regex.h"
#include "runtime/tokenizers/Utf8.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <stdexcept>

using namespace pp::runtime;
using nlohmann::json;

namespace {

/// A byte-level BPE tokenizer.json: every byte's character, "Ġt", "he",
/// "Ġthe" and the special <|endoftext|>, with `preTokenizer`.
json byteLevelTokenizer(json preTokenizer) {
  json vocab = json::object();
  vocab["<|endoftext|>"] = 0;
  for (int byte = 0; byte < 256; ++byte) {
    std::string spelled;
    ByteLevelAlphabet::get().spell(std::string(1, static_cast<char>(byte)),
                                   spelled);
    vocab[spelled] = vocab.size();
  }
  for (const char *token : {"Ġt", "he", "Ġthe"})
    vocab[token] = vocab.size();
  return json{
      {"added_tokens",
       {{{"id", 0}, {"content", "<|endoftext|>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", preTokenizer},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", {"Ġ t", json::array({"h", "e"}), "Ġt he"}}}}};
}

std::vector<std::string> tokenTexts(const Tokenizer &tokenizer,
                                    std::string_view text) {
  std::vector<uint32_t> ids;
  tokenizer.encode(text, ids);
  std::vector<std::string> texts;
  for (uint32_t id : ids)
    texts.push_back(tokenizer.tokenText(id));
  return texts;
}

using Texts = std::vector<std::string>;

TEST(HfTokenizerTest, ByteLevelWithGpt2RegexAndSpecials) {
  auto tokenizer = HfTokenizer::parse(
      "gpt2.json",
      byteLevelTokenizer({{"type", "ByteLevel"}, {"add_prefix_space", false}})
          .dump());
  EXPECT_EQ(tokenTexts(*tokenizer, "the the<|endoftext|>\n"),
            (Texts{"t", "he", "Ġthe", "<|endoftext|>", "Ċ"}));
  std::vector<uint32_t> ids;
  tokenizer->encode("é the  x", ids);
  EXPECT_EQ(tokenizer->decode(ids), "é the  x");
  EXPECT_EQ(tokenizer->defaultEndOfDocument()->id, 0u);
  EXPECT_EQ(tokenizer->vocabularySize(), 260u);
}

TEST(HfTokenizerTest, AddPrefixSpaceStartsEachTextWithASpace) {
  auto tokenizer = HfTokenizer::parse(
      "prefix.json",
      byteLevelTokenizer({{"type", "ByteLevel"}, {"add_prefix_space", true}})
          .dump());
  EXPECT_EQ(tokenTexts(*tokenizer, "the"), (Texts{"Ġthe"}));
}

TEST(HfTokenizerTest, SplitRegexKeepsTheLastSpaceForTheNextWord) {
  // LLaMA 3's \s+(?!\S): of three spaces before a word, two are a piece and
  // the third goes with the word.
  json split = {{"type", "Split"},
                {"pattern", {{"Regex", R"( ?\p{L}+|\s+(?!\S)|\s+)"}}},
                {"behavior", "Isolated"},
                {"invert", false}};
  json byteLevel = {{"type", "ByteLevel"}, {"use_regex", false},
                    {"add_prefix_space", false}};
  auto tokenizer = HfTokenizer::parse(
      "split.json",
      byteLevelTokenizer({{"type", "Sequence"},
                          {"pretokenizers", {split, byteLevel}}})
          .dump());
  EXPECT_EQ(tokenTexts(*tokenizer, "the   the"),
            (Texts{"t", "he", "Ġ", "Ġ", "Ġthe"}));
}

TEST(HfTokenizerTest, RegexMatchesUnicodeClassesAndCaseInsensitiveGroups) {
  Regex pattern(R"((?i:'s|'ll)|\p{L}+|\p{N}{1,3})");
  std::string text = "Ωmega'LL 12345";
  std::vector<std::string> pieces;
  for (auto [begin, end] : pattern.matches(text))
    pieces.push_back(text.substr(begin, end - begin));
  EXPECT_EQ(pieces, (Texts{"Ωmega", "'LL", "123", "45"}));
  EXPECT_THROW(Regex("(?<x"), std::invalid_argument);
}

TEST(HfTokenizerTest, MetaspaceWithByteFallbackDecodesBack) {
  json vocab = {{"<unk>", 0}, {"</s>", 1}, {"▁", 2}, {"a", 3}, {"▁a", 4}};
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    vocab[name] = vocab.size();
  }
  json tokenizer = {
      {"added_tokens", {{{"id", 1}, {"content", "</s>"}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "▁"}},
          {{"type", "Replace"},
           {"pattern", {{"String", " "}}},
           {"content", "▁"}}}}}},
      {"pre_tokenizer", nullptr},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", {"▁ a"}}}}};
  auto parsed = HfTokenizer::parse("llama2.json", tokenizer.dump());
  EXPECT_EQ(tokenTexts(*parsed, "a é"),
            (Texts{"▁a", "▁", "<0xC3>", "<0xA9>"}));
  std::vector<uint32_t> ids;
  parsed->encode("a aé a", ids);
  EXPECT_EQ(parsed->decode(ids), "a aé a");
  EXPECT_EQ(parsed->defaultEndOfDocument()->text, "</s>");
  // A run of byte tokens that is no UTF-8 decodes to one U+FFFD a byte.
  uint32_t leadByte = *parsed->tokenId("<0xC3>");
  EXPECT_EQ(parsed->decode({*parsed->tokenId("a"), leadByte, leadByte}),
            "a\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(HfTokenizerTest, RefusesWhatItDoesNotRunNamingTheField) {
  json wordPiece = byteLevelTokenizer(nullptr);
  wordPiece["model"]["type"] = "WordPiece";
  try {
    HfTokenizer::parse("bert.json", wordPiece.dump());
    FAIL() << "a WordPiece model was accepted";
  } catch (const std::runtime_error &failure) {
    EXPECT_EQ(std::string(failure.what()).find("tokenizer 'bert.json': "
                                               "model.type: \"WordPiece\""),
              0u)
        << failure.what();
  }
  json badMerge = byteLevelTokenizer(nullptr);
  badMerge["model"]["merges"].push_back("x y");
  EXPECT_THROW(HfTokenizer::parse("merge.json", badMerge.dump()),
               std::runtime_error);
  EXPECT_THROW(HfTokenizer::parse("cut.json", "{\"model\": {"),
               std::runtime_error);
}

TEST(HfTokenizerTest, RefusesTextThatIsNotUtf8) {
  auto tokenizer =
      HfTokenizer::parse("gpt2.json", byteLevelTokenizer(nullptr).dump());
  std::vector<uint32_t> ids;
  EXPECT_THROW(tokenizer->encode("caf\xe9", ids), std::runtime_error);
  EXPECT_EQ(findInvalidUtf8("ok \xc3\xa9 \xf0\x9f\x98\x80"),
            std::string_view::npos);
  EXPECT_EQ(findInvalidUtf8("a\xed\xa0\x80"), 1u); // a surrogate
  EXPECT_EQ(findInvalidUtf8("ab\xc0\xaf"), 2u);    // overlong
  EXPECT_EQ(findInvalidUtf8("abc\xe2\x82"), 3u);   // cut short
}

} // namespace
