//===- Regex.cpp - PCRE2 patterns for tokenizer pipelines -----------------===//

#include "runtime/tokenizers/Regex.h"

#include "runtime/tokenizers/Utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <stdexcept>

namespace pp::runtime {
namespace {

pcre2_code *asCode(void *code) { return static_cast<pcre2_code *>(code); }

std::string pcre2Message(int errorCode) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(errorCode, buffer, sizeof(buffer));
  return reinterpret_cast<const char *>(buffer);
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data *data) const { pcre2_match_data_free(data); }
};

} // namespace

Regex::Regex(const std::string &pattern, Syntax syntax) {
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (syntax == Syntax::Literal)
    options = PCRE2_UTF | PCRE2_LITERAL;
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                       pattern.size(), options, &errorCode, &errorOffset,
                       nullptr);
  if (!code)
    throw std::invalid_argument("the pattern does not compile (PCRE2: " +
                                pcre2Message(errorCode) + " at offset " +
                                std::to_string(errorOffset) + ")");
  // Without a JIT (a PCRE2 built without it) the interpreter matches alike.
  pcre2_jit_compile(asCode(code), PCRE2_JIT_COMPLETE);
}

Regex::Regex(Regex &&other) noexcept : code(other.code) { other.code = nullptr; }

Regex &Regex::operator=(Regex &&other) noexcept {
  if (this != &other) {
    release();
    code = other.code;
    other.code = nullptr;
  }
  return *this;
}

Regex::~Regex() { release(); }

void Regex::release() {
  pcre2_code_free(asCode(code));
  code = nullptr;
}

std::vector<std::pair<size_t, size_t>>
Regex::matches(std::string_view text) const {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
      pcre2_match_data_create_from_pattern(asCode(code), nullptr));
  std::vector<std::pair<size_t, size_t>> found;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start < text.size()) {
    int result = pcre2_match(asCode(code), subject, text.size(), start,
                             PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (result == PCRE2_ERROR_NOMATCH)
      break;
    if (result < 0)
      throw std::runtime_error("matching a tokenizer pattern failed (PCRE2: " +
                               pcre2Message(result) + ")");
    PCRE2_SIZE *range = pcre2_get_ovector_pointer(data.get());
    if (range[1] > range[0]) {
      found.emplace_back(range[0], range[1]);
      start = range[1];
    } else if (range[0] < text.size()) {
      // An empty match is no piece; look again one character on.
      start = range[0] + utf8SequenceLength(
                             static_cast<unsigned char>(text[range[0]]));
    } else {
      break;
    }
  }
  return found;
}

} // namespace pp::runtime
