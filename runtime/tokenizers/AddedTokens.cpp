//===- AddedTokens.cpp - special tokens found in text ---------------------===//

#include "runtime/tokenizers/AddedTokens.h"

#include <algorithm>

namespace pp::runtime {
namespace {

bool isSpace(char byte) {
  return byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r' ||
         byte == '\v' || byte == '\f';
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
    if (token.leftStrip)
      while (begin > textStart && isSpace(text[begin - 1]))
        --begin;
    if (token.rightStrip)
      while (end < text.size() && isSpace(text[end]))
        ++end;
    addText(begin);
    segments.push_back(TextSegment{text.substr(begin, end - begin), token.id,
                                   begin == 0});
    textStart = position = end;
  }
  addText(text.size());
  return segments;
}

} // namespace pp::runtime
