//===- pp-data.cpp - packs and inspects token datasets ----------*- C++ -*-===//
//
// `pp-data pack` turns text files into a pp token dataset with the
// byte-level tokenizer; `pp-data inspect` verifies a token file (pp's
// format or a flat nanoGPT-style one) and prints its header and a
// histogram of its most frequent tokens. See docs/tools/pp-data.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/ByteTokenizer.h"
#include "runtime/data/TokenDataset.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <vector>

using namespace llvm;
using namespace pp::runtime;

namespace {

cl::OptionCategory dataCategory("pp-data options");

cl::SubCommand packCommand("pack",
                           "Pack text files into a pp token dataset (one "
                           "document per file, byte-level tokens)");
cl::SubCommand
    inspectCommand("inspect",
                   "Verify a token file and print its header and a histogram");

// Required arguments are checked after parsing, so that their absence is
// reported like every other error.
cl::list<std::string> packInputs(cl::Positional, cl::ZeroOrMore,
                                 cl::desc("<input.txt...>"),
                                 cl::cat(dataCategory), cl::sub(packCommand));
cl::opt<std::string> packOutput("o", cl::desc("The token dataset to write"),
                                cl::value_desc("file"), cl::cat(dataCategory),
                                cl::sub(packCommand));
cl::opt<std::string> inspectInput(cl::Positional, cl::desc("<token file>"),
                                  cl::cat(dataCategory),
                                  cl::sub(inspectCommand));
cl::opt<int> tokenWidth(
    "token-width", cl::init(0),
    cl::desc("Bytes per token, 2 or 4 (pack: default 2; inspect: required "
             "for a flat uint16/uint32 file)"),
    cl::value_desc("2|4"), cl::cat(dataCategory), cl::sub(packCommand),
    cl::sub(inspectCommand));

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
  int width = tokenWidth ? tokenWidth : 2;
  std::vector<uint32_t> tokens;
  size_t textBytes = 0;
  for (const std::string &input : packInputs) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> text =
        MemoryBuffer::getFile(input, /*IsText=*/false,
                              /*RequiresNullTerminator=*/false);
    if (!text)
      return error("cannot read the input '" + input +
                   "': " + text.getError().message());
    textBytes += (*text)->getBufferSize();
    appendByteTokens((*text)->getBuffer(), tokens);
  }
  if (sys::fs::is_directory(packOutput))
    return error("the output '" + packOutput +
                 "' is a directory; name the file to write in it");
  if (textBytes == 0)
    return error("the inputs hold no text (all " + Twine(packInputs.size()) +
                 " are empty); nothing to pack");
  writeTokenDataset(packOutput, tokens, packInputs.size(), kByteVocabulary,
                    width);
  outs() << "packed " << packInputs.size()
         << (packInputs.size() == 1 ? " document, " : " documents, ")
         << tokens.size() << " tokens of " << width << " bytes into '"
         << packOutput << "' ("
         << kTokenDatasetHeaderBytes + tokens.size() * width
         << " bytes written)\n";
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

void printHistogram(const TokenDataset &dataset) {
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
  bool bytes = header && header->vocabulary == kByteVocabulary;
  outs() << "\nmost frequent tokens:\n" << right_justify("token", 10) << "  ";
  if (bytes)
    outs() << left_justify("text", 18);
  outs() << right_justify("count", 12) << right_justify("share", 9) << "\n";
  for (const auto &[token, count] : rows) {
    outs() << right_justify(std::to_string(token), 10) << "  ";
    if (bytes)
      outs() << left_justify(describeByteToken(token), 18);
    int bar = static_cast<int>(kBarWidth * count / rows.front().second);
    outs() << right_justify(std::to_string(count), 12)
           << format("%8.2f%%", 100.0 * count / dataset.size()) << "  "
           << std::string(std::max(bar, 1), '#') << "\n";
  }
  printField("distinct tokens", Twine(distinct));
}

int inspect() {
  if (inspectInput.empty())
    return error("inspect needs a token file: pp-data inspect DATA "
                 "[--token-width 2|4]");
  std::unique_ptr<TokenDataset> dataset =
      TokenDataset::open(inspectInput, tokenWidth);
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
  printHistogram(*dataset);
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
          "  pp-data pack INPUT.txt... -o DATA [--token-width 2|4]\n"
          "  pp-data inspect DATA [--token-width 2|4]\n",
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
