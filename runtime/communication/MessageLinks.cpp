//===- MessageLinks.cpp - direct connections for point-to-point messages --===//

#include "runtime/communication/MessageLinks.h"
#include "runtime/communication/JobSecret.h"
#include "runtime/communication/ProofGate.h"
#include "runtime/communication/Socket.h"
#include "runtime/communication/TcpStore.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace pp::runtime {
namespace {

/// At most this many connections prove the secret at once on a rank's
/// listener; past it the oldest is dropped.
constexpr size_t kMaxPendingProofs = 64;

std::string storeKey(int rank) { return "links/" + std::to_string(rank); }

/// Closes `fd` on every path that does not keep it.
struct Closer {
  int &fd;
  ~Closer() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// The waits for a message in progress, for longestAwaitedPeer(): a slot's
/// peer plus one (0: free, -1: being claimed) and when its wait began, in
/// steady-clock seconds.
constexpr size_t kWaitSlots = 16;
std::atomic<int> awaitedPeers[kWaitSlots];
std::atomic<int64_t> waitStarts[kWaitSlots];

int64_t steadySeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Records one wait for `peer` while it lasts (none when every slot is
/// taken).
class RecordedWait {
public:
  explicit RecordedWait(int peer) {
    for (size_t i = 0; i < kWaitSlots && slot < 0; ++i) {
      int free = 0;
      // Claimed, timed, then published: a reader never sees a peer with
      // another wait's start.
      if (awaitedPeers[i].compare_exchange_strong(free, -1)) {
        waitStarts[i].store(steadySeconds());
        awaitedPeers[i].store(peer + 1);
        slot = static_cast<int>(i);
      }
    }
  }
  ~RecordedWait() {
    if (slot >= 0)
      awaitedPeers[slot].store(0);
  }
  RecordedWait(const RecordedWait &) = delete;
  RecordedWait &operator=(const RecordedWait &) = delete;

private:
  int slot = -1;
};

} // namespace

int longestAwaitedPeer(int64_t &waitedSeconds) {
  int peer = -1;
  int64_t now = steadySeconds(), earliest = now;
  for (size_t i = 0; i < kWaitSlots; ++i) {
    int awaited = awaitedPeers[i].load() - 1;
    int64_t start = waitStarts[i].load();
    if (awaited >= 0 && (peer < 0 || start < earliest)) {
      peer = awaited;
      earliest = start;
    }
  }
  waitedSeconds = now - earliest;
  return peer;
}

MessageLinks::MessageLinks(int rank, int size, const std::vector<int> &peers,
                           TcpStore &store, const std::string &host,
                           const std::string &secret, LinkIntegrity integrity,
                           std::chrono::milliseconds timeout)
    : rank(rank), timeout(timeout) {
  // Whether this end wants the link on `fd` sealed; a link is sealed when
  // either end wants it, so that neither end's view of the addresses (a
  // NAT, a proxy) leaves the other end's messages unchecked.
  auto wantsSeal = [&](int fd) -> uint8_t {
    return integrity == LinkIntegrity::Always ||
           (integrity == LinkIntegrity::AcrossHosts && leavesHost(fd));
  };
  for (int peer = 0; peer < size; ++peer)
    links.push_back(std::make_unique<Link>());
  std::string problem;
  int listener = listenOn(host, 0, problem);
  Closer closeListener{listener};
  if (listener < 0)
    throw std::runtime_error("cannot listen for the other ranks' messages on " +
                             host + ": " + problem);
  std::string address = listeningAddress(listener);
  store.set(storeKey(rank), std::vector<char>(address.begin(), address.end()));

  // Lower ranks accept: each has finished connecting to the ones below it.
  auto higher = std::upper_bound(peers.begin(), peers.end(), rank);
  for (auto lower = peers.begin(); lower != higher; ++lower) {
    int peer = *lower;
    std::vector<char> value = store.get(storeKey(peer));
    std::istringstream parts(std::string(value.begin(), value.end()));
    std::string peerHost;
    int port = 0;
    parts >> peerHost >> port;
    int fd = connectTo(peerHost, port, timeout);
    Closer closeFd{fd};
    if (fd < 0)
      throw std::runtime_error("cannot connect to rank " +
                               std::to_string(peer) + " at " + peerHost + ":" +
                               std::to_string(port));
    setReceiveTimeout(fd, timeout);
    std::string key;
    problem = proveToPeer(fd, secret, &key);
    // This rank's claim and whether it seals; the peer answers whether it
    // does.
    int32_t me = rank;
    uint8_t mine = wantsSeal(fd), theirs = 0;
    if (problem.empty() &&
        !writeAll(fd, {{&me, sizeof(me)}, {&mine, sizeof(mine)}}))
      problem = "it closed the connection";
    if (problem.empty() && !readAll(fd, &theirs, sizeof(theirs)))
      problem = "it refused this rank's claim to be rank " +
                std::to_string(rank) + " (or closed the connection)";
    if (!problem.empty())
      throw std::runtime_error("connecting to rank " + std::to_string(peer) +
                               ": " + problem);
    if (mine || theirs)
      links[peer]->seal = std::make_unique<MessageSeal>(key, true, rank, peer);
    links[peer]->fd = std::exchange(fd, -1);
  }

  // Higher peers connect; strangers are refused, each within the proof's
  // deadline, while the ranks' proofs go on.
  std::string name = "rank " + std::to_string(rank);
  ProofGate gate(secret, name, std::min(timeout, kProofTimeout),
                 kMaxPendingProofs);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // "ranks 3, 5": the higher peers not connected yet.
  auto describeMissing = [&] {
    std::string ranks;
    int count = 0;
    for (auto peer = higher; peer != peers.end(); ++peer)
      if (links[*peer]->fd < 0)
        ranks += (count++ ? ", " : "") + std::to_string(*peer);
    return (count == 1 ? "rank " : "ranks ") + ranks;
  };
  for (auto missing = static_cast<size_t>(peers.end() - higher); missing > 0;) {
    ProvenConnection proven = gate.admitOne(listener, deadline);
    int fd = proven.fd;
    if (fd < 0)
      throw std::runtime_error(std::to_string(missing) +
                               " rank(s) above rank " + std::to_string(rank) +
                               " did not connect within " +
                               std::to_string(timeout.count() / 1000) +
                               " s (a rank failed?): " + describeMissing());
    Closer closeFd{fd};
    // A proven peer knows the secret: it is a rank, which says which at once.
    setReceiveTimeout(fd, std::min(timeout, kProofTimeout));
    int32_t peer = -1;
    uint8_t theirs = 0, mine = wantsSeal(fd);
    if (!readAll(fd, &peer, sizeof(peer)) ||
        !readAll(fd, &theirs, sizeof(theirs)) ||
        !std::binary_search(higher, peers.end(), peer) ||
        links[peer]->fd >= 0 || !writeAll(fd, &mine, sizeof(mine))) {
      logRefusal(name, peerAddress(fd),
                 "it claims to be rank " + std::to_string(peer) +
                     ", which is not a higher rank this rank links with "
                     "still to connect");
      continue;
    }
    // The seal's keys name both ranks: a claim altered on the way makes
    // the first message fail its check.
    if (mine || theirs)
      links[peer]->seal =
          std::make_unique<MessageSeal>(proven.linkKey, false, peer, rank);
    links[peer]->fd = std::exchange(fd, -1);
    --missing;
  }

  for (int peer : peers) {
    int fd = links[peer]->fd;
    // Messages wait in the queues, not in the connection: reads block
    // without a timeout; writes fail after one, when a peer stops reading.
    setReceiveTimeout(fd, std::chrono::milliseconds(0));
    setSendTimeout(fd, timeout);
    links[peer]->reader = std::thread([this, peer] { read(peer); });
  }
}

MessageLinks::~MessageLinks() {
  for (std::unique_ptr<Link> &link : links)
    if (link->fd >= 0)
      ::shutdown(link->fd, SHUT_RDWR);
  for (std::unique_ptr<Link> &link : links) {
    if (link->reader.joinable())
      link->reader.join();
    if (link->fd >= 0)
      ::close(link->fd);
  }
}

MessageLinks::Link &MessageLinks::link(int peer) {
  if (peer < 0 || peer >= static_cast<int>(links.size()) || peer == rank ||
      links[peer]->fd < 0)
    throw std::runtime_error(
        "rank " + std::to_string(rank) + " has no link to rank " +
        std::to_string(peer) +
        " (a rank links only with the ranks it exchanges messages with: "
        "the members of its groups)");
  return *links[peer];
}

void MessageLinks::read(int peer) {
  Link &from = *links[peer];
  std::string failure = "the connection to rank " + std::to_string(peer) +
                        " closed (the rank failed or finished)";
  while (true) {
    FrameHeader header;
    MessageBytes bytes;
    FrameRead outcome = readFrame(from.fd, from.seal.get(), header, bytes);
    if (outcome == FrameRead::Altered) {
      failure = "a message from rank " + std::to_string(peer) +
                " failed its integrity check (HMAC-SHA256 under the job "
                "secret): it was altered on the way or did not come from "
                "that rank, so its link is closed; if no one tampers with "
                "the network, check that every rank runs with the same "
                "--link-integrity";
      std::cerr << "pp: rank " + std::to_string(rank) + ": " + failure + "\n";
    }
    if (outcome == FrameRead::TooLarge)
      failure = "rank " + std::to_string(peer) + " sent a message of " +
                std::to_string(header.size) +
                " bytes, more than this rank can allocate";
    if (outcome != FrameRead::Received)
      break;
    std::lock_guard<std::mutex> lock(mutex);
    from.arrived[{header.channel, header.slot}].push_back(std::move(bytes));
    arrivedOne.notify_all();
  }
  // The peer learns at once that this end stopped reading.
  ::shutdown(from.fd, SHUT_RDWR);
  std::lock_guard<std::mutex> lock(mutex);
  from.failure = failure;
  arrivedOne.notify_all();
}

void MessageLinks::send(int peer, uint64_t channel, uint64_t slot,
                        const void *bytes, size_t size) {
  Link &to = link(peer);
  std::lock_guard<std::mutex> lock(to.writing);
  if (!writeFrame(to.fd, to.seal.get(), channel, slot, bytes, size))
    throw std::runtime_error("sending a message to rank " +
                             std::to_string(peer) +
                             " failed: " + std::strerror(errno) +
                             " (the rank failed or stopped reading)");
}

std::deque<MessageBytes> &
MessageLinks::waitForMessage(std::unique_lock<std::mutex> &lock, int peer,
                             uint64_t channel, uint64_t slot,
                             Patience patience) {
  Link &from = link(peer);
  std::deque<MessageBytes> *queue = nullptr;
  auto ready = [&] {
    auto it = from.arrived.find({channel, slot});
    queue = it == from.arrived.end() ? nullptr : &it->second;
    return queue || !from.failure.empty();
  };
  bool arrived = true;
  RecordedWait recorded(peer);
  if (patience == Patience::UntilSenderEnds)
    arrivedOne.wait(lock, ready);
  else
    arrived = arrivedOne.wait_for(lock, timeout, ready);
  if (!queue) {
    if (!arrived)
      throw CommunicationTimeout(
          "timed out after " + std::to_string(timeout.count() / 1000) +
          " s waiting for a message from rank " + std::to_string(peer));
    throw std::runtime_error("waiting for a message from rank " +
                             std::to_string(peer) + ": " + from.failure);
  }
  return *queue;
}

void MessageLinks::await(int peer, uint64_t channel, uint64_t slot,
                         Patience patience) {
  std::unique_lock<std::mutex> lock(mutex);
  waitForMessage(lock, peer, channel, slot, patience);
}

MessageBytes MessageLinks::take(int peer, uint64_t channel, uint64_t slot,
                                Patience patience) {
  std::unique_lock<std::mutex> lock(mutex);
  std::deque<MessageBytes> &queue =
      waitForMessage(lock, peer, channel, slot, patience);
  MessageBytes message = std::move(queue.front());
  queue.pop_front();
  if (queue.empty())
    link(peer).arrived.erase({channel, slot});
  return message;
}

void MessageLinks::recv(int peer, uint64_t channel, uint64_t slot,
                        Patience patience, void *bytes, size_t size) {
  MessageBytes message = take(peer, channel, slot, patience);
  if (message.size() != size)
    throw std::runtime_error("a message from rank " + std::to_string(peer) +
                             " has " + std::to_string(message.size()) +
                             " bytes where " + std::to_string(size) +
                             " were expected");
  if (size != 0)
    std::memcpy(bytes, message.data(), size);
}

} // namespace pp::runtime
