//===- AddedTokensTest.cpp - special tokens cut out of text ---------------===//

#include "runtime/tokenizers/AddedTokens.h"

#include <gtest/gtest.h>

using namespace pp::runtime;

namespace {

/// The segments of `text` as "TEXT" or "#ID".
std::vector<std::string> segmentsOf(const AddedTokenMatcher &matcher,
                                    std::string_view text) {
  std::vector<std::string> result;
  for (const TextSegment &segment : matcher.split(text))
    result.push_back(segment.addedToken >= 0
                         ? "#" + std::to_string(segment.addedToken)
                         : std::string(segment.text));
  return result;
}

using Texts = std::vector<std::string>;

TEST(AddedTokensTest, CutsTokensOutAndKeepsTheTextBetween) {
  AddedTokenMatcher matcher({{"<|endoftext|>", 0}, {"</s>", 2}});
  EXPECT_EQ(segmentsOf(matcher, "a<|endoftext|>b </s></s>c"),
            (Texts{"a", "#0", "b ", "#2", "#2", "c"}));
  EXPECT_EQ(segmentsOf(matcher, "no specials <|endof"),
            (Texts{"no specials <|endof"}));
}

TEST(AddedTokensTest, TheLongestTokenAtAPositionWins) {
  AddedTokenMatcher matcher({{"<|e", 5}, {"<|eot|>", 6}});
  EXPECT_EQ(segmentsOf(matcher, "x<|eot|>y<|ex"),
            (Texts{"x", "#6", "y", "#5", "x"}));
}

TEST(AddedTokensTest, StripTakesTheWhitespaceAround) {
  AddedToken mask{"<mask>", 9, /*leftStrip=*/true, /*rightStrip=*/false};
  AddedToken sep{"<sep>", 8, /*leftStrip=*/false, /*rightStrip=*/true};
  AddedTokenMatcher matcher({mask, sep});
  std::vector<TextSegment> segments = matcher.split("a  <mask> b<sep> \nc");
  ASSERT_EQ(segments.size(), 5u);
  EXPECT_EQ(segments[0].text, "a");
  EXPECT_EQ(segments[1].text, "  <mask>");
  EXPECT_EQ(segments[2].text, " b");
  EXPECT_EQ(segments[3].text, "<sep> \n");
  EXPECT_EQ(segments[4].text, "c");
}

TEST(AddedTokensTest, StripTakesUnicodeWhitespaceToo) {
  // A no-break space and an ideographic space are whitespace to Hugging
  // Face's lstrip and rstrip; é (C3 A9) is not.
  AddedToken eot{"<eot>", 3, /*leftStrip=*/true, /*rightStrip=*/true};
  AddedTokenMatcher matcher({eot});
  std::vector<TextSegment> segments =
      matcher.split("\xc3\xa9\xc2\xa0<eot>\xe3\x80\x80\xc3\xa9");
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0].text, "\xc3\xa9");
  EXPECT_EQ(segments[1].text, "\xc2\xa0<eot>\xe3\x80\x80");
  EXPECT_EQ(segments[2].text, "\xc3\xa9");
}

TEST(AddedTokensTest, OnlyTheFirstSegmentStartsTheText) {
  AddedTokenMatcher matcher({{"<s>", 1}});
  std::vector<TextSegment> segments = matcher.split("<s>x<s>");
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_TRUE(segments[0].atStart);
  EXPECT_FALSE(segments[1].atStart);
  EXPECT_FALSE(segments[2].atStart);
  EXPECT_TRUE(AddedTokenMatcher({}).split("plain").at(0).atStart);
}

} // namespace
