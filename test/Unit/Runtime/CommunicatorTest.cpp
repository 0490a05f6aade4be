//===- CommunicatorTest.cpp - groups, collectives and sends between ranks -===//
//
// Each test runs the ranks of one job as threads of this process; rank 0
// serves the rendezvous store on a free local port.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/Communicator.h"
#include "runtime/communication/DeviceMesh.h"
#include "runtime/communication/LinkCollectives.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

TEST(Communicator, GroupsOfA2x2x2MeshTalkAmongThemselves) {
  DeviceMesh mesh({{"pp", 2, AxisKind::Pipeline},
                   {"dp", 2, AxisKind::DataReplicate},
                   {"tp", 2, AxisKind::Tensor}});
  std::vector<std::vector<std::string>> axesSets = {
      {"pp"}, {"dp"}, {"tp"}, {"pp", "tp"}};
  runRanks(8, [&](Communicator &world) {
    int64_t rank = world.rank();
    for (const std::vector<std::string> &axes : axesSets) {
      std::vector<int64_t> members = mesh.group(rank, axes);
      std::string label = axes[0] + (axes.size() > 1 ? "+" + axes[1] : "");
      std::unique_ptr<Communicator> group = world.split(label, members);
      ASSERT_EQ(group->worldSize(), static_cast<int>(members.size()));
      ASSERT_EQ(members[group->rank()], rank);
      // A sum over the group only.
      std::vector<double> sum = {static_cast<double>(rank), 1.0};
      group->allReduceSum(sum);
      double expected = 0;
      for (int64_t member : members)
        expected += static_cast<double>(member);
      EXPECT_EQ(sum[0], expected) << label << " on rank " << rank;
      EXPECT_EQ(sum[1], static_cast<double>(members.size()));
      // The last member's job rank reaches every member.
      int64_t root = rank;
      group->broadcast(&root, sizeof(root), group->worldSize() - 1);
      EXPECT_EQ(root, members.back());
      // Point to point by group rank: each member sends its job rank to the
      // next member.
      int next = (group->rank() + 1) % group->worldSize();
      int previous =
          (group->rank() + group->worldSize() - 1) % group->worldSize();
      uint64_t slot = messageSlot(label);
      group->send(next, slot, &rank, sizeof(rank));
      int64_t received = -1;
      group->recv(previous, slot, &received, sizeof(received));
      EXPECT_EQ(received, members[previous]);
    }
  });
}

/// Rank `rank`'s `count` values for the all-reduce tests: magnitudes from
/// 2^-30 to 2^30 and both signs, so that the order of the additions shows
/// in the bits of a sum.
template <typename T> std::vector<T> valuesOf(int rank, size_t count) {
  std::mt19937_64 random(1234 + rank);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<T> values(count);
  for (T &value : values)
    value = static_cast<T>(std::ldexp(mantissa(random), exponent(random)));
  return values;
}

/// Sums every rank's valuesOf() over `world` and checks that the result
/// has, on every rank, the bits of the sum in rank order ((x0 + x1) + x2
/// ...), the same on every rank.
template <typename T>
void requireRankOrderSum(Communicator &world, size_t count,
                         const std::function<void(std::vector<T> &)> &sum) {
  std::vector<T> values = valuesOf<T>(world.rank(), count);
  sum(values);
  std::vector<T> expected = valuesOf<T>(0, count);
  for (int rank = 1; rank < world.worldSize(); ++rank) {
    std::vector<T> theirs = valuesOf<T>(rank, count);
    for (size_t i = 0; i < count; ++i)
      expected[i] += theirs[i];
  }
  EXPECT_EQ(std::memcmp(values.data(), expected.data(), count * sizeof(T)), 0)
      << count << " values on rank " << world.rank();
  // The same bits on every rank: rank 0's result reaches all.
  std::vector<T> rankZeros = values;
  world.broadcast(rankZeros.data(), count * sizeof(T), 0);
  EXPECT_EQ(std::memcmp(values.data(), rankZeros.data(), count * sizeof(T)), 0)
      << count << " values on rank " << world.rank();
}

TEST(Communicator, AllReducesSumInRankOrderWithTheSameBitsOnEveryRank) {
  // Sizes around the 1 MiB pieces of a round (262144 floats a rank), fewer
  // values than ranks, and several rounds with a short last one.
  std::vector<size_t> counts = {1, 2, 3, 1000, 262144 * 3, 262144 * 3 + 1,
                                2500007};
  for (int ranks : {2, 3, 4})
    runRanks(ranks, [&](Communicator &world) {
      for (size_t count : counts) {
        requireRankOrderSum<float>(world, count, [&](std::vector<float> &v) {
          world.allReduceSum(v.data(), v.size());
        });
        requireRankOrderSum<double>(world, count / 3 + 1,
                                    [&](std::vector<double> &v) {
                                      world.allReduceSum(v);
                                    });
      }
    });
}

TEST(Communicator, AReduceScatterLeavesTheAllReduceBitsOnEachOwner) {
  // Ranges of every size around a piece (262144 floats), some empty, cut
  // anywhere and owned in no particular order; the rest of the buffer is
  // nobody's and keeps each rank's values.
  const size_t count = 262144 * 2 + 77;
  const std::vector<size_t> cuts = {0, 5, 6, 262144, 262150, 262150,
                                    524288 + 10, count - 3};
  for (int ranks : {2, 3})
    runRanks(ranks, [&](Communicator &world) {
      std::vector<OwnedRange> owned;
      for (size_t c = 0; c + 1 < cuts.size(); ++c)
        owned.push_back({cuts[c], cuts[c + 1] - cuts[c],
                         static_cast<int>((c * 7) % ranks)});
      std::vector<float> values = valuesOf<float>(world.rank(), count);
      world.reduceScatterSum(values.data(), count, owned);
      std::vector<float> mine = valuesOf<float>(world.rank(), count);
      std::vector<float> summed = valuesOf<float>(0, count);
      for (int rank = 1; rank < ranks; ++rank) {
        std::vector<float> theirs = valuesOf<float>(rank, count);
        for (size_t i = 0; i < count; ++i)
          summed[i] += theirs[i];
      }
      std::vector<float> expected = mine;
      for (const OwnedRange &range : owned)
        if (range.owner == world.rank())
          std::copy_n(summed.begin() + range.begin, range.count,
                      expected.begin() + range.begin);
      EXPECT_EQ(std::memcmp(values.data(), expected.data(),
                            count * sizeof(float)),
                0)
          << "rank " << world.rank() << " of " << ranks;
    });
}

TEST(Communicator, AReduceScatterRangeOutsideTheBufferIsAnError) {
  runRanks(2, [](Communicator &world) {
    std::vector<float> values(4);
    EXPECT_THROW(world.reduceScatterSum(values.data(), 4, {{2, 3, 0}}),
                 std::invalid_argument);
    EXPECT_THROW(world.reduceScatterSum(values.data(), 4, {{0, 1, 2}}),
                 std::invalid_argument);
  });
}

TEST(Communicator, GathersAndBroadcastsLargeAndOddSizes) {
  runRanks(3, [](Communicator &world) {
    for (size_t bytes : {size_t(1), size_t(1000), (size_t(1) << 20) + 17,
                         (size_t(5) << 20) / 2}) {
      std::vector<uint8_t> mine(bytes);
      for (size_t i = 0; i < bytes; ++i)
        mine[i] = static_cast<uint8_t>(i * 7 + world.rank() * 31);
      std::vector<uint8_t> all(bytes * 3);
      world.allGatherBytes(mine.data(), bytes, all.data());
      for (int rank = 0; rank < 3; ++rank)
        for (size_t i = 0; i < bytes; i += 4099)
          ASSERT_EQ(all[rank * bytes + i],
                    static_cast<uint8_t>(i * 7 + rank * 31))
              << bytes << " bytes, rank " << rank << ", byte " << i;
      std::vector<uint8_t> fromOne = mine;
      world.broadcast(fromOne.data(), bytes, 1);
      EXPECT_TRUE(std::equal(fromOne.begin(), fromOne.end(),
                             all.begin() + bytes))
          << bytes << " bytes";
    }
    std::vector<std::string> texts =
        world.allGatherText(std::string(world.rank() * 3, 'x'));
    EXPECT_EQ(texts, (std::vector<std::string>{"", "xxx", "xxxxxx"}));
  });
}

TEST(Communicator, AGroupMustContainTheRankAndBeOrdered) {
  runRanks(2, [](Communicator &world) {
    std::vector<int64_t> others = {1 - world.rank()};
    EXPECT_THROW(world.split("other", others), std::runtime_error);
    EXPECT_THROW(world.split("unordered", {1, 0}), std::runtime_error);
    EXPECT_EQ(world.split("alone", {world.rank()})->worldSize(), 1);
  });
}

TEST(Communicator, SendsDoNotWaitForTheirReceives) {
  // Rank 0 sends 40 messages of 256 KiB (more than a connection buffers)
  // before rank 1 receives any; rank 1 then takes them last to first.
  constexpr int kMessages = 40;
  std::vector<char> payload(256 << 10);
  runRanks(2, [&](Communicator &world) {
    if (world.rank() == 0) {
      for (int i = 0; i < kMessages; ++i) {
        payload[0] = static_cast<char>(i);
        world.send(1, messageSlot("message " + std::to_string(i)),
                   payload.data(), payload.size());
      }
      int64_t done = 0;
      world.recv(1, messageSlot("done"), &done, sizeof(done));
      EXPECT_EQ(done, kMessages);
      return;
    }
    std::vector<char> received(payload.size());
    for (int i = kMessages - 1; i >= 0; --i) {
      world.recv(0, messageSlot("message " + std::to_string(i)),
                 received.data(), received.size());
      EXPECT_EQ(received[0], static_cast<char>(i));
    }
    int64_t done = kMessages;
    world.send(0, messageSlot("done"), &done, sizeof(done));
  });
}

TEST(Communicator, AMessageOfTheWrongSizeIsAnError) {
  runRanks(2, [](Communicator &world) {
    int64_t value = 7;
    if (world.rank() == 0) {
      world.send(1, messageSlot("value"), &value, sizeof(value));
      return;
    }
    int32_t small = 0;
    try {
      world.recv(0, messageSlot("value"), &small, sizeof(small));
      ADD_FAILURE() << "an 8-byte message filled 4 bytes";
    } catch (const std::runtime_error &error) {
      EXPECT_STREQ(error.what(),
                   "a message from rank 0 has 8 bytes where 4 were expected");
    }
  });
}

TEST(Communicator, FailuresNameThePeersByJobRank) {
  runRanks(4, [](Communicator &world) {
    std::vector<std::string> everyone = {"ranks 1, 2 and 3", "ranks 0, 2 and 3",
                                         "ranks 0, 1 and 3", "ranks 0, 1 and 2"};
    EXPECT_EQ(world.describePeers(), everyone[world.rank()]);
    // In a group the peers keep their job ranks.
    std::vector<int64_t> pair = {world.rank() % 2, world.rank() % 2 + 2};
    std::unique_ptr<Communicator> group = world.split("pair", pair);
    EXPECT_EQ(group->describePeers(),
              "rank " + std::to_string(pair[1 - group->rank()]));
    // No rank leaves (closing its connections) before all have connected.
    std::vector<double> done = {1.0};
    group->allReduceSum(done);
    world.allReduceSum(done);
  });
}

TEST(Communicator, AWorldOfOneNeedsNoNetwork) {
  Communicator world(RendezvousInfo{});
  std::vector<double> values = {1.5};
  world.allReduceSum(values);
  EXPECT_EQ(values[0], 1.5);
  EXPECT_EQ(world.split("alone", {0})->worldSize(), 1);
}

} // namespace
