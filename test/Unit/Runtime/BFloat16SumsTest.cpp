//===- BFloat16SumsTest.cpp - collective sums of bf16 values --------------===//
//
// The bf16 all-reduce and reduce-scatter of the host's collective groups
// (a bf16 gradient reduction's): over the job's links
// (CommunicatorCollectives) and by gathering and adding (the default,
// SharedMemoryCollectives), each element is the bf16 rounding of the
// members' values widened to float and added in group order, on every
// member.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/CommunicatorCollectives.h"
#include "runtime/communication/SharedMemoryCollectives.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

/// Rank `rank`'s element `i`, exact in bf16: magnitudes 2^-8 to 2^8 apart,
/// so that rounding a partial sum to bf16 would change bits, and at every
/// fifth element rank 1 cancelling rank 0 and rank 2 2^-30 smaller, so
/// that another order of the additions would.
float valueAt(int rank, size_t i) {
  bool cancelling = i % 5 == 0;
  if (rank == 1 && cancelling)
    return -valueAt(0, i);
  float mantissa =
      1.0f + 0.0078125f * static_cast<float>((i * 37 + rank * 11) % 128);
  int exponent = static_cast<int>((i * 7 + rank * 13) % 17) - 8 -
                 (rank == 2 && cancelling ? 30 : 0);
  float sign = (i + rank) % 3 == 0 ? -1.0f : 1.0f;
  return sign * std::ldexp(mantissa, exponent);
}

std::vector<BFloat16> valuesOf(int rank, size_t count) {
  std::vector<BFloat16> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = toBFloat16(valueAt(rank, i));
  return values;
}

/// The bits of a bf16 sum over `ranks` ranks: the values widened, added in
/// rank order in float, rounded to bf16 once.
std::vector<uint16_t> expectedSums(int ranks, size_t count) {
  std::vector<float> sums(count, 0.0f);
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<BFloat16> theirs = valuesOf(rank, count);
    for (size_t i = 0; i < count; ++i)
      sums[i] = rank == 0 ? toFloat(theirs[i]) : sums[i] + toFloat(theirs[i]);
  }
  std::vector<uint16_t> bits(count);
  for (size_t i = 0; i < count; ++i)
    bits[i] = toBFloat16(sums[i]).bits;
  return bits;
}

std::vector<uint16_t> bitsOf(const std::vector<BFloat16> &values) {
  std::vector<uint16_t> bits;
  for (BFloat16 value : values)
    bits.push_back(value.bits);
  return bits;
}

/// Checks `group`'s bf16 all-reduce and reduce-scatter of `count` values
/// (ranges cut anywhere, owned in no particular order) against the
/// rounded rank-order sum.
void requireRoundedRankOrderSums(CollectiveGroup &group, size_t count) {
  int rank = static_cast<int>(group.rank()),
      ranks = static_cast<int>(group.size());
  Queue &host = hostDevice().defaultQueue();
  std::vector<uint16_t> expected = expectedSums(ranks, count);
  std::vector<BFloat16> values = valuesOf(rank, count);
  group.allReduceSum(values.data(), count, host);
  EXPECT_EQ(bitsOf(values), expected)
      << "all-reduce of " << count << " on rank " << rank;

  std::vector<OwnedRange> owned;
  for (size_t c = 0, first = 0; first < count; ++c) {
    size_t length = std::min(count - first, count / 5 + c + 1);
    owned.push_back({first, length, static_cast<int>((c * 7) % ranks)});
    first += length;
  }
  values = valuesOf(rank, count);
  group.reduceScatterSum(values.data(), count, owned, host);
  std::vector<uint16_t> got = bitsOf(values);
  for (const OwnedRange &range : owned) {
    if (range.owner != rank)
      continue;
    for (size_t i = range.begin; i < range.begin + range.count; ++i) {
      ASSERT_EQ(got[i], expected[i])
          << "reduce-scatter of " << count << ": element " << i << " on rank "
          << rank;
    }
  }
}

// Sizes around a 1 MiB piece of the links' all-reduce (524288 bf16 values
// a rank), fewer values than ranks, and several rounds.
const size_t kCounts[] = {1, 2, 1000, 524288 * 3 + 1, 2500007};

TEST(BFloat16Sums, OverLinksAreTheRoundedRankOrderSum) {
  for (int ranks : {2, 3})
    runRanks(ranks, [](Communicator &world) {
      CommunicatorCollectives links(world);
      for (size_t count : kCounts)
        requireRoundedRankOrderSums(links, count);
    });
}

TEST(BFloat16Sums, GatheredAndAddedAreTheRoundedRankOrderSum) {
  runRanks(3, [](Communicator &world) {
    std::string whyNot;
    std::unique_ptr<SharedMemoryCollectives> shared =
        SharedMemoryCollectives::connect(world, "bf16", whyNot);
    ASSERT_TRUE(shared) << whyNot;
    for (size_t count : kCounts)
      requireRoundedRankOrderSums(*shared, count);
  });
}

} // namespace
