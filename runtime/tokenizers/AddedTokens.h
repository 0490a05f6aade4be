//===- AddedTokens.h - special tokens found in text -------------*- C++ -*-===//
//
// A tokenizer.json's added_tokens (<|endoftext|>, </s>, ...) are matched
// as Hugging Face tokenizers matches them, in the raw text before anything
// else (or, "normalized": true, in the normalized text): at the leftmost
// position where one starts, the longest; lstrip and rstrip extend a match
// over the (Unicode) whitespace before and after it. The text between the
// matches is tokenized by the pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_ADDEDTOKENS_H
#define PP_RUNTIME_TOKENIZERS_ADDEDTOKENS_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pp::runtime {

/// One entry of added_tokens.
struct AddedToken {
  std::string content;
  uint32_t id = 0;
  /// Whether a match takes the whitespace before it.
  bool leftStrip = false;
  /// Whether a match takes the whitespace after it.
  bool rightStrip = false;
};

/// A piece of a text: an added token, or the text between them.
struct TextSegment {
  std::string_view text;
  /// The added token's id; -1 for text between added tokens.
  int64_t addedToken = -1;
  /// Whether the segment starts at the text's first byte.
  bool atStart = false;
};

/// Finds added tokens in texts.
class AddedTokenMatcher {
public:
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  /// `text` cut into added tokens and the (non-empty) text between them.
  std::vector<TextSegment> split(std::string_view text) const;

private:
  /// The index into `tokens` of the longest one at `position`, or -1.
  int longestAt(std::string_view text, size_t position) const;

  std::vector<AddedToken> tokens;
  /// For each first byte, the indices of the tokens starting with it,
  /// longest first.
  std::vector<std::vector<int>> byFirstByte;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_ADDEDTOKENS_H
