//===- Utf8.h - UTF-8 sequences ---------------------------------*- C++ -*-===//
//
// The UTF-8 a tokenizer.json pipeline takes and makes: validation (text
// that is not UTF-8 is refused, as Hugging Face tokenizers take only
// strings), sequence lengths and encoding a code point.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_UTF8_H
#define PP_RUNTIME_TOKENIZERS_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pp::runtime {

/// The byte offset of the first byte of `text` that does not start or
/// continue a well-formed UTF-8 sequence (no overlong form, no surrogate,
/// nothing above U+10FFFF), or std::string_view::npos when all is UTF-8.
size_t findInvalidUtf8(std::string_view text);

/// The length in bytes of the UTF-8 sequence whose first byte is `lead`,
/// for well-formed text.
inline size_t utf8SequenceLength(unsigned char lead) {
  if (lead < 0x80)
    return 1;
  if (lead < 0xe0)
    return 2;
  return lead < 0xf0 ? 3 : 4;
}

/// Appends the UTF-8 encoding of `codePoint` to `out`.
void appendUtf8(uint32_t codePoint, std::string &out);

/// The code point of the well-formed UTF-8 sequence at the start of
/// `text`.
uint32_t decodeUtf8(std::string_view text);

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_UTF8_H
