//===- AddedTokens.cpp - special tokens found in text ---------------------===//

#include "runtime/tokenizers/AddedTokens.h"

#include "runtime/tokenizers/Utf8.h"

#include <algorithm>

namespace pp::runtime {
namespace {

/// Unicode's White_Space property, which Rust's char::is_whitespace (and
/// so Hugging Face's lstrip and rstrip) tests.
bool isWhiteSpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
         c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/// The start of the character that ends before `end` in `text`.
size_t previousCharacter(std::string_view text, size_t end) {
  size_t begin = end - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xc0) == 0x80)
    --begin;
  return begin;
}

} // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> addedTokens)
    : tokens(std::move(addedTokens)), byFirstByte(256) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!tokens[i].content.empty())
      byFirstByte[static_cast<unsigned char>(tokens[i].content[0])].push_back(
          static_cast<int>(i));
  for (std::vector<int> &candidates : byFirstByte)
    std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      return tokens[a].content.size() > tokens[b].content.size();
    });
}

int AddedTokenMatcher::longestAt(std::string_view text, size_t position) const {
  for (int candidate :
       byFirstByte[static_cast<unsigned char>(text[position])])
    if (text.compare(position, tokens[candidate].content.size(),
                     tokens[candidate].content) == 0)
      return candidate;
  return -1;
}

std::vector<TextSegment>
AddedTokenMatcher::split(std::string_view text) const {
  std::vector<TextSegment> segments;
  size_t textStart = 0;
  auto addText = [&](size_t end) {
    if (end > textStart)
      segments.push_back(TextSegment{text.substr(textStart, end - textStart),
                                     -1, textStart == 0});
  };
  for (size_t position = 0; position < text.size();) {
    int found = tokens.empty() ? -1 : longestAt(text, position);
    if (found < 0) {
      ++position;
      continue;
    }
    const AddedToken &token = tokens[found];
    size_t begin = position, end = position + token.content.size();
    while (token.leftStrip && begin > textStart) {
      size_t previous = previousCharacter(text, begin);
      if (previous < textStart || !isWhiteSpace(decodeUtf8(text.substr(previous))))
        break;
      begin = previous;
    }
    while (token.rightStrip && end < text.size() &&
           isWhiteSpace(decodeUtf8(text.substr(end))))
      end += utf8SequenceLength(static_cast<unsigned char>(text[end]));
    addText(begin);
    segments.push_back(TextSegment{text.substr(begin, end - begin), token.id,
                                   begin == 0});
    textStart = position = end;
  }
  addText(text.size());
  return segments;
}

} // namespace pp::runtime
