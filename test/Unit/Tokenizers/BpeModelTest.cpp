//===- BpeModelTest.cpp - merge order, ignore_merges, fallbacks -----------===//

#include "runtime/tokenizers/BpeModel.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace pp::runtime;

namespace {

using Merges = std::vector<std::pair<std::string, std::string>>;

/// A vocabulary of `tokens`, ids in their order.
std::unordered_map<std::string, uint32_t>
vocabularyOf(const std::vector<std::string> &tokens) {
  std::unordered_map<std::string, uint32_t> ids;
  for (const std::string &token : tokens)
    ids.emplace(token, static_cast<uint32_t>(ids.size()));
  return ids;
}

/// The token strings `model` encodes `word` to.
std::vector<std::string> encoded(const BpeModel &model, std::string_view word) {
  std::vector<uint32_t> ids;
  model.encode(word, ids);
  std::vector<std::string> texts;
  for (uint32_t id : ids)
    texts.push_back(*model.tokenText(id));
  return texts;
}

using Texts = std::vector<std::string>;

TEST(BpeModelTest, LowestRankMergesFirst) {
  auto vocabulary = vocabularyOf({"a", "b", "c", "ab", "bc"});
  BpeModel bcFirst(vocabulary, Merges{{"b", "c"}, {"a", "b"}}, {});
  EXPECT_EQ(encoded(bcFirst, "abc"), (Texts{"a", "bc"}));
  BpeModel abFirst(vocabulary, Merges{{"a", "b"}, {"b", "c"}}, {});
  EXPECT_EQ(encoded(abFirst, "abc"), (Texts{"ab", "c"}));
}

TEST(BpeModelTest, MergedTokensMergeAgain) {
  BpeModel model(vocabularyOf({"a", "b", "c", "ab", "abc"}),
                 Merges{{"a", "b"}, {"ab", "c"}}, {});
  EXPECT_EQ(encoded(model, "abcab"), (Texts{"abc", "ab"}));
}

TEST(BpeModelTest, EqualPairsMergeLeftmostFirst) {
  BpeModel model(vocabularyOf({"a", "aa", "aaaa"}),
                 Merges{{"a", "a"}, {"aa", "aa"}}, {});
  EXPECT_EQ(encoded(model, "aaa"), (Texts{"aa", "a"}));
  EXPECT_EQ(encoded(model, "aaaaa"), (Texts{"aaaa", "a"}));
}

TEST(BpeModelTest, EncodingTwiceGivesTheSameTokens) {
  // The second encoding comes from the word cache.
  BpeModel model(vocabularyOf({"a", "b", "ab"}), Merges{{"a", "b"}}, {});
  EXPECT_EQ(encoded(model, "abab"), (Texts{"ab", "ab"}));
  EXPECT_EQ(encoded(model, "abab"), (Texts{"ab", "ab"}));
}

TEST(BpeModelTest, IgnoreMergesTakesAWordThatIsAToken) {
  // "abc" is a token no merge builds (LLaMA 3's vocabulary has such).
  auto vocabulary = vocabularyOf({"a", "b", "c", "ab", "abc"});
  Merges merges{{"a", "b"}};
  BpeModel merging(vocabulary, merges, {});
  EXPECT_EQ(encoded(merging, "abc"), (Texts{"ab", "c"}));
  BpeOptions ignoring;
  ignoring.ignoreMerges = true;
  BpeModel direct(vocabulary, merges, ignoring);
  EXPECT_EQ(encoded(direct, "abc"), (Texts{"abc"}));
  EXPECT_EQ(encoded(direct, "abca"), (Texts{"ab", "c", "a"}));
}

TEST(BpeModelTest, ByteFallbackSpellsUnknownCharactersAsBytes) {
  BpeOptions options;
  options.byteFallback = true;
  options.unknownToken = "<unk>";
  BpeModel model(vocabularyOf({"<unk>", "<0xC3>", "<0xA9>", "c", "a", "f"}),
                 Merges{}, options);
  // é is C3 A9; the emoji's first byte F0 has no token, so it is unknown.
  EXPECT_EQ(encoded(model, "caf\xc3\xa9"),
            (Texts{"c", "a", "f", "<0xC3>", "<0xA9>"}));
  EXPECT_EQ(encoded(model, "a\xf0\x9f\x98\x80"), (Texts{"a", "<unk>"}));
}

TEST(BpeModelTest, UnknownCharactersFuseOrStayApartOrDrop) {
  auto vocabulary = vocabularyOf({"<unk>", "a"});
  BpeOptions apart;
  apart.unknownToken = "<unk>";
  EXPECT_EQ(encoded(BpeModel(vocabulary, Merges{}, apart), "xyaz"),
            (Texts{"<unk>", "<unk>", "a", "<unk>"}));
  BpeOptions fused = apart;
  fused.fuseUnknown = true;
  EXPECT_EQ(encoded(BpeModel(vocabulary, Merges{}, fused), "xyaz"),
            (Texts{"<unk>", "a", "<unk>"}));
  // Without an unknown token Hugging Face drops the character.
  EXPECT_EQ(encoded(BpeModel(vocabulary, Merges{}, {}), "xyaz"),
            (Texts{"a"}));
}

TEST(BpeModelTest, RefusesMergesOutsideTheVocabulary) {
  auto vocabulary = vocabularyOf({"a", "b"});
  try {
    BpeModel(vocabulary, Merges{{"a", "b"}}, {});
    FAIL() << "a merge whose result is no token was accepted";
  } catch (const std::invalid_argument &failure) {
    EXPECT_STREQ(failure.what(),
                 "merge 0 ('a' + 'b'): 'ab' is not in the vocabulary");
  }
  BpeOptions options;
  options.unknownToken = "<unk>";
  EXPECT_THROW(BpeModel(vocabulary, Merges{}, options), std::invalid_argument);
}

TEST(BpeModelTest, VocabularySizeIsOneMoreThanTheLargestId) {
  BpeModel model({{"a", 0}, {"b", 7}}, Merges{}, {});
  EXPECT_EQ(model.vocabularySize(), 8u);
  EXPECT_EQ(model.tokenText(3), nullptr);
  EXPECT_EQ(*model.tokenText(7), "b");
  EXPECT_EQ(model.tokenId("b"), 7u);
  EXPECT_EQ(model.tokenId("c"), std::nullopt);
}

} // namespace
