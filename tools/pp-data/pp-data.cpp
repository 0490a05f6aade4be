//===- pp-data.cpp - packs and inspects token datasets ----------*- C++ -*-===//
//
// `pp-data pack` turns text files and JSON Lines records into a pp token
// dataset with the byte-level tokenizer or a model's (tokenizer.json,
// SentencePiece); `pp-data inspect` verifies a token file (pp's format or
// a flat nanoGPT-style one) and prints its header, a histogram of its most
// frequent tokens and, given the tokenizer, its first tokens decoded. See
// docs/tools/pp-data.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/ByteTokenizer.h"
#include "runtime/data/TokenDataset.h"
#include "runtime/tokenizers/Documents.h"
#include "runtime/tokenizers/Tokenizer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>
#include <map>
#include <vector>

using namespace llvm;
using namespace pp::runtime;

namespace {

cl::OptionCategory dataCategory("pp-data options");

cl::SubCommand packCommand("pack",
                           "Pack text files and JSON Lines into a pp token "
                           "dataset (byte-level tokens or a model's "
                           "tokenizer)");
cl::SubCommand
    inspectCommand("inspect",
                   "Verify a token file and print its header and a histogram "
                   "(and, with --tokenizer, its first tokens decoded)");

// Required arguments are checked after parsing, so that their absence is
// reported like every other error.
cl::list<std::string> packInputs(cl::Positional, cl::ZeroOrMore,
                                 cl::desc("<input.txt|input.jsonl...>"),
                                 cl::cat(dataCategory), cl::sub(packCommand));
cl::opt<std::string> packOutput("o", cl::desc("The token dataset to write"),
                                cl::value_desc("file"), cl::cat(dataCategory),
                                cl::sub(packCommand));
cl::opt<std::string> inspectInput(cl::Positional, cl::desc("<token file>"),
                                  cl::cat(dataCategory),
                                  cl::sub(inspectCommand));
cl::opt<int> tokenWidth(
    "token-width", cl::init(0),
    cl::desc("Bytes per token, 2 or 4 (pack: default 2, or 4 for a "
             "vocabulary of more than 65536 tokens; inspect: required for a "
             "flat uint16/uint32 file)"),
    cl::value_desc("2|4"), cl::cat(dataCategory), cl::sub(packCommand),
    cl::sub(inspectCommand));

cl::opt<std::string> tokenizerPath(
    "tokenizer",
    cl::desc("The model's tokenizer: a Hugging Face tokenizer.json or a "
             "SentencePiece tokenizer.model (pack: default pp's byte-level "
             "tokenizer; inspect: decodes the first tokens)"),
    cl::value_desc("file"), cl::cat(dataCategory), cl::sub(packCommand),
    cl::sub(inspectCommand));
cl::opt<std::string> textField(
    "text-field", cl::init("text"),
    cl::desc("The field of each JSON Lines record (*.jsonl, *.ndjson) that "
             "holds its text"),
    cl::value_desc("name"), cl::cat(dataCategory), cl::sub(packCommand));
cl::opt<std::string> endOfDocumentChoice(
    "eod-token",
    cl::desc("The token after each document, by its text or id (default: "
             "the tokenizer's, see docs/tools/pp-data.md)"),
    cl::value_desc("text|id"), cl::cat(dataCategory), cl::sub(packCommand));
cl::opt<int64_t> sampleTokens(
    "sample-tokens", cl::init(256),
    cl::desc("How many of the first tokens inspect --tokenizer decodes"),
    cl::value_desc("N"), cl::cat(dataCategory), cl::sub(inspectCommand));

/// How many of the most frequent tokens inspect lists.
constexpr size_t kHistogramRows = 16;
/// The widest bar of the histogram, in characters.
constexpr int kBarWidth = 40;

int error(const Twine &message) {
  WithColor::error(errs(), "pp-data") << message << "\n";
  return 1;
}

/// LLVM's command-line errors without the "pp-data: " each line starts with.
std::string withoutProgramName(StringRef messages) {
  SmallVector<StringRef> lines;
  messages.trim().split(lines, '\n');
  std::string result;
  for (StringRef line : lines) {
    line = line.trim();
    line.consume_front("pp-data: ");
    result += (result.empty() ? "" : "\n") + line.str();
  }
  return result;
}

/// The token after each document for `tokenizer`: --eod-token's, else
/// the tokenizer's own.
EndOfDocumentToken endOfDocument(const Tokenizer &tokenizer) {
  const std::string &choice = endOfDocumentChoice;
  if (choice.empty()) {
    if (std::optional<EndOfDocumentToken> token =
            tokenizer.defaultEndOfDocument())
      return *token;
    throw std::runtime_error(
        "the tokenizer '" + tokenizerPath +
        "' has no end-of-document token pp knows (it takes " +
        tokenizer.endOfDocumentRule() +
        "); pass --eod-token TEXT or --eod-token ID with the token that "
        "ends the model's training documents");
  }
  if (choice.find_first_not_of("0123456789") == std::string::npos) {
    uint64_t id = choice.size() > 10 ? std::numeric_limits<uint64_t>::max()
                                     : std::stoull(choice);
    if (id >= tokenizer.vocabularySize())
      throw std::runtime_error(
          "--eod-token " + choice + ": the tokenizer '" + tokenizerPath +
          "' has " + std::to_string(tokenizer.vocabularySize()) +
          " tokens (ids 0 to " +
          std::to_string(tokenizer.vocabularySize() - 1) +
          "); pass an id below that or the token's text");
    uint32_t token = static_cast<uint32_t>(id);
    return EndOfDocumentToken{token, tokenizer.tokenText(token),
                              "--eod-token"};
  }
  if (std::optional<uint32_t> id = tokenizer.tokenId(choice))
    return EndOfDocumentToken{*id, choice, "--eod-token"};
  throw std::runtime_error("--eod-token '" + choice + "': the tokenizer '" +
                           tokenizerPath +
                           "' has no such token; pass a token's exact text "
                           "(such as <|endoftext|> or </s>) or its id");
}

/// The token width for `vocabulary`: --token-width's when it holds every
/// token, else 2 where that does, else 4. Throws for a --token-width 2
/// that does not hold the vocabulary.
int chooseTokenWidth(uint32_t vocabulary) {
  constexpr uint32_t kTwoByteTokens = 65536;
  if (tokenWidth == 2 && vocabulary > kTwoByteTokens)
    throw std::runtime_error(
        "the tokenizer '" + tokenizerPath + "' has " +
        std::to_string(vocabulary) +
        " tokens, more than --token-width 2 holds (65536); pass "
        "--token-width 4 (or leave it out: pack then chooses 4)");
  if (tokenWidth)
    return tokenWidth;
  return vocabulary > kTwoByteTokens ? 4 : 2;
}

/// Where the document at `place` is, for messages.
std::string describePlace(const DocumentPlace &place) {
  if (place.line == 0)
    return "the input '" + place.path + "'";
  return place.path + ":" + std::to_string(place.line) + " (field \"" +
         textField + "\")";
}

int pack() {
  if (packInputs.empty() || packOutput.empty())
    return error("pack needs text files and an output: pp-data pack "
                 "INPUT.txt... -o DATA");
  for (const std::string &input : packInputs) {
    bool same = false;
    if (!sys::fs::equivalent(input, packOutput, same) && same)
      return error("the output '" + packOutput + "' is the input '" + input +
                   "'; packing would replace the text with its tokens: "
                   "write the dataset to another file");
  }
  if (tokenizerPath.empty() && !endOfDocumentChoice.empty())
    return error("--eod-token needs --tokenizer: the byte-level tokenizer "
                 "ends each document with its token 256");
  std::unique_ptr<Tokenizer> tokenizer;
  EndOfDocumentToken endToken;
  if (!tokenizerPath.empty()) {
    tokenizer = loadTokenizer(tokenizerPath);
    endToken = endOfDocument(*tokenizer);
  }
  uint32_t vocabulary =
      tokenizer ? tokenizer->vocabularySize() : kByteVocabulary;
  int width = chooseTokenWidth(vocabulary);

  std::vector<uint32_t> tokens;
  size_t textBytes = 0;
  int64_t documents = 0;
  for (const std::string &input : packInputs)
    forEachDocument(input, textField,
                    [&](std::string_view text, const DocumentPlace &place) {
                      textBytes += text.size();
                      ++documents;
                      if (!tokenizer) {
                        appendByteTokens(text, tokens);
                        return;
                      }
                      try {
                        tokenizer->encode(text, tokens);
                      } catch (const std::runtime_error &failure) {
                        throw std::runtime_error(describePlace(place) + ": " +
                                                 failure.what());
                      }
                      tokens.push_back(endToken.id);
                    });
  if (sys::fs::is_directory(packOutput))
    return error("the output '" + packOutput +
                 "' is a directory; name the file to write in it");
  if (textBytes == 0)
    return error("the inputs hold no text (all " + Twine(packInputs.size()) +
                 " are empty); nothing to pack");
  writeTokenDataset(packOutput, tokens, documents, vocabulary, width);
  outs() << "packed " << documents
         << (documents == 1 ? " document, " : " documents, ") << tokens.size()
         << " tokens of " << width << " bytes into '" << packOutput << "' ("
         << kTokenDatasetHeaderBytes + tokens.size() * width
         << " bytes written)\n";
  if (tokenizer) {
    outs() << "tokenizer: " << tokenizer->describe() << " '" << tokenizerPath
           << "', " << vocabulary << " tokens; end of document: token "
           << endToken.id << " '" << endToken.text << "' ("
           << endToken.reason << ")\n";
    if (!tokenWidth && width == 4)
      outs() << "token width 4: " << vocabulary
             << " tokens do not fit in 2 bytes\n";
  }
  return 0;
}

/// How often each token occurs: dense below a bound, in a map above it (a
/// flat uint32 file may hold any token).
class TokenCounts {
public:
  explicit TokenCounts(uint32_t maxToken)
      : dense(std::min<uint64_t>(uint64_t(maxToken) + 1, 1 << 24)) {}

  void add(uint32_t token) {
    if (token < dense.size())
      ++dense[token];
    else
      ++sparse[token];
  }

  /// (token, count) for every token that occurs.
  std::vector<std::pair<uint32_t, int64_t>> occurring() const {
    std::vector<std::pair<uint32_t, int64_t>> result;
    for (size_t token = 0; token < dense.size(); ++token)
      if (dense[token])
        result.emplace_back(token, dense[token]);
    result.insert(result.end(), sparse.begin(), sparse.end());
    return result;
  }

private:
  std::vector<int64_t> dense;
  std::map<uint32_t, int64_t> sparse;
};

void printField(StringRef name, const Twine &value) {
  outs() << left_justify(name, 16) << value << "\n";
}

/// Token `token` as `tokenizer` spells it, quoted, with C escapes for
/// control characters.
std::string describeTokenText(const Tokenizer &tokenizer, uint32_t token) {
  std::string quoted = "'";
  for (char c : tokenizer.tokenText(token)) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\n')
      quoted += "\\n";
    else if (c == '\t')
      quoted += "\\t";
    else if (c == '\r')
      quoted += "\\r";
    else if (byte < 0x20 || byte == 0x7f)
      quoted += "\\x" + utohexstr(byte, /*LowerCase=*/true, /*Width=*/2);
    else
      quoted += c;
  }
  return quoted + "'";
}

/// `text` (UTF-8) padded with spaces to `columns` characters.
std::string padToColumns(const std::string &text, size_t columns) {
  size_t characters = 0;
  for (char c : text)
    characters += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return text + std::string(columns > characters ? columns - characters : 0,
                            ' ');
}

void printHistogram(const TokenDataset &dataset, const Tokenizer *tokenizer) {
  TokenCounts counts(dataset.maxToken());
  std::vector<int64_t> chunk(1 << 20);
  for (int64_t first = 0; first < dataset.size();) {
    int64_t count = std::min<int64_t>(chunk.size(), dataset.size() - first);
    dataset.read(first, count, chunk.data());
    for (int64_t i = 0; i < count; ++i)
      counts.add(static_cast<uint32_t>(chunk[i]));
    first += count;
  }
  std::vector<std::pair<uint32_t, int64_t>> rows = counts.occurring();
  size_t distinct = rows.size();
  size_t shown = std::min(kHistogramRows, distinct);
  std::partial_sort(rows.begin(), rows.begin() + shown, rows.end(),
                    [](const auto &a, const auto &b) {
                      return a.second != b.second ? a.second > b.second
                                                  : a.first < b.first;
                    });
  rows.resize(shown);

  const TokenDatasetHeader *header = dataset.header();
  bool bytes = !tokenizer && header && header->vocabulary == kByteVocabulary;
  outs() << "\nmost frequent tokens:\n" << right_justify("token", 10) << "  ";
  if (bytes || tokenizer)
    outs() << left_justify("text", 18);
  outs() << right_justify("count", 12) << right_justify("share", 9) << "\n";
  for (const auto &[token, count] : rows) {
    outs() << right_justify(std::to_string(token), 10) << "  ";
    if (bytes)
      outs() << left_justify(describeByteToken(token), 18);
    if (tokenizer)
      outs() << padToColumns(describeTokenText(*tokenizer, token), 18);
    int bar = static_cast<int>(kBarWidth * count / rows.front().second);
    outs() << right_justify(std::to_string(count), 12)
           << format("%8.2f%%", 100.0 * count / dataset.size()) << "  "
           << std::string(std::max(bar, 1), '#') << "\n";
  }
  printField("distinct tokens", Twine(distinct));
}

/// Refuses a tokenizer that cannot be the one `dataset` was packed with.
void checkTokenizerFits(const TokenDataset &dataset,
                        const Tokenizer &tokenizer) {
  uint32_t vocabulary = tokenizer.vocabularySize();
  const TokenDatasetHeader *header = dataset.header();
  if (header && header->vocabulary != vocabulary)
    throw std::runtime_error(
        "the dataset '" + dataset.path() + "' declares a vocabulary of " +
        std::to_string(header->vocabulary) + " tokens, the tokenizer '" +
        tokenizerPath + "' has " + std::to_string(vocabulary) +
        ": it was packed with another tokenizer; pass that one");
  if (dataset.maxToken() >= vocabulary)
    throw std::runtime_error(
        "the dataset '" + dataset.path() + "' holds token " +
        std::to_string(dataset.maxToken()) + ", outside the tokenizer '" +
        tokenizerPath + "' of " + std::to_string(vocabulary) +
        " tokens; pass the tokenizer it was made with");
}

/// Prints the first --sample-tokens tokens of `dataset` decoded.
void printDecodedSample(const TokenDataset &dataset,
                        const Tokenizer &tokenizer) {
  int64_t count = std::min<int64_t>(sampleTokens, dataset.size());
  std::vector<int64_t> read(count);
  dataset.read(0, count, read.data());
  std::vector<uint32_t> tokens(read.begin(), read.end());
  std::string text = tokenizer.decode(tokens);
  outs() << "\nthe first " << count << " of " << dataset.size()
         << " tokens, decoded:\n"
         << text << (text.empty() || text.back() != '\n' ? "\n" : "");
}

int inspect() {
  if (inspectInput.empty())
    return error("inspect needs a token file: pp-data inspect DATA "
                 "[--token-width 2|4]");
  if (sampleTokens < 1)
    return error("--sample-tokens must be at least 1, got " +
                 Twine(sampleTokens));
  if (sampleTokens.getNumOccurrences() && tokenizerPath.empty())
    return error("--sample-tokens needs --tokenizer, the tokenizer that "
                 "decodes the sample");
  std::unique_ptr<TokenDataset> dataset =
      TokenDataset::open(inspectInput, tokenWidth);
  std::unique_ptr<Tokenizer> tokenizer;
  if (!tokenizerPath.empty()) {
    tokenizer = loadTokenizer(tokenizerPath);
    checkTokenizerFits(*dataset, *tokenizer);
  }
  const TokenDatasetHeader *header = dataset->header();
  std::string width = std::to_string(dataset->tokenWidth());
  const char *none = "unknown (a flat file does not record it)";
  if (header)
    printField("format", "pp token dataset, version " + Twine(header->version));
  else
    printField("format", "flat little-endian uint" +
                             std::to_string(dataset->tokenWidth() * 8) +
                             " tokens (no header)");
  printField("token width", width + " bytes");
  printField("tokens", Twine(dataset->size()));
  printField("documents", header ? Twine(header->documents) : Twine(none));
  printField("vocabulary",
             header ? Twine(header->vocabulary) + " (declared)" : Twine(none));
  printField("max token", Twine(dataset->maxToken()));
  printField("checksum", header ? "sha256 " + header->checksum + " (verified)"
                                : Twine("none (a flat file has none)"));
  printHistogram(*dataset, tokenizer.get());
  if (tokenizer)
    printDecodedSample(*dataset, *tokenizer);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(dataCategory);
  std::string usageProblems;
  raw_string_ostream usageStream(usageProblems);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "pp-data: packs and inspects token datasets\n\n"
          "  pp-data pack INPUT.txt|INPUT.jsonl... -o DATA [--tokenizer "
          "FILE]\n"
          "               [--text-field NAME] [--eod-token TEXT|ID] "
          "[--token-width 2|4]\n"
          "  pp-data inspect DATA [--token-width 2|4] [--tokenizer FILE "
          "[--sample-tokens N]]\n",
          &usageStream))
    return error(withoutProgramName(usageProblems));
  if (tokenWidth.getNumOccurrences() && tokenWidth != 2 && tokenWidth != 4)
    return error("--token-width must be 2 or 4, got " + Twine(tokenWidth));
  try {
    if (packCommand)
      return pack();
    if (inspectCommand)
      return inspect();
  } catch (const std::exception &failure) {
    return error(failure.what());
  }
  return error("name a command: pp-data pack or pp-data inspect (see "
               "pp-data --help)");
}
