//===- LinkCollectives.cpp - collectives over a job's message links -------===//

#include "runtime/communication/LinkCollectives.h"
#include "runtime/communication/MessageLinks.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace pp::runtime {
namespace {

/// The collectives' slots: above every messageSlot() (below 2^56), one per
/// kind of message, so that a message never meets a receive of another
/// kind; on one slot a peer's messages arrive in the order it sent them.
constexpr uint64_t kCollectiveSlots = uint64_t(1) << 56;
constexpr uint64_t kChunkSlot = kCollectiveSlots + 1;
constexpr uint64_t kSumSlot = kCollectiveSlots + 2;
constexpr uint64_t kGatherSlot = kCollectiveSlots + 3;
constexpr uint64_t kBroadcastSlot = kCollectiveSlots + 4;
constexpr uint64_t kScatterSlot = kCollectiveSlots + 5;

/// What the group's collectives need of the links, by group rank.
class Exchange {
public:
  explicit Exchange(const LinkGroup &group) : group(group) {}

  void send(int rank, uint64_t slot, const void *bytes, size_t size) const {
    group.links.send(jobRank(rank), group.channel, slot, bytes, size);
  }
  void recv(int rank, uint64_t slot, void *bytes, size_t size) const {
    group.links.recv(jobRank(rank), group.channel, slot, Patience::Timeout,
                     bytes, size);
  }
  /// The next message from `rank` on `slot`, which must have `size` bytes.
  MessageBytes take(int rank, uint64_t slot, size_t size) const {
    MessageBytes message = group.links.take(jobRank(rank), group.channel,
                                                 slot, Patience::Timeout);
    if (message.size() != size)
      throw std::runtime_error(
          "a collective's message from rank " + std::to_string(jobRank(rank)) +
          " has " + std::to_string(message.size()) + " bytes where " +
          std::to_string(size) +
          " were expected (the ranks called different collectives?)");
    return message;
  }

private:
  int jobRank(int rank) const {
    return static_cast<int>(group.jobRanks.at(rank));
  }
  const LinkGroup &group;
};

/// The part of round `round` (of `perRound` elements, the last shorter)
/// of a buffer of `count` elements that group rank `owner` of `ranks` sums:
/// its first element and how many.
std::pair<size_t, size_t> chunkOf(size_t round, size_t perRound, size_t count,
                                  int ranks, int owner) {
  size_t begin = round * perRound;
  size_t length = std::min(perRound, count - begin);
  size_t first = length * owner / ranks, last = length * (owner + 1) / ranks;
  return {begin + first, last - first};
}

/// The type an element of T adds up in: float for bf16, T otherwise.
template <typename T> struct SumTypeOf { using type = T; };
template <> struct SumTypeOf<BFloat16> { using type = float; };
template <typename T> using SumType = typename SumTypeOf<T>::type;

/// An element as the type it adds up in (exact), and a sum as an element
/// (bf16: rounded to nearest even).
template <typename T> SumType<T> widen(T value) {
  if constexpr (std::is_same_v<T, BFloat16>)
    return toFloat(value);
  else
    return value;
}
template <typename T> T narrow(SumType<T> sum) {
  if constexpr (std::is_same_v<T, BFloat16>)
    return toBFloat16(sum);
  else
    return sum;
}

/// `sum[i] += bytes' i-th T`, widened, for `count` elements; with `first`,
/// `sum[i] =` it.
template <typename T>
void addTo(SumType<T> *sum, const char *bytes, size_t count, bool first) {
  for (size_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    sum[i] = first ? widen(value) : sum[i] + widen(value);
  }
}

/// Sets `sum` to the element-wise sum of every rank's `length` elements in
/// rank order 0, 1, ..., n-1: this rank's at `mine`, each other's the next
/// message on `slot` from it.
template <typename T>
void sumInRankOrder(const Exchange &links, int ranks, int me, uint64_t slot,
                    const T *mine, size_t length, SumType<T> *sum) {
  for (int from = 0; from < ranks; ++from) {
    if (from == me) {
      addTo<T>(sum, reinterpret_cast<const char *>(mine), length, from == 0);
      continue;
    }
    MessageBytes part = links.take(from, slot, length * sizeof(T));
    addTo<T>(sum, part.data(), length, from == 0);
  }
}

template <typename T>
void allReduceSum(const LinkGroup &group, T *values, size_t count) {
  int ranks = group.size(), me = group.rank;
  if (ranks == 1 || count == 0)
    return;
  Exchange links(group);
  size_t perRound = kPieceBytes / sizeof(T) * ranks;
  size_t rounds = (count + perRound - 1) / perRound;
  auto chunk = [&](size_t round, int owner) {
    return chunkOf(round, perRound, count, ranks, owner);
  };
  // Sends this rank's chunks of `round` to the ranks that sum them.
  auto scatter = [&](size_t round) {
    for (int step = 1; step < ranks; ++step) {
      int owner = (me + step) % ranks;
      auto [first, length] = chunk(round, owner);
      links.send(owner, kChunkSlot, values + first, length * sizeof(T));
    }
  };
  // The running sum of this rank's chunk.
  std::vector<SumType<T>> sum;
  scatter(0);
  for (size_t round = 0; round < rounds; ++round) {
    // The next round's chunks travel while this one is summed.
    if (round + 1 < rounds)
      scatter(round + 1);
    auto [first, length] = chunk(round, me);
    T *mine = values + first;
    size_t bytes = length * sizeof(T);
    sum.resize(length);
    sumInRankOrder(links, ranks, me, kChunkSlot, mine, length, sum.data());
    std::transform(sum.begin(), sum.end(), mine, narrow<T>);
    for (int step = 1; step < ranks; ++step)
      links.send((me + step) % ranks, kSumSlot, mine, bytes);
    for (int step = 1; step < ranks; ++step) {
      int owner = (me + ranks - step) % ranks;
      auto [theirs, theirLength] = chunk(round, owner);
      links.recv(owner, kSumSlot, values + theirs, theirLength * sizeof(T));
    }
  }
}

template <typename T>
void reduceScatterSum(const LinkGroup &group, T *values,
                      const std::vector<OwnedRange> &ranges) {
  int ranks = group.size(), me = group.rank;
  if (ranks == 1)
    return;
  Exchange links(group);
  // The elements of `owner`'s ranges, one after another.
  auto elementsOf = [&](int owner) {
    std::vector<T> elements;
    for (const OwnedRange &range : ranges)
      if (range.owner == owner)
        elements.insert(elements.end(), values + range.begin,
                        values + range.begin + range.count);
    return elements;
  };
  constexpr size_t perPiece = kPieceBytes / sizeof(T);
  // Every owner's elements leave first, in pieces (what waits in a queue
  // is at most the buffer).
  for (int step = 1; step < ranks; ++step) {
    int owner = (me + step) % ranks;
    std::vector<T> theirs = elementsOf(owner);
    for (size_t first = 0; first < theirs.size(); first += perPiece)
      links.send(owner, kScatterSlot, theirs.data() + first,
                 std::min(perPiece, theirs.size() - first) * sizeof(T));
  }
  std::vector<T> mine = elementsOf(me);
  std::vector<SumType<T>> sum(mine.size());
  for (size_t first = 0; first < mine.size(); first += perPiece)
    sumInRankOrder(links, ranks, me, kScatterSlot, mine.data() + first,
                   std::min(perPiece, mine.size() - first), sum.data() + first);
  const SumType<T> *next = sum.data();
  for (const OwnedRange &range : ranges)
    if (range.owner == me) {
      std::transform(next, next + range.count, values + range.begin, narrow<T>);
      next += range.count;
    }
}

} // namespace

void allReduceSumOverLinks(const LinkGroup &group, float *values,
                           size_t count) {
  allReduceSum(group, values, count);
}

void allReduceSumOverLinks(const LinkGroup &group, double *values,
                           size_t count) {
  allReduceSum(group, values, count);
}

void allReduceSumOverLinks(const LinkGroup &group, BFloat16 *values,
                           size_t count) {
  allReduceSum(group, values, count);
}

void checkOwnedRanges(const std::vector<OwnedRange> &ranges, size_t count,
                      int ranks) {
  for (const OwnedRange &range : ranges)
    if (range.begin > count || range.count > count - range.begin ||
        range.owner < 0 || range.owner >= ranks)
      throw std::invalid_argument(
          "a reduce-scatter range [" + std::to_string(range.begin) + ", " +
          std::to_string(range.begin + range.count) + ") for rank " +
          std::to_string(range.owner) + " does not fit a buffer of " +
          std::to_string(count) + " elements over " + std::to_string(ranks) +
          " ranks");
}

void reduceScatterSumOverLinks(const LinkGroup &group, float *values,
                               const std::vector<OwnedRange> &ranges) {
  reduceScatterSum(group, values, ranges);
}

void reduceScatterSumOverLinks(const LinkGroup &group, BFloat16 *values,
                               const std::vector<OwnedRange> &ranges) {
  reduceScatterSum(group, values, ranges);
}

void allGatherOverLinks(const LinkGroup &group, const void *mine, size_t bytes,
                        void *all) {
  int ranks = group.size(), me = group.rank;
  char *out = static_cast<char *>(all);
  std::memcpy(out + me * bytes, mine, bytes);
  if (ranks == 1 || bytes == 0)
    return;
  Exchange links(group);
  size_t pieces = (bytes + kPieceBytes - 1) / kPieceBytes;
  auto piece = [&](size_t index) {
    size_t first = index * kPieceBytes;
    return std::make_pair(first, std::min(kPieceBytes, bytes - first));
  };
  auto send = [&](size_t index) {
    auto [first, size] = piece(index);
    for (int step = 1; step < ranks; ++step)
      links.send((me + step) % ranks, kGatherSlot,
                 static_cast<const char *>(mine) + first, size);
  };
  // Piece i + 1 leaves before piece i arrives: one piece ahead at most.
  send(0);
  for (size_t index = 0; index < pieces; ++index) {
    if (index + 1 < pieces)
      send(index + 1);
    auto [first, size] = piece(index);
    for (int step = 1; step < ranks; ++step) {
      int from = (me + ranks - step) % ranks;
      links.recv(from, kGatherSlot, out + from * bytes + first, size);
    }
  }
}

void broadcastOverLinks(const LinkGroup &group, void *bytes, size_t size,
                        int root) {
  int ranks = group.size(), me = group.rank;
  if (ranks == 1 || size == 0)
    return;
  Exchange links(group);
  char *data = static_cast<char *>(bytes);
  // The receivers' queues hold at most the `size` bytes they receive.
  for (size_t first = 0; first < size; first += kPieceBytes) {
    size_t piece = std::min(kPieceBytes, size - first);
    if (me != root) {
      links.recv(root, kBroadcastSlot, data + first, piece);
      continue;
    }
    for (int step = 1; step < ranks; ++step)
      links.send((root + step) % ranks, kBroadcastSlot, data + first, piece);
  }
}

} // namespace pp::runtime
