//===- Tokenizer.cpp - telling tokenizer files apart ----------------------===//

#include "runtime/tokenizers/Tokenizer.h"

#include "runtime/core/InputFile.h"
#include "runtime/tokenizers/HfTokenizer.h"
#include "runtime/tokenizers/SentencePieceTokenizer.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>

namespace pp::runtime {
namespace {

/// The first byte of a serialized SentencePiece ModelProto: field 1
/// (pieces), length-delimited.
constexpr char kModelProtoStart = 0x0a;

std::string readTokenizerFile(const std::string &path) {
  struct stat status;
  if (::stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode))
    throw std::runtime_error("tokenizer '" + path +
                             "': it is a directory; name the tokenizer.json "
                             "or tokenizer.model in it");
  return readInputFile(path, "the tokenizer");
}

} // namespace

std::unique_ptr<Tokenizer> loadTokenizer(const std::string &path) {
  std::string content = readTokenizerFile(path);
  size_t first = content.find_first_not_of(" \t\r\n");
  // A UTF-8 byte order mark may precede the JSON.
  if (content.compare(0, 3, "\xef\xbb\xbf") == 0)
    first = content.find_first_not_of(" \t\r\n", 3);
  if (first != std::string::npos && content[first] == '{')
    return HfTokenizer::parse(path, content);
  if (!content.empty() && content[0] == kModelProtoStart)
    return SentencePieceTokenizer::load(path, content);
  throw std::runtime_error(
      "tokenizer '" + path + "': " +
      (content.empty() ? std::string("the file is empty")
                       : "not a tokenizer file pp reads") +
      "; pass a Hugging Face tokenizer.json (a JSON object) or a "
      "SentencePiece model (tokenizer.model)");
}

} // namespace pp::runtime
