//===- StrangersTest.cpp - a job's listeners against strangers ------------===//
//
// Anyone who reaches a job's ports can connect to its listeners: the store
// rank 0 serves, and each rank's listener for the higher ranks' links. A
// stranger that connects first and drip-feeds bytes neither fails the job
// nor gets a byte of its data; one that connects to a running job's store
// is refused and logged; a drip-feeding stranger is dropped at the proof's
// deadline, however slowly it sends; and a flood of connections costs the
// store no threads and does not keep the ranks from their rendezvous.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/Communicator.h"
#include "runtime/communication/TcpStore.h"

#include "FreePort.h"
#include "RawSockets.h"
#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <poll.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>

using namespace pp::runtime;
using namespace pp::runtime::test;
using Clock = std::chrono::steady_clock;

namespace {

/// The challenge a listener sends every connection: all a stranger gets.
constexpr size_t kChallengeBytes = 32;

/// A stranger on the machine that keeps connecting to every port this
/// process listens on (the job's listeners, as it would find them by
/// scanning), sends each connection a byte every `drip` and counts what
/// each sends back.
class Stranger {
public:
  explicit Stranger(std::chrono::milliseconds drip)
      : drip(drip), thread([this] { run(); }) {}
  ~Stranger() { stop(); }

  void stop() {
    stopping = true;
    if (thread.joinable())
      thread.join();
    for (auto &[fd, received] : received)
      ::close(fd);
    received.clear();
  }

  /// How many listeners it connected to.
  size_t connections() {
    std::lock_guard<std::mutex> lock(mutex);
    return addresses.size();
  }

  /// Waits up to 5 s until it has connected to `count` listeners.
  void waitForConnections(size_t count) {
    for (auto end = Clock::now() + std::chrono::seconds(5);
         connections() < count && Clock::now() < end;)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  /// The most bytes one connection received.
  size_t mostReceived() {
    std::lock_guard<std::mutex> lock(mutex);
    size_t most = 0;
    for (auto &[fd, bytes] : received)
      most = std::max(most, bytes);
    return most;
  }

  /// The addresses (hex, as /proc/net/tcp writes them) it found listening.
  std::set<std::string> listeningAddresses() {
    std::lock_guard<std::mutex> lock(mutex);
    std::set<std::string> found;
    for (auto &[port, address] : addresses)
      found.insert(address);
    return found;
  }

private:
  void run() {
    Clock::time_point lastDrip = Clock::now();
    while (!stopping) {
      for (const Listening &socket : ownListeningSockets()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (addresses.count(socket.port))
          continue;
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address = loopback(socket.port);
        if (::connect(fd, reinterpret_cast<sockaddr *>(&address),
                      sizeof(address)) != 0) {
          ::close(fd);
          continue;
        }
        addresses[socket.port] = socket.address;
        received[fd] = 0;
      }
      bool dripNow = Clock::now() - lastDrip >= drip;
      if (dripNow)
        lastDrip = Clock::now();
      std::lock_guard<std::mutex> lock(mutex);
      for (auto &[fd, bytes] : received) {
        char buffer[256];
        for (ssize_t got; (got = ::recv(fd, buffer, sizeof(buffer),
                                        MSG_DONTWAIT)) > 0;)
          bytes += got;
        char zero = 0;
        if (dripNow)
          ::send(fd, &zero, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  const std::chrono::milliseconds drip;
  std::atomic<bool> stopping{false};
  std::mutex mutex;
  /// By port; by descriptor.
  std::map<int, std::string> addresses;
  std::map<int, size_t> received;
  std::thread thread;
};

TEST(Strangers, AtAStartingJobsListenersTheyNeitherFailItNorGetItsData) {
  forgetCommunicationFailures();
  constexpr int kRanks = 3;
  int port = freePort();
  testing::internal::CaptureStderr();
  Stranger stranger(std::chrono::milliseconds(200));
  auto body = [&](Communicator &world) {
    std::vector<double> sum = {static_cast<double>(world.rank() + 1)};
    world.allReduceSum(sum);
    EXPECT_EQ(sum[0], 6.0);
    std::vector<std::string> names =
        world.allGatherText("rank " + std::to_string(world.rank()));
    EXPECT_EQ(names, (std::vector<std::string>{"rank 0", "rank 1", "rank 2"}));
    int64_t root = world.rank();
    world.broadcast(&root, sizeof(root), 2);
    EXPECT_EQ(root, 2);
    int next = (world.rank() + 1) % kRanks;
    int previous = (world.rank() + kRanks - 1) % kRanks;
    int64_t mine = world.rank(), theirs = -1;
    world.send(next, messageSlot("ring"), &mine, sizeof(mine));
    world.recv(previous, messageSlot("ring"), &theirs, sizeof(theirs));
    EXPECT_EQ(theirs, previous);
    // Another stranger, at the running job's store: a wrong proof is
    // refused, and the job goes on.
    if (world.rank() == 0) {
      int late = connectRaw(port);
      std::string proof(64, '\0');
      ::send(late, proof.data(), proof.size(), MSG_NOSIGNAL);
      std::string answer = readToEnd(late);
      EXPECT_EQ(answer.size(), kChallengeBytes + 1);
      EXPECT_EQ(answer.back(), 'R');
      ::close(late);
    }
    world.allReduceSum(sum);
    EXPECT_EQ(sum[0], 18.0);
  };
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    size_t connected = stranger.connections();
    ranks.emplace_back([&, rank] {
      errors[rank] =
          runRank(rank, kRanks, port, body, {std::chrono::seconds(20)});
    });
    // The stranger is at the rank's new listeners (rank 0's: the store's
    // and its links') before the next rank starts.
    if (rank + 1 < kRanks)
      stranger.waitForConnections(connected + (rank == 0 ? 2 : 1));
  }
  for (std::thread &rank : ranks)
    rank.join();
  size_t connections = stranger.connections();
  stranger.stop();
  std::string log = testing::internal::GetCapturedStderr();
  for (int rank = 0; rank < kRanks; ++rank)
    EXPECT_EQ(errors[rank], "") << "rank " << rank;
  EXPECT_GE(connections, static_cast<size_t>(kRanks));
  EXPECT_LE(stranger.mostReceived(), kChallengeBytes);
  // A local job listens on loopback only.
  EXPECT_EQ(stranger.listeningAddresses(), std::set<std::string>{"0100007F"});
  EXPECT_NE(log.find("pp: the rendezvous store refused a connection from "
                     "127.0.0.1:"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("pp: rank 0 refused a connection from 127.0.0.1:"),
            std::string::npos)
      << log;
}

TEST(Strangers, ADripFeedingStrangerIsDroppedAtTheProofsDeadline) {
  int port = freePort();
  testing::internal::CaptureStderr();
  // The proof's deadline: the job's timeout, when under 10 s.
  TcpStore store("127.0.0.1", port, /*serve=*/true, "secret",
                 std::chrono::seconds(2));
  Clock::time_point start = Clock::now();
  int stranger = connectRaw(port);
  // A byte every 250 ms: each read sees data long before a read timeout
  // would fire, and the 64 bytes of a proof would take 16 s.
  bool closed = false;
  for (int drops = 0; !closed && Clock::now() - start < std::chrono::seconds(8);
       ++drops) {
    char zero = 0;
    closed = ::send(stranger, &zero, 1, MSG_NOSIGNAL) != 1;
    if (drops == 1) {
      // Meanwhile a rank is served at once.
      Clock::time_point asked = Clock::now();
      TcpStore rank("127.0.0.1", port, /*serve=*/false, "secret",
                    std::chrono::seconds(2));
      rank.set("key", {'v'});
      EXPECT_EQ(rank.get("key"), std::vector<char>{'v'});
      EXPECT_LT(Clock::now() - asked, std::chrono::seconds(1));
    }
    pollfd waiting{stranger, POLLIN, 0};
    if (::poll(&waiting, 1, 250) > 0) {
      char buffer[64];
      ssize_t got = ::recv(stranger, buffer, sizeof(buffer), MSG_DONTWAIT);
      closed = closed || got == 0 ||
               (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    }
  }
  auto held = Clock::now() - start;
  int strangerPort = localPort(stranger);
  ::close(stranger);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(closed) << "the stranger still holds its connection after "
                      << std::chrono::duration<double>(held).count() << " s";
  EXPECT_LT(held, std::chrono::seconds(4));
  EXPECT_NE(log.find("pp: the rendezvous store refused a connection from "
                     "127.0.0.1:" +
                     std::to_string(strangerPort) +
                     ": it sent no proof of the job secret within 2 s"),
            std::string::npos)
      << log;
}

TEST(Strangers, AThousandConnectionsCostTheStoreNoThreadsNorDenyTheRanks) {
  int port = freePort();
  testing::internal::CaptureStderr();
  int threads = 0, flooded = 0;
  {
    TcpStore store("127.0.0.1", port, /*serve=*/true, "secret",
                   std::chrono::seconds(10));
    threads = threadCount();
    std::vector<int> strangers;
    for (int i = 0; i < 1000; ++i)
      strangers.push_back(connectRaw(port));
    // The server takes them in.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    flooded = threadCount();
    Clock::time_point start = Clock::now();
    TcpStore rank0("127.0.0.1", port, /*serve=*/false, "secret",
                   std::chrono::seconds(10));
    TcpStore rank1("127.0.0.1", port, /*serve=*/false, "secret",
                   std::chrono::seconds(10));
    rank0.set("rank 0", {'0'});
    EXPECT_EQ(rank1.get("rank 0"), std::vector<char>{'0'});
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
    for (int fd : strangers)
      ::close(fd);
  }
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_LE(flooded, threads + 2)
      << threads << " threads before the flood, " << flooded << " in it";
  EXPECT_NE(log.find("pp: the rendezvous store refused a connection from "
                     "127.0.0.1:"),
            std::string::npos);
}

} // namespace
