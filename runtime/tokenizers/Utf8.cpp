//===- Utf8.cpp - UTF-8 sequences -----------------------------------------===//

#include "runtime/tokenizers/Utf8.h"

namespace pp::runtime {

size_t findInvalidUtf8(std::string_view text) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
  size_t size = text.size();
  for (size_t i = 0; i < size;) {
    unsigned char lead = bytes[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The range of the second byte narrows for E0 (no overlong form), ED
    // (no surrogate), F0 (no overlong form) and F4 (at most U+10FFFF).
    size_t length;
    unsigned char low = 0x80, high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0)
        low = 0xa0;
      if (lead == 0xed)
        high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0)
        low = 0x90;
      if (lead == 0xf4)
        high = 0x8f;
    } else {
      return i;
    }
    if (i + length > size)
      return i;
    if (bytes[i + 1] < low || bytes[i + 1] > high)
      return i;
    for (size_t k = 2; k < length; ++k)
      if (bytes[i + k] < 0x80 || bytes[i + k] > 0xbf)
        return i;
    i += length;
  }
  return std::string_view::npos;
}

void appendUtf8(uint32_t codePoint, std::string &out) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xc0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xe0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  }
}

uint32_t decodeUtf8(std::string_view text) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
  size_t length = utf8SequenceLength(bytes[0]);
  if (length == 1)
    return bytes[0];
  uint32_t codePoint = bytes[0] & (0x7f >> length);
  for (size_t k = 1; k < length; ++k)
    codePoint = (codePoint << 6) | (bytes[k] & 0x3f);
  return codePoint;
}

} // namespace pp::runtime
