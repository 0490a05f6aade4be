//===- ByteTokenizer.cpp - one token per byte -----------------------------===//

#include "runtime/data/ByteTokenizer.h"

#include <stdexcept>

namespace pp::runtime {

void appendByteTokens(std::string_view text, std::vector<uint32_t> &tokens) {
  for (char byte : text)
    tokens.push_back(static_cast<unsigned char>(byte));
  tokens.push_back(kEndOfDocumentToken);
}

std::string describeByteToken(uint32_t token) {
  if (token == kEndOfDocumentToken)
    return "<end of document>";
  if (token > kEndOfDocumentToken)
    throw std::runtime_error("token " + std::to_string(token) +
                             " is outside the byte-level vocabulary");
  switch (token) {
  case '\n':
    return "'\\n'";
  case '\t':
    return "'\\t'";
  case '\r':
    return "'\\r'";
  case '\\':
    return "'\\\\'";
  case '\'':
    return "'\\''";
  }
  if (token >= 0x20 && token < 0x7f)
    return std::string("'") + static_cast<char>(token) + "'";
  static const char digits[] = "0123456789abcdef";
  return std::string("'\\x") + digits[token >> 4] + digits[token & 15] + "'";
}

} // namespace pp::runtime
