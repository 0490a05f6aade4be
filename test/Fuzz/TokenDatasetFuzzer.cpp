//===- TokenDatasetFuzzer.cpp - fuzzes the token dataset reader -----------===//
//
// Opens each input as a token file (runtime/data/TokenDataset.h) in pp's
// format and as flat files of both widths. What opens must be consistent:
// countTokens counts its tokens, its size accounts for every byte, maxToken
// is the largest token read and firstTokenAtLeast finds it; a pp dataset is
// canonical, so it must write back to the same bytes.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "runtime/data/TokenDataset.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

using namespace pp::runtime;

namespace {

/// Checks the invariants of `dataset`, opened from the `size` bytes at
/// `data`.
void check(const TokenDataset &dataset, const std::string &rewritten,
           const uint8_t *data, size_t size) {
  size_t header = dataset.packed() ? kTokenDatasetHeaderBytes : 0;
  if (header + dataset.size() * dataset.tokenWidth() != size)
    pp::fuzz::fail("the tokens and the header do not account for every byte");
  std::vector<int64_t> tokens(dataset.size());
  dataset.read(0, dataset.size(), tokens.data());
  auto largest = std::max_element(tokens.begin(), tokens.end());
  if (largest == tokens.end() || *largest != dataset.maxToken())
    pp::fuzz::fail("maxToken is not the largest token");
  if (dataset.firstTokenAtLeast(dataset.maxToken()) != largest - tokens.begin())
    pp::fuzz::fail("firstTokenAtLeast(maxToken) is not the first largest");
  const TokenDatasetHeader *fields = dataset.header();
  if (!fields)
    return;
  std::vector<uint32_t> values(tokens.begin(), tokens.end());
  writeTokenDataset(rewritten, values, fields->documents, fields->vocabulary,
                    dataset.tokenWidth());
  std::ifstream file(rewritten, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(file), {}};
  if (bytes.size() != size || std::memcmp(bytes.data(), data, size) != 0)
    pp::fuzz::fail("a token dataset that opens does not write back to the "
                   "same bytes");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const pp::fuzz::ScratchDirectory scratch;
  std::string path = scratch.write("tokens.bin", data, size);
  for (int width : {0, 2, 4}) {
    int64_t counted = -1;
    try {
      counted = TokenDataset::countTokens(path, width);
    } catch (const std::runtime_error &) {
    }
    std::unique_ptr<TokenDataset> dataset;
    try {
      dataset = TokenDataset::open(path, width);
    } catch (const std::runtime_error &) {
      continue;
    }
    if (counted != dataset->size())
      pp::fuzz::fail("countTokens does not count what open reads");
    check(*dataset, scratch.path() + "/rewritten.bin", data, size);
  }
  return 0;
}
