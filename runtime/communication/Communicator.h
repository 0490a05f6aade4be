//===- Communicator.h - messages and collectives between ranks --*- C++ -*-===//

#ifndef PP_RUNTIME_COMMUNICATOR_H
#define PP_RUNTIME_COMMUNICATOR_H

#include "runtime/core/ElementTypes.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pp::runtime {

/// A range a reduce-scatter leaves on one rank (LinkCollectives.h).
struct OwnedRange;

/// Which of a job's links seal their messages (MessageSeal.h).
enum class LinkIntegrity {
  /// None: for a network only the job's machines share.
  Off,
  /// Links that may cross a network (leavesHost, Socket.h); links between
  /// ranks of one host stay in its kernel.
  AcrossHosts,
  /// Every link.
  Always,
};

/// The LinkIntegrity `name` (off, across-hosts, always) names, or nullopt.
std::optional<LinkIntegrity> parseLinkIntegrity(const std::string &name);
/// The spelling of `integrity` that parseLinkIntegrity reads.
const char *linkIntegrityName(LinkIntegrity integrity);

/// Where a rank finds the others (torchrun's environment variables) and
/// the secret they share (PP_JOB_SECRET, see JobSecret.h).
struct RendezvousInfo {
  int rank = 0;
  int worldSize = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  /// Required when the job has more than one rank: the same on all.
  std::string jobSecret;
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  /// Rank 0 only: the rendezvous store's listening socket, made by the
  /// launcher (PP_STORE_FD), or -1 to bind MASTER_ADDR:MASTER_PORT itself.
  int storeListener = -1;
  /// The ranks this rank exchanges messages with, the only ones it links
  /// with (each lists this rank too); every other rank when unset.
  std::optional<std::vector<int>> peers;
  /// Which links seal their messages: the same on every rank.
  LinkIntegrity linkIntegrity = LinkIntegrity::AcrossHosts;
  /// What every rank must hold the same of before the ranks link (pp-rank:
  /// its package's identity), and what a refusal says after the ranks
  /// that differ from rank 0 ("loaded another package than rank 0: ...").
  /// Empty: nothing to agree on.
  std::string agreement, disagreement;
};

/// How long a receive waits for its message.
enum class Patience {
  /// Up to the communicator's timeout: a peer that falls silent has failed.
  Timeout,
  /// Until the message comes or the sender's connection ends: for a rank
  /// idle by design (a stage waiting for rank 0 to ask for its parameters
  /// while rank 0 writes others' to disk).
  UntilSenderEnds,
};

/// Point-to-point messages and collectives (LinkCollectives.h) between the
/// CPU ranks of a job, or of a group of them (see split()), all over
/// MessageLinks: direct connections between the ranks, each of which proved
/// the job's secret. Throws std::runtime_error on failures and timeouts.
class Communicator {
public:
  /// Links each rank with its `info.peers`; a world of one needs no
  /// network. Rank 0 serves the rendezvous store on `info.masterAddr` only
  /// (or on the launcher's `info.storeListener`), and a rank leaves it once
  /// its links stand; every rank of a local job (127.0.0.1, localhost)
  /// listens for the others on `info.masterAddr` too, a rank of any other
  /// job on the address of its interface that reaches the store (rank 0's
  /// too: MASTER_ADDR may only forward to it); every connection to a
  /// listener proves `info.jobSecret` before
  /// it carries a byte of the job's data. Messages and collectives reach
  /// linked ranks only.
  explicit Communicator(const RendezvousInfo &info);
  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  /// This rank's number among the communicator's ranks.
  int rank() const { return myRank; }
  /// How many ranks the communicator connects.
  int worldSize() const { return size; }
  /// The job rank of this communicator's rank `rank`.
  int jobRank(int rank) const { return static_cast<int>(jobRanks.at(rank)); }
  /// The other members by job rank, for messages: "rank 1", "ranks 1, 2
  /// and 3".
  std::string describePeers() const;

  /// How long an exchange waits for the other ranks (the job's --timeout).
  std::chrono::milliseconds timeLimit() const { return timeout; }

  /// A communicator over `ranks` (ranks of this communicator, increasing,
  /// this rank among them) in which rank i is `ranks[i]`. Every rank in
  /// `ranks` calls it with the same `label` and `ranks`; `label` tells
  /// apart groups made for different purposes. A group's messages take the
  /// job's links on a channel derived from the label and the members' job
  /// ranks, so making one exchanges nothing.
  std::unique_ptr<Communicator> split(const std::string &label,
                                      const std::vector<int64_t> &ranks);

  /// Sends `bytes` to `peer` on `slot`; returns once they are written to
  /// the connection, without waiting for the receive (the receiver keeps
  /// messages that arrive before their receive).
  void send(int peer, uint64_t slot, const void *bytes, size_t size);
  /// Receives exactly `size` bytes sent to this rank by `peer` on `slot`.
  void recv(int peer, uint64_t slot, void *bytes, size_t size,
            Patience patience = Patience::Timeout);
  /// Waits until the message recv(peer, slot, ...) would take has arrived,
  /// leaving it there.
  void await(int peer, uint64_t slot, Patience patience = Patience::Timeout);

  /// Element-wise sum over all ranks, result on every rank (the same bits
  /// on each: every element is summed once, in rank order 0, 1, ...,
  /// then copied).
  void allReduceSum(std::vector<double> &values);
  /// allReduceSum of `count` floats at `values`.
  void allReduceSum(float *values, size_t count);
  /// Sums each range of `ranges` (of the `count` floats at `values`) over
  /// all ranks and leaves the sum on the range's owner only, the same bits
  /// as allReduceSum (reduceScatterSumOverLinks); other ranks keep their
  /// values there. Every rank passes the same ranges. Throws
  /// std::invalid_argument for a range outside the buffer or an owner
  /// outside the group.
  void reduceScatterSum(float *values, size_t count,
                        const std::vector<OwnedRange> &ranges);
  /// The two sums above of bf16 values: an element's sum adds the ranks'
  /// values widened to float, in rank order, rounded to bf16 once.
  void allReduceSum(BFloat16 *values, size_t count);
  void reduceScatterSum(BFloat16 *values, size_t count,
                        const std::vector<OwnedRange> &ranges);
  /// Gathers every rank's `count` floats at `mine` into `all` (`count` x
  /// the ranks), in rank order, on every rank.
  void allGather(const float *mine, size_t count, float *all);
  /// Gathers every rank's `bytes` bytes at `mine` into `all` (`bytes` x
  /// the ranks), in rank order, on every rank.
  void allGatherBytes(const void *mine, size_t bytes, void *all);
  /// Every rank's `mine` (of any length), in rank order, on every rank.
  std::vector<std::string> allGatherText(const std::string &mine);
  /// Copies `size` bytes from `root` to every rank.
  void broadcast(void *bytes, size_t size, int root);

private:
  /// The job rank of the one other member of a group of two, else -1
  /// (several, or none): whom a collective's failure was with.
  int onlyPeer() const;
  /// Runs `exchange`, the collective `kind` ("an all-reduce") of `bytes`
  /// bytes over the group, recorded in the flight record; its failure is
  /// one with the group.
  template <typename Exchange>
  void collective(const char *kind, size_t bytes, Exchange exchange);

  /// This communicator's ranks on the job's links, for the collectives.
  struct LinkGroup linkGroup() const;
  /// The sums of T (float or BFloat16) above.
  template <typename T> void allReduceSumOf(T *values, size_t count);
  template <typename T>
  void reduceScatterSumOf(T *values, size_t count,
                          const std::vector<OwnedRange> &ranges);
  Communicator(const Communicator &parent, int rank,
               std::vector<int64_t> jobRanks, uint64_t channel);

  int myRank = 0, size = 1;
  std::chrono::milliseconds timeout;
  /// The job rank of each of this communicator's ranks.
  std::vector<int64_t> jobRanks;
  std::shared_ptr<class TcpStore> store;
  /// The job's links, shared by its groups, and the channel that tells this
  /// communicator's messages apart from other groups' on them.
  std::shared_ptr<class MessageLinks> links;
  uint64_t channel = 0;
};

/// What a wait for a message throws when its peer sent nothing within the
/// timeout (rather than failing or closing the connection).
class CommunicationTimeout : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The error to throw for a failure to exchange messages with job rank
/// `peer` (-1: several), with `message` as its text, which `timedOut`
/// (nothing came within the timeout); remembers the process's first
/// (firstCommunicationFailure).
std::runtime_error communicationFailure(const std::string &message, int peer,
                                        bool timedOut = false);

/// The job rank that this process's first failure to exchange messages (a
/// timeout, a lost connection) was with, -1 for several ranks (a collective,
/// connecting), or nullopt if none failed yet. A rank's failure after one is
/// its consequence, even where the error passed through code that keeps
/// only text (a stage function's receive).
std::optional<int> firstCommunicationFailure();

/// Whether this process's first failure to exchange messages was a timeout
/// (false when none failed): a hang somewhere, which its flight record
/// helps find (FlightRecord.h).
bool firstCommunicationFailureTimedOut();

/// Forgets the failures recorded so far: a process that runs several jobs
/// one after another (the unit tests' thread ranks) starts each with none.
void forgetCommunicationFailures();

/// The job rank whose message this process has waited for longest, among
/// the waits in progress, and for how many seconds (`waitedSeconds`); -1
/// when none is. Async-signal-safe: what a rank stopped in a wait reports
/// (pp-rank's SIGTERM handler).
int longestAwaitedPeer(int64_t &waitedSeconds);

/// A message slot both ends derive from the same description.
uint64_t messageSlot(const std::string &description);

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATOR_H
