//===- ByteLevel.h - GPT-2's bytes as characters ----------------*- C++ -*-===//
//
// Byte-level BPE (GPT-2, LLaMA 3, Qwen) works on bytes spelled as
// printable characters: GPT-2's bytes_to_unicode maps each of the 256
// bytes to one code point (the printable Latin-1 ones to themselves, the
// others to U+0100 and up), so that every text is a string of vocabulary
// characters.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_BYTELEVEL_H
#define PP_RUNTIME_TOKENIZERS_BYTELEVEL_H

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>

namespace pp::runtime {

/// The pre-tokenizer regex of GPT-2, which a ByteLevel pre-tokenizer with
/// use_regex splits by.
extern const char kGpt2PreTokenizerRegex[];

/// GPT-2's byte <-> character mapping.
class ByteLevelAlphabet {
public:
  /// The one mapping (built on first use).
  static const ByteLevelAlphabet &get();

  /// Appends the characters (UTF-8) that spell the bytes of `bytes`.
  void spell(std::string_view bytes, std::string &out) const;
  /// Appends the bytes that the characters of `text` (UTF-8) spell; a
  /// character outside the alphabet stands for itself.
  void unspell(std::string_view text, std::string &out) const;

private:
  ByteLevelAlphabet();

  /// Each byte's character, in UTF-8.
  std::array<std::string, 256> characters;
  /// Each character's byte, by code point.
  std::unordered_map<uint32_t, unsigned char> bytes;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_BYTELEVEL_H
