//===- JobExchanges.cpp - exchanges among all of a job's ranks ------------===//

#include "runtime/training/JobExchanges.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace pp::runtime {
namespace {

/// Texts by the job rank they came from.
using RankTexts = std::vector<std::pair<int64_t, std::string>>;

/// `texts` as one message: per text its rank, length and bytes.
std::string pack(const RankTexts &texts) {
  std::string packed;
  for (const auto &[rank, text] : texts) {
    uint64_t header[2] = {static_cast<uint64_t>(rank), text.size()};
    packed.append(reinterpret_cast<const char *>(header), sizeof(header));
    packed += text;
  }
  return packed;
}

/// Appends the texts `packed` (from pack()) holds to `texts`.
void unpackInto(const std::string &packed, RankTexts &texts) {
  size_t at = 0;
  while (at < packed.size()) {
    uint64_t header[2];
    if (packed.size() - at < sizeof(header))
      throw std::runtime_error("a gathered message ends inside a header");
    std::memcpy(header, packed.data() + at, sizeof(header));
    at += sizeof(header);
    if (packed.size() - at < header[1])
      throw std::runtime_error("a gathered message ends inside a text");
    texts.emplace_back(static_cast<int64_t>(header[0]),
                       packed.substr(at, header[1]));
    at += header[1];
  }
}

} // namespace

std::vector<Communicator *> levelsToRank0(RankGroups &groups) {
  std::vector<Communicator *> levels = {groups.tensorParallel.get()};
  for (Communicator *next :
       {groups.dataParallel.get(), groups.pipeline.get()}) {
    if (levels.back()->rank() != 0)
      break;
    levels.push_back(next);
  }
  return levels;
}

std::vector<std::string> gatherTextToRank0(RankGroups &groups,
                                           const std::string &mine) {
  uint64_t slot = messageSlot("job gather");
  RankTexts texts = {{groups.pipeline->jobRank(groups.pipeline->rank()), mine}};
  for (Communicator *level : levelsToRank0(groups)) {
    if (level->rank() != 0) {
      std::string packed = pack(texts);
      uint64_t size = packed.size();
      level->send(0, slot, &size, sizeof(size));
      level->send(0, slot, packed.data(), packed.size());
      return {};
    }
    for (int member = 1; member < level->worldSize(); ++member) {
      uint64_t size = 0;
      level->recv(member, slot, &size, sizeof(size));
      std::string packed(size, '\0');
      level->recv(member, slot, packed.data(), packed.size());
      unpackInto(packed, texts);
    }
  }
  std::sort(texts.begin(), texts.end());
  std::vector<std::string> all;
  for (auto &[rank, text] : texts) {
    if (rank != static_cast<int64_t>(all.size()))
      throw std::runtime_error("the gather to rank 0 lacks rank " +
                               std::to_string(all.size()));
    all.push_back(std::move(text));
  }
  return all;
}

void broadcastFromRank0(RankGroups &groups, void *bytes, size_t size) {
  std::vector<Communicator *> levels = levelsToRank0(groups);
  for (auto level = levels.rbegin(); level != levels.rend(); ++level)
    (*level)->broadcast(bytes, size, 0);
}

void broadcastText(Communicator &group, std::string &text) {
  uint64_t length = text.size();
  group.broadcast(&length, sizeof(length), 0);
  text.resize(length);
  group.broadcast(text.data(), length, 0);
}

void broadcastTextFromRank0(RankGroups &groups, std::string &text) {
  uint64_t length = text.size();
  broadcastFromRank0(groups, &length, sizeof(length));
  text.resize(length);
  broadcastFromRank0(groups, text.data(), length);
}

} // namespace pp::runtime
