//===- Regex.h - PCRE2 patterns for tokenizer pipelines ---------*- C++ -*-===//
//
// The regular expressions of tokenizer.json's Split pre-tokenizers and
// Replace normalizers, compiled by PCRE2 in UTF mode with Unicode
// properties (\p{L}, \s as Unicode spaces, (?i:...) case folding) and
// JIT-compiled where PCRE2 has a JIT.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_REGEX_H
#define PP_RUNTIME_TOKENIZERS_REGEX_H

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pp::runtime {

/// A compiled pattern. Move-only; matching is const and thread-safe.
class Regex {
public:
  /// How the pattern text reads.
  enum class Syntax { Regex, Literal };

  /// Compiles `pattern`. Throws std::invalid_argument with PCRE2's message
  /// and the offset in the pattern where it stopped.
  explicit Regex(const std::string &pattern, Syntax syntax = Syntax::Regex);
  Regex(Regex &&other) noexcept;
  Regex &operator=(Regex &&other) noexcept;
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;
  ~Regex();

  /// The [begin, end) byte ranges of the non-empty, non-overlapping
  /// matches in `text` (well-formed UTF-8), left to right.
  std::vector<std::pair<size_t, size_t>> matches(std::string_view text) const;

private:
  void release();

  /// The pcre2_code_8.
  void *code = nullptr;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_REGEX_H
