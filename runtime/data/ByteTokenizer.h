//===- ByteTokenizer.h - one token per byte ---------------------*- C++ -*-===//
//
// pp-data pack's tokenizer: every byte of a text is its own token 0..255,
// and token 256 ends each document. Its vocabulary has 257 tokens.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_BYTETOKENIZER_H
#define PP_RUNTIME_BYTETOKENIZER_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pp::runtime {

/// The token that ends a document.
constexpr uint32_t kEndOfDocumentToken = 256;
/// The byte-level tokenizer's vocabulary size.
constexpr uint32_t kByteVocabulary = 257;

/// Appends the tokens of the document `text` to `tokens`: its bytes, then
/// kEndOfDocumentToken.
void appendByteTokens(std::string_view text, std::vector<uint32_t> &tokens);

/// How a token of the byte-level tokenizer reads: the quoted character for
/// printable ASCII ('a', ' '), C escapes for the others ('\n', '\x07'),
/// <end of document> for kEndOfDocumentToken.
std::string describeByteToken(uint32_t token);

} // namespace pp::runtime

#endif // PP_RUNTIME_BYTETOKENIZER_H
