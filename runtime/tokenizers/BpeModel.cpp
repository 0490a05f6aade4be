//===- BpeModel.cpp - byte-pair encoding of one word ----------------------===//

#include "runtime/tokenizers/BpeModel.h"

#include "runtime/tokenizers/Utf8.h"

#include <cstdio>
#include <queue>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// Words up to this many bytes are cached (longer ones are rare and would
/// fill the cache with text that does not repeat).
constexpr size_t kCachedWordBytes = 64;
/// The most words the cache holds; it is emptied when full.
constexpr size_t kCachedWords = 1 << 16;

/// A symbol of a word being merged, linked to its neighbours.
struct Symbol {
  uint32_t token;
  int previous;
  int next;
  /// False once merged into the symbol before it.
  bool alive;
};

/// A merge that may apply at a symbol and its next one.
struct Candidate {
  uint32_t rank;
  int position;
  uint32_t result;
  /// The lowest rank on top; of equal ranks, the leftmost.
  bool operator<(const Candidate &other) const {
    return rank != other.rank ? rank > other.rank : position > other.position;
  }
};

} // namespace

BpeModel::BpeModel(
    std::unordered_map<std::string, uint32_t> vocabulary,
    const std::vector<std::pair<std::string, std::string>> &mergeList,
    BpeOptions bpeOptions)
    : ids(std::move(vocabulary)), options(std::move(bpeOptions)),
      byteTokens(256, -1) {
  for (const auto &[text, id] : ids) {
    if (id >= texts.size())
      texts.resize(size_t(id) + 1);
    texts[id] = text;
    if (!text.empty() && findInvalidUtf8(text) == std::string::npos &&
        utf8SequenceLength(static_cast<unsigned char>(text[0])) == text.size())
      characterIds.emplace(decodeUtf8(text), id);
  }
  for (size_t rank = 0; rank < mergeList.size(); ++rank) {
    const auto &[left, right] = mergeList[rank];
    auto missing = [&](const std::string &token) {
      return std::invalid_argument(
          "merge " + std::to_string(rank) + " ('" + left + "' + '" + right +
          "'): '" + token + "' is not in the vocabulary");
    };
    std::optional<uint32_t> leftId = tokenId(left), rightId = tokenId(right),
                            resultId = tokenId(left + right);
    if (!leftId)
      throw missing(left);
    if (!rightId)
      throw missing(right);
    if (!resultId)
      throw missing(left + right);
    // A repeated pair keeps its first (lowest) rank.
    merges.emplace(pairKey(*leftId, *rightId),
                   Merge{static_cast<uint32_t>(rank), *resultId});
  }
  if (options.unknownToken) {
    unknownId = tokenId(*options.unknownToken);
    if (!unknownId)
      throw std::invalid_argument("the unknown token '" +
                                  *options.unknownToken +
                                  "' is not in the vocabulary");
  }
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    if (std::optional<uint32_t> id = tokenId(name))
      byteTokens[byte] = *id;
  }
}

std::optional<uint32_t> BpeModel::tokenId(std::string_view text) const {
  auto found = ids.find(std::string(text));
  if (found == ids.end())
    return std::nullopt;
  return found->second;
}

const std::string *BpeModel::tokenText(uint32_t id) const {
  if (id >= texts.size() || (texts[id].empty() && !ids.count("")))
    return nullptr;
  return &texts[id];
}

std::vector<uint32_t> BpeModel::characterTokens(std::string_view word) const {
  std::vector<uint32_t> symbols;
  bool previousUnknown = false;
  for (size_t i = 0; i < word.size();) {
    size_t length = utf8SequenceLength(static_cast<unsigned char>(word[i]));
    std::string_view character = word.substr(i, length);
    i += length;
    auto known = characterIds.find(decodeUtf8(character));
    if (known != characterIds.end()) {
      symbols.push_back(known->second);
      previousUnknown = false;
      continue;
    }
    if (options.byteFallback) {
      bool allBytes = true;
      for (char byte : character)
        allBytes = allBytes && byteTokens[static_cast<unsigned char>(byte)] >= 0;
      if (allBytes) {
        for (char byte : character)
          symbols.push_back(
              static_cast<uint32_t>(byteTokens[static_cast<unsigned char>(byte)]));
        previousUnknown = false;
        continue;
      }
    }
    if (!unknownId)
      continue;
    if (!(options.fuseUnknown && previousUnknown))
      symbols.push_back(*unknownId);
    previousUnknown = true;
  }
  return symbols;
}

void BpeModel::merge(std::vector<uint32_t> &tokens) const {
  int count = static_cast<int>(tokens.size());
  std::vector<Symbol> symbols(count);
  for (int i = 0; i < count; ++i)
    symbols[i] = Symbol{tokens[i], i - 1, i + 1 < count ? i + 1 : -1, true};
  std::priority_queue<Candidate> queue;
  auto consider = [&](int position) {
    int next = symbols[position].next;
    if (next < 0)
      return;
    auto found =
        merges.find(pairKey(symbols[position].token, symbols[next].token));
    if (found != merges.end())
      queue.push(Candidate{found->second.rank, position, found->second.result});
  };
  for (int i = 0; i + 1 < count; ++i)
    consider(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &left = symbols[top.position];
    // Stale: the symbol was merged away, or its pair changed since.
    if (!left.alive || left.next < 0)
      continue;
    Symbol &right = symbols[left.next];
    auto found = merges.find(pairKey(left.token, right.token));
    if (found == merges.end() || found->second.result != top.result)
      continue;
    left.token = top.result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0)
      symbols[right.next].previous = top.position;
    if (left.previous >= 0)
      consider(left.previous);
    consider(top.position);
  }
  tokens.clear();
  for (int i = 0; i >= 0 && i < count; i = symbols[i].next)
    tokens.push_back(symbols[i].token);
}

void BpeModel::encode(std::string_view word,
                      std::vector<uint32_t> &tokens) const {
  if (word.empty())
    return;
  if (options.ignoreMerges)
    if (std::optional<uint32_t> id = tokenId(word)) {
      tokens.push_back(*id);
      return;
    }
  bool cached = word.size() <= kCachedWordBytes;
  if (cached) {
    auto found = cache.find(std::string(word));
    if (found != cache.end()) {
      tokens.insert(tokens.end(), found->second.begin(), found->second.end());
      return;
    }
  }
  std::vector<uint32_t> symbols = characterTokens(word);
  merge(symbols);
  tokens.insert(tokens.end(), symbols.begin(), symbols.end());
  if (cached) {
    if (cache.size() >= kCachedWords)
      cache.clear();
    cache.emplace(std::string(word), std::move(symbols));
  }
}

} // namespace pp::runtime
