//===- Communicator.cpp - messages and collectives between ranks ----------===//

#include "runtime/communication/Communicator.h"

#include "runtime/communication/FlightRecord.h"
#include "runtime/communication/JobSecret.h"
#include "runtime/communication/LinkCollectives.h"
#include "runtime/communication/MessageLinks.h"
#include "runtime/communication/Socket.h"
#include "runtime/communication/TcpStore.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unistd.h>

namespace pp::runtime {
namespace {

/// See firstCommunicationFailure().
std::mutex firstFailureMutex;
std::optional<int> firstFailurePeer;
bool firstFailureTimedOut = false;

/// Runs `exchange`; a failure is one with job rank `peer` (-1: several),
/// described as `what` failed.
template <typename Exchange>
void exchangeWith(int peer, const std::string &what, Exchange exchange) {
  try {
    exchange();
  } catch (const std::exception &error) {
    throw communicationFailure(
        what.empty() ? error.what() : what + " failed: " + error.what(), peer,
        dynamic_cast<const CommunicationTimeout *>(&error) != nullptr);
  }
}

/// The ranks `info.rank` links with: `info.peers` checked, or every other
/// rank.
std::vector<int> linkedPeers(const RendezvousInfo &info) {
  std::vector<int> peers;
  if (!info.peers) {
    for (int rank = 0; rank < info.worldSize; ++rank)
      if (rank != info.rank)
        peers.push_back(rank);
    return peers;
  }
  peers = *info.peers;
  std::sort(peers.begin(), peers.end());
  for (size_t i = 0; i < peers.size(); ++i)
    if (peers[i] < 0 || peers[i] >= info.worldSize || peers[i] == info.rank ||
        (i > 0 && peers[i] == peers[i - 1]))
      throw std::invalid_argument(
          "rank " + std::to_string(info.rank) + " of " +
          std::to_string(info.worldSize) + " cannot link with rank " +
          std::to_string(peers[i]) +
          ": peers are other ranks of the job, each listed once");
  return peers;
}

/// Throws on every rank, naming the ranks (and the addresses they listen
/// on, `host` here) whose `info.agreement` is not rank 0's, unless all
/// agree; rank 0 compares what every rank published in `store`.
void checkAgreement(TcpStore &store, const RendezvousInfo &info,
                    const std::string &host) {
  auto bytes = [](const std::string &text) {
    return std::vector<char>(text.begin(), text.end());
  };
  // What `rank` published under `key`, waiting for it up to the timeout.
  auto published = [&](const std::string &key, int rank) {
    try {
      std::vector<char> value = store.get(key);
      return std::string(value.begin(), value.end());
    } catch (const std::runtime_error &) {
      throw communicationFailure(
          "rank " + std::to_string(rank) +
              " did not reach the rendezvous store within " +
              std::to_string(info.timeout.count() / 1000) +
              " s (a rank failed or never started)",
          rank, true);
    }
  };
  store.set("agreement/" + std::to_string(info.rank), bytes(info.agreement));
  store.set("address/" + std::to_string(info.rank), bytes(host));
  if (info.rank == 0) {
    std::string differing;
    int count = 0;
    for (int rank = 1; rank < info.worldSize; ++rank)
      if (published("agreement/" + std::to_string(rank), rank) !=
          info.agreement)
        differing += (count++ ? ", " : "") + std::to_string(rank) + " (at " +
                     published("address/" + std::to_string(rank), rank) + ")";
    store.set("agreement",
              bytes(count == 0 ? ""
                               : (count == 1 ? "rank " : "ranks ") + differing +
                                     " " + info.disagreement));
  }
  std::string refusal = published("agreement", 0);
  if (!refusal.empty())
    throw std::runtime_error(refusal);
}

} // namespace

std::optional<LinkIntegrity> parseLinkIntegrity(const std::string &name) {
  for (LinkIntegrity integrity :
       {LinkIntegrity::Off, LinkIntegrity::AcrossHosts, LinkIntegrity::Always})
    if (name == linkIntegrityName(integrity))
      return integrity;
  return std::nullopt;
}

const char *linkIntegrityName(LinkIntegrity integrity) {
  switch (integrity) {
  case LinkIntegrity::Off:
    return "off";
  case LinkIntegrity::AcrossHosts:
    return "across-hosts";
  case LinkIntegrity::Always:
    return "always";
  }
  return "unknown";
}

Communicator::Communicator(const RendezvousInfo &info)
    : myRank(info.rank), size(info.worldSize), timeout(info.timeout) {
  for (int rank = 0; rank < size; ++rank)
    jobRanks.push_back(rank);
  if (size == 1)
    return;
  if (info.jobSecret.empty())
    throw std::runtime_error(
        "a job of " + std::to_string(size) + " ranks needs a job secret: set " +
        kJobSecretVariable +
        " to the same random value on every rank; pp-run's launcher does "
        "this for you");
  // Rank 0 serves the store for the whole job: others may still read it
  // after rank 0 has connected.
  // Reaching the store is waiting for rank 0.
  exchangeWith(info.rank == 0 ? -1 : 0, "", [&] {
    store = std::make_shared<TcpStore>(info.masterAddr, info.masterPort,
                                       info.rank == 0, info.jobSecret,
                                       info.timeout, info.storeListener);
  });
  // Listen where the others can reach this rank: loopback in a local job,
  // else the address of the interface this rank reaches the store through,
  // which routes between the job's machines (a host name may not resolve
  // to it, and MASTER_ADDR may only forward to rank 0's machine).
  std::string host = info.masterAddr;
  bool local = info.masterAddr == "127.0.0.1" || info.masterAddr == "localhost";
  if (!local) {
    host = store->localAddress();
    if (isLoopbackAddress(host))
      throw std::runtime_error(
          "MASTER_ADDR '" + info.masterAddr + "' is reached over loopback (" +
          host +
          ") from this machine, so other machines could not reach "
          "this rank; give an address of rank 0's machine on the network "
          "the machines share (not a name /etc/hosts maps to 127.0.1.1)");
  }
  if (!info.agreement.empty())
    checkAgreement(*store, info, host);
  std::vector<int> peers = linkedPeers(info);
  exchangeWith(-1, "connecting the ranks", [&] {
    links = std::make_shared<MessageLinks>(myRank, size, peers, *store, host,
                                           info.jobSecret, info.linkIntegrity,
                                           timeout);
  });
  // Rank 0 serves the store until every rank has read the addresses it
  // needs (a rank whose work needs no messages could end before others
  // link); then no rank holds a connection it does not exchange messages
  // on.
  store->set("linked/" + std::to_string(myRank), {});
  if (myRank == 0) {
    std::vector<std::string> linked;
    for (int rank = 1; rank < size; ++rank)
      linked.push_back("linked/" + std::to_string(rank));
    exchangeWith(-1, "connecting the ranks", [&] { store->wait(linked); });
  }
  store->disconnect();
}

Communicator::Communicator(const Communicator &parent, int rank,
                           std::vector<int64_t> jobRanks, uint64_t channel)
    : myRank(rank), size(static_cast<int>(jobRanks.size())),
      timeout(parent.timeout), jobRanks(std::move(jobRanks)),
      store(parent.store), links(parent.links), channel(channel) {}

Communicator::~Communicator() = default;

std::unique_ptr<Communicator>
Communicator::split(const std::string &label,
                    const std::vector<int64_t> &ranks) {
  std::vector<int64_t> members;
  int groupRank = -1;
  std::string key = "group/" + label;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size || (i > 0 && ranks[i] <= ranks[i - 1]))
      throw std::runtime_error(
          "group '" + label + "' lists rank " + std::to_string(ranks[i]) +
          " out of order or outside the " + std::to_string(size) + " ranks");
    if (ranks[i] == myRank)
      groupRank = static_cast<int>(i);
    members.push_back(jobRanks[ranks[i]]);
    key += (i ? "," : ":") + std::to_string(members.back());
  }
  if (groupRank < 0)
    throw std::runtime_error("rank " + std::to_string(myRank) +
                             " is not a member of group '" + label + "'");
  // The group's messages take the job's links, on a channel of its own.
  return std::unique_ptr<Communicator>(new Communicator(
      *this, groupRank, std::move(members), messageSlot(key)));
}

void Communicator::send(int peer, uint64_t slot, const void *bytes,
                        size_t size) {
  int jobRank = static_cast<int>(jobRanks.at(peer));
  recordFlight("send to", jobRank, size);
  exchangeWith(jobRank, "",
               [&] { links->send(jobRank, channel, slot, bytes, size); });
}

void Communicator::recv(int peer, uint64_t slot, void *bytes, size_t size,
                        Patience patience) {
  int jobRank = static_cast<int>(jobRanks.at(peer));
  recordFlight("recv from", jobRank, size);
  exchangeWith(jobRank, "", [&] {
    links->recv(jobRank, channel, slot, patience, bytes, size);
  });
}

void Communicator::await(int peer, uint64_t slot, Patience patience) {
  int jobRank = static_cast<int>(jobRanks.at(peer));
  recordFlight("await from", jobRank, 0);
  exchangeWith(jobRank, "",
               [&] { links->await(jobRank, channel, slot, patience); });
}

LinkGroup Communicator::linkGroup() const {
  return LinkGroup{*links, channel, myRank, jobRanks};
}

void Communicator::allReduceSum(std::vector<double> &values) {
  if (size == 1 || values.empty())
    return;
  collective("an all-reduce", values.size() * sizeof(double), [&] {
    allReduceSumOverLinks(linkGroup(), values.data(), values.size());
  });
}

template <typename T>
void Communicator::allReduceSumOf(T *values, size_t count) {
  if (size == 1 || count == 0)
    return;
  collective("an all-reduce", count * sizeof(T),
             [&] { allReduceSumOverLinks(linkGroup(), values, count); });
}

template <typename T>
void Communicator::reduceScatterSumOf(T *values, size_t count,
                                      const std::vector<OwnedRange> &ranges) {
  checkOwnedRanges(ranges, count, size);
  if (size == 1 || ranges.empty())
    return;
  collective("a reduce-scatter", count * sizeof(T),
             [&] { reduceScatterSumOverLinks(linkGroup(), values, ranges); });
}

void Communicator::allReduceSum(float *values, size_t count) {
  allReduceSumOf(values, count);
}

void Communicator::allReduceSum(BFloat16 *values, size_t count) {
  allReduceSumOf(values, count);
}

void Communicator::reduceScatterSum(float *values, size_t count,
                                    const std::vector<OwnedRange> &ranges) {
  reduceScatterSumOf(values, count, ranges);
}

void Communicator::reduceScatterSum(BFloat16 *values, size_t count,
                                    const std::vector<OwnedRange> &ranges) {
  reduceScatterSumOf(values, count, ranges);
}

void Communicator::allGather(const float *mine, size_t count, float *all) {
  allGatherBytes(mine, count * sizeof(float), all);
}

void Communicator::allGatherBytes(const void *mine, size_t bytes, void *all) {
  if (size == 1) {
    std::copy_n(static_cast<const char *>(mine), bytes,
                static_cast<char *>(all));
    return;
  }
  if (bytes == 0)
    return;
  collective("an all-gather", bytes,
             [&] { allGatherOverLinks(linkGroup(), mine, bytes, all); });
}

std::vector<std::string> Communicator::allGatherText(const std::string &mine) {
  uint64_t length = mine.size();
  std::vector<uint64_t> lengths(size);
  allGatherBytes(&length, sizeof(length), lengths.data());
  uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::string padded = mine;
  padded.resize(longest, '\0');
  std::string all(longest * size, '\0');
  allGatherBytes(padded.data(), longest, all.data());
  std::vector<std::string> texts;
  for (int rank = 0; rank < size; ++rank)
    texts.push_back(all.substr(rank * longest, lengths[rank]));
  return texts;
}

void Communicator::broadcast(void *bytes, size_t size, int root) {
  if (this->size == 1 || size == 0)
    return;
  // Waiting for the root's bytes: a failure is one with the root.
  int peer = root == myRank ? -1 : static_cast<int>(jobRanks.at(root));
  std::string what =
      "a broadcast from rank " + std::to_string(jobRanks.at(root));
  recordFlight(what, -1, size);
  exchangeWith(peer, what,
               [&] { broadcastOverLinks(linkGroup(), bytes, size, root); });
}

template <typename Exchange>
void Communicator::collective(const char *kind, size_t bytes,
                              Exchange exchange) {
  std::string what = kind + std::string(" with ") + describePeers();
  recordFlight(what, -1, bytes);
  exchangeWith(onlyPeer(), what, exchange);
}

int Communicator::onlyPeer() const {
  return size == 2 ? static_cast<int>(jobRanks[1 - myRank]) : -1;
}

std::string Communicator::describePeers() const {
  std::vector<int64_t> peers;
  for (int rank = 0; rank < size; ++rank)
    if (rank != myRank)
      peers.push_back(jobRanks[rank]);
  std::string text = peers.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < peers.size(); ++i)
    text += (i == 0 ? "" : i + 1 == peers.size() ? " and " : ", ") +
            std::to_string(peers[i]);
  return text;
}

std::runtime_error communicationFailure(const std::string &message, int peer,
                                        bool timedOut) {
  std::lock_guard<std::mutex> lock(firstFailureMutex);
  if (!firstFailurePeer) {
    firstFailurePeer = peer;
    firstFailureTimedOut = timedOut;
  }
  return std::runtime_error(message);
}

bool firstCommunicationFailureTimedOut() {
  std::lock_guard<std::mutex> lock(firstFailureMutex);
  return firstFailurePeer && firstFailureTimedOut;
}

void forgetCommunicationFailures() {
  std::lock_guard<std::mutex> lock(firstFailureMutex);
  firstFailurePeer.reset();
  firstFailureTimedOut = false;
}

std::optional<int> firstCommunicationFailure() {
  std::lock_guard<std::mutex> lock(firstFailureMutex);
  return firstFailurePeer;
}

uint64_t messageSlot(const std::string &description) {
  // FNV-1a, folded below 2^56: the collectives' slots lie above
  // (LinkCollectives.cpp).
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : description)
    hash = (hash ^ c) * 1099511628211ull;
  return hash & ((1ull << 56) - 1);
}

} // namespace pp::runtime
