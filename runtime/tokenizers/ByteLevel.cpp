//===- ByteLevel.cpp - GPT-2's bytes as characters ------------------------===//

#include "runtime/tokenizers/ByteLevel.h"

#include "runtime/tokenizers/Utf8.h"

namespace pp::runtime {

const char kGpt2PreTokenizerRegex[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

const ByteLevelAlphabet &ByteLevelAlphabet::get() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

ByteLevelAlphabet::ByteLevelAlphabet() {
  // bytes_to_unicode: '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for
  // themselves; the other bytes, in order, for U+0100, U+0101, ...
  uint32_t next = 0x100;
  for (uint32_t byte = 0; byte < 256; ++byte) {
    bool printable = (byte >= '!' && byte <= '~') ||
                     (byte >= 0xa1 && byte <= 0xac) || byte >= 0xae;
    uint32_t codePoint = printable ? byte : next++;
    appendUtf8(codePoint, characters[byte]);
    bytes.emplace(codePoint, static_cast<unsigned char>(byte));
  }
}

void ByteLevelAlphabet::spell(std::string_view text, std::string &out) const {
  for (char byte : text)
    out += characters[static_cast<unsigned char>(byte)];
}

void ByteLevelAlphabet::unspell(std::string_view text, std::string &out) const {
  for (size_t i = 0; i < text.size();) {
    size_t length = utf8SequenceLength(static_cast<unsigned char>(text[i]));
    auto found = bytes.find(decodeUtf8(text.substr(i)));
    if (found != bytes.end())
      out += static_cast<char>(found->second);
    else
      out += text.substr(i, length);
    i += length;
  }
}

} // namespace pp::runtime
