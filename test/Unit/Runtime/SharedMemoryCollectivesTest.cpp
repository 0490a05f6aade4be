//===- SharedMemoryCollectivesTest.cpp - all-gathers in shared memory -----===//
//
// The shared-memory group against the TCP group (CommunicatorCollectives)
// with ranks as threads of this process and as forked processes: the same
// bytes for every size, groups used at the same time, and the errors when
// a member never arrives or is gone.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/CommunicatorCollectives.h"
#include "runtime/communication/SharedMemoryCollectives.h"

#include "FreePort.h"
#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <future>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

using namespace pp::runtime;
using pp::runtime::test::freePort;
using pp::runtime::test::runRanks;

namespace {

using Clock = std::chrono::steady_clock;

/// Small slots, so that a few KB already take several rounds.
constexpr size_t kSlotBytes = 4096;

/// Sizes per member: none, less than a slot, exactly one, a slot and a
/// byte, several rounds, and a large all-gather of many rounds.
const size_t kSizes[] = {0,
                         1,
                         7,
                         kSlotBytes,
                         kSlotBytes + 1,
                         3 * kSlotBytes + 5,
                         (size_t(1) << 20) + 3};

/// The shared-memory group over the ranks of `group`; throws why not.
std::unique_ptr<SharedMemoryCollectives>
connectShared(Communicator &group, size_t slotBytes = kSlotBytes) {
  std::string whyNot;
  std::unique_ptr<SharedMemoryCollectives> shared =
      SharedMemoryCollectives::connect(group, "test", whyNot, slotBytes);
  if (!shared)
    throw std::runtime_error("no shared memory: " + whyNot);
  return shared;
}

/// Member `rank`'s bytes in call `call`: different for every member, call
/// and position.
std::vector<uint8_t> memberBytes(int64_t rank, size_t bytes, int64_t call) {
  std::vector<uint8_t> values(bytes);
  for (size_t i = 0; i < bytes; ++i)
    values[i] = static_cast<uint8_t>(i * 31 + rank * 101 + call * 7 + 1);
  return values;
}

/// Throws `what` unless `condition`: the ranks' bodies report failures by
/// throwing (a forked rank's expectations would not reach the test).
void require(bool condition, const std::string &what) {
  if (!condition)
    throw std::runtime_error(what);
}

/// Gathers through `shared` and over TCP (`group`) for every size of
/// kSizes, `repeats` times each, and requires both to give every member's
/// bytes in group order.
void requireSameBytesAsTcp(Communicator &group, CollectiveGroup &shared,
                            int repeats = 1) {
  CommunicatorCollectives tcp(group);
  int64_t call = 0;
  for (int repeat = 0; repeat < repeats; ++repeat)
    for (size_t bytes : kSizes) {
      std::vector<uint8_t> mine = memberBytes(group.rank(), bytes, ++call);
      std::vector<uint8_t> viaShared(bytes * group.worldSize(), 0xee);
      std::vector<uint8_t> viaTcp(bytes * group.worldSize(), 0xdd);
      shared.allGather(mine.data(), bytes, viaShared.data(),
                       hostDevice().defaultQueue());
      tcp.allGather(mine.data(), bytes, viaTcp.data(),
                       hostDevice().defaultQueue());
      std::vector<uint8_t> expected;
      for (int member = 0; member < group.worldSize(); ++member) {
        std::vector<uint8_t> theirs = memberBytes(member, bytes, call);
        expected.insert(expected.end(), theirs.begin(), theirs.end());
      }
      require(viaShared == expected && viaTcp == expected,
              "the all-gather of " + std::to_string(bytes) +
                  " bytes differs on rank " + std::to_string(group.rank()));
    }
}

/// What each of `size` forked ranks (one process each, rank 0 serving the
/// store) ended with: "" after `body` returned, its error, or the signal
/// that killed it.
std::vector<std::string>
runProcessRanks(int size, std::chrono::milliseconds timeout,
                const std::function<void(Communicator &)> &body) {
  int port = freePort();
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int rank = 0; rank < size; ++rank) {
    int ends[2];
    EXPECT_EQ(::pipe(ends), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ends[0]);
      std::string outcome = test::runRank(rank, size, port, body, {timeout});
      ssize_t written = ::write(ends[1], outcome.data(), outcome.size());
      ::_exit(written == static_cast<ssize_t>(outcome.size()) ? 0 : 1);
    }
    ::close(ends[1]);
    children.push_back(pid);
    pipes.push_back(ends[0]);
  }
  std::vector<std::string> outcomes(size);
  for (int rank = 0; rank < size; ++rank) {
    char buffer[4096];
    for (ssize_t got; (got = ::read(pipes[rank], buffer, sizeof(buffer))) > 0;)
      outcomes[rank].append(buffer, got);
    ::close(pipes[rank]);
    int status = 0;
    ::waitpid(children[rank], &status, 0);
    if (WIFSIGNALED(status))
      outcomes[rank] = "killed by signal " + std::to_string(WTERMSIG(status));
    else if (WEXITSTATUS(status) != 0)
      outcomes[rank] = "exited with " + std::to_string(WEXITSTATUS(status));
  }
  return outcomes;
}

TEST(SharedMemoryCollectives, GathersTheSameBytesAsTcpOnThreadRanks) {
  runRanks(3, [](Communicator &world) {
    std::unique_ptr<SharedMemoryCollectives> shared = connectShared(world);
    EXPECT_EQ(shared->rank(), world.rank());
    EXPECT_EQ(shared->size(), 3);
    requireSameBytesAsTcp(world, *shared, 2);
  });
}

TEST(SharedMemoryCollectives, SumsByGatheringWithTheCommunicatorsBits) {
  // A group that only gathers reduces by adding the gathered values in
  // group order: the bits of the communicator's all-reduce and
  // reduce-scatter, whatever the values' magnitudes.
  runRanks(3, [](Communicator &world) {
    std::string whyNot;
    std::unique_ptr<SharedMemoryCollectives> shared =
        SharedMemoryCollectives::connect(world, "test", whyNot);
    ASSERT_TRUE(shared) << whyNot;
    CommunicatorCollectives tcp(world);
    Queue &host = hostDevice().defaultQueue();
    std::vector<float> mine(1000);
    for (size_t i = 0; i < mine.size(); ++i)
      mine[i] = std::ldexp(1.0f + 0.001f * i, static_cast<int>(i % 40) - 20) *
                (world.rank() == 1 ? -1.0f : 1.0f + world.rank());
    std::vector<float> viaShared = mine, viaTcp = mine;
    shared->allReduceSum(viaShared.data(), viaShared.size(), host);
    tcp.allReduceSum(viaTcp.data(), viaTcp.size(), host);
    EXPECT_EQ(viaShared, viaTcp);
    std::vector<OwnedRange> ranges = {
        {0, 300, 2}, {300, 450, 0}, {750, 250, 1}};
    viaShared = mine;
    viaTcp = mine;
    shared->reduceScatterSum(viaShared.data(), mine.size(), ranges, host);
    tcp.reduceScatterSum(viaTcp.data(), mine.size(), ranges, host);
    for (const OwnedRange &range : ranges) {
      if (range.owner != world.rank())
        continue;
      for (size_t i = range.begin; i < range.begin + range.count; ++i) {
        ASSERT_EQ(viaShared[i], viaTcp[i]) << "element " << i;
      }
    }
  });
}

TEST(SharedMemoryCollectives, GathersTheSameBytesAsTcpOnProcessRanks) {
  std::vector<std::string> outcomes =
      runProcessRanks(4, std::chrono::seconds(30), [](Communicator &world) {
        // The default slots: one round up to 1 MiB per member.
        requireSameBytesAsTcp(
            world, *connectShared(world,
                                  SharedMemoryCollectives::kDefaultSlotBytes));
        requireSameBytesAsTcp(world, *connectShared(world), 2);
      });
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(outcomes[rank], "") << "rank " << rank;
}

TEST(SharedMemoryCollectives, GroupsInUseAtTheSameTimeKeepApart) {
  runRanks(4, [](Communicator &world) {
    int64_t rank = world.rank();
    std::vector<int64_t> pair = {rank & ~1, rank | 1};
    std::unique_ptr<Communicator> pairGroup = world.split("pair", pair);
    std::unique_ptr<SharedMemoryCollectives> pairShared =
        connectShared(*pairGroup);
    std::unique_ptr<SharedMemoryCollectives> allShared = connectShared(world);
    for (int64_t call = 0; call < 200; ++call) {
      // Pairs and the whole job in turn; calls of the two pairs overlap.
      size_t bytes = 1 + (call * 977) % (3 * kSlotBytes);
      bool whole = call % 3 == 0;
      CollectiveGroup &group = whole ? *allShared : *pairShared;
      std::vector<uint8_t> mine = memberBytes(rank, bytes, call);
      std::vector<uint8_t> all(bytes * group.size());
      group.allGather(mine.data(), bytes, all.data(),
                       hostDevice().defaultQueue());
      std::vector<int64_t> members =
          whole ? std::vector<int64_t>{0, 1, 2, 3} : pair;
      for (size_t m = 0; m < members.size(); ++m)
        require(std::equal(all.begin() + m * bytes,
                           all.begin() + (m + 1) * bytes,
                           memberBytes(members[m], bytes, call).begin()),
                "call " + std::to_string(call) + " on rank " +
                    std::to_string(rank) + " got other bytes from rank " +
                    std::to_string(members[m]));
    }
  });
}

TEST(SharedMemoryCollectives, AMemberThatNeverArrivesFailsTheOthersInTime) {
  std::promise<void> rank0Failed;
  std::shared_future<void> failed = rank0Failed.get_future().share();
  runRanks(
      2,
      [&](Communicator &world) {
        std::unique_ptr<SharedMemoryCollectives> shared = connectShared(world);
        if (world.rank() == 1) {
          // Alive and holding the segment, but never calling.
          failed.wait();
          return;
        }
        std::vector<uint8_t> mine(100), all(200);
        Clock::time_point start = Clock::now();
        try {
          shared->allGather(mine.data(), mine.size(), all.data(),
                       hostDevice().defaultQueue());
          ADD_FAILURE() << "rank 1 never arrived, but the all-gather returned";
        } catch (const std::runtime_error &error) {
          EXPECT_EQ(std::string(error.what()),
                    "the all-gather of 100 bytes per rank over group 'test' "
                    "(job ranks 0,1) in shared memory: job rank 1 has not "
                    "arrived within 1 s (stopped, stuck, or slower than "
                    "--timeout allows)");
        }
        double waited =
            std::chrono::duration<double>(Clock::now() - start).count();
        EXPECT_GE(waited, 0.9);
        EXPECT_LT(waited, 5.0);
        EXPECT_EQ(firstCommunicationFailure(), 1);
        // The group stays failed.
        try {
          shared->allGather(mine.data(), mine.size(), all.data(),
                       hostDevice().defaultQueue());
          ADD_FAILURE() << "a failed group gathered";
        } catch (const std::runtime_error &error) {
          EXPECT_NE(std::string(error.what()).find("an earlier all-gather"),
                    std::string::npos)
              << error.what();
        }
        rank0Failed.set_value();
      },
      test::RankOptions(std::chrono::seconds(1)));
}

TEST(SharedMemoryCollectives, AMemberThatIsGoneFailsTheOthersAtOnce) {
  // Rank 2 dies before it arrives; the time limit is far away.
  std::vector<std::string> outcomes =
      runProcessRanks(3, std::chrono::seconds(60), [](Communicator &world) {
        std::unique_ptr<SharedMemoryCollectives> shared = connectShared(world);
        std::vector<uint8_t> mine = memberBytes(world.rank(), 10, 0);
        std::vector<uint8_t> all(30);
        shared->allGather(mine.data(), mine.size(), all.data(),
                       hostDevice().defaultQueue());
        if (world.rank() == 2)
          ::raise(SIGKILL);
        Clock::time_point start = Clock::now();
        try {
          shared->allGather(mine.data(), mine.size(), all.data(),
                       hostDevice().defaultQueue());
        } catch (const std::runtime_error &error) {
          double waited =
              std::chrono::duration<double>(Clock::now() - start).count();
          require(waited < 10, "noticed only after " + std::to_string(waited) +
                                   " s");
          throw;
        }
      });
  std::string expected = "the all-gather of 10 bytes per rank over group "
                         "'test' (job ranks 0,1,2) in shared memory: job "
                         "rank 2 has gone (the process ended) before arriving";
  EXPECT_EQ(outcomes[0], expected);
  EXPECT_EQ(outcomes[1], expected);
  EXPECT_EQ(outcomes[2], "killed by signal " + std::to_string(SIGKILL));
}

TEST(SharedMemoryCollectives, EveryMemberRefusesASegmentThatOneCannotMap) {
  runRanks(2, [](Communicator &world) {
    // More than /dev/shm holds: group rank 0 cannot make the segment, and
    // both members learn why.
    std::string whyNot;
    EXPECT_EQ(SharedMemoryCollectives::connect(world, "huge", whyNot,
                                               size_t(1) << 52),
              nullptr);
    EXPECT_NE(whyNot.find("the ranks of group 'huge' (job ranks 0,1) cannot "
                          "share memory (job rank 0: cannot "),
              std::string::npos)
        << whyNot;
    // The group still connects with slots that fit.
    requireSameBytesAsTcp(world, *connectShared(world));
  });
}

} // namespace
