//===- Communicator.cpp - messages and collectives between ranks ----------===//

#include "runtime/communication/Communicator.h"
#include "runtime/communication/TcpStore.h"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace pp::runtime {
namespace {

/// See firstCommunicationFailure().
std::mutex firstFailureMutex;
std::optional<int> firstFailurePeer;

/// The error to throw for a failure to exchange messages with job rank
/// `peer` (-1: several); remembers the process's first.
std::runtime_error communicationFailure(const std::string &message, int peer) {
  std::lock_guard<std::mutex> lock(firstFailureMutex);
  if (!firstFailurePeer)
    firstFailurePeer = peer;
  return std::runtime_error(message);
}

/// Runs the collective `run` named `name`; its failure is one with several
/// ranks.
template <typename Run> void collective(const std::string &name, Run run) {
  try {
    run();
  } catch (const std::exception &error) {
    throw communicationFailure(name + " failed: " + error.what(), -1);
  }
}

/// A copy of sent bytes, kept until the send is delivered.
struct PendingSend {
  int peer = 0;
  std::vector<char> bytes;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
};

/// Connects `context` to its peers through `store`, explaining failures.
void connect(gloo::rendezvous::Context &context, gloo::rendezvous::Store &store,
             std::shared_ptr<gloo::transport::Device> &device,
             std::chrono::milliseconds timeout) {
  context.setTimeout(timeout);
  try {
    context.connectFullMesh(store, device);
  } catch (const std::exception &error) {
    throw communicationFailure(
        std::string("connecting the ranks failed: ") + error.what(), -1);
  }
}

} // namespace

/// The sends in flight, oldest first. A thread waits for each in turn and
/// frees its copy once Gloo reports it delivered, so a sender holds only
/// what its receivers have not taken yet. Sends stay in order, so slots and
/// results do not depend on timing.
class Communicator::SendQueue {
public:
  /// Sends to rank i of the communicator go to job rank `jobRanks[i]`.
  SendQueue(std::chrono::milliseconds timeout, std::vector<int64_t> jobRanks)
      : timeout(timeout), jobRanks(std::move(jobRanks)),
        waiter([this] { run(); }) {}

  /// Stops waiting (aborting the wait in progress) and joins the thread.
  ~SendQueue() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      if (!queue.empty())
        queue.front()->buffer->abortWaitSend();
      changed.notify_all();
    }
    waiter.join();
  }

  void push(std::unique_ptr<PendingSend> send) {
    std::lock_guard<std::mutex> lock(mutex);
    rethrowFailure();
    queue.push_back(std::move(send));
    changed.notify_all();
  }

  /// Waits until every send has been delivered.
  void flush() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return queue.empty() || failure; });
    rethrowFailure();
  }

  /// Throws the failure of a delivery, if one failed.
  void check() {
    std::lock_guard<std::mutex> lock(mutex);
    rethrowFailure();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex);
    return queue.size();
  }

private:
  void rethrowFailure() const {
    if (failure)
      throw std::runtime_error(failure->c_str());
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping)
        return;
      // Only this thread removes entries: `oldest` outlives the wait.
      PendingSend *oldest = queue.front().get();
      lock.unlock();
      std::string error;
      try {
        oldest->buffer->waitSend(timeout);
      } catch (const std::exception &exception) {
        error = exception.what();
      }
      lock.lock();
      if (stopping)
        return;
      if (!error.empty()) {
        failure = communicationFailure("delivering a message to rank " +
                                           std::to_string(oldest->peer) +
                                           " failed: " + error,
                                       static_cast<int>(jobRanks[oldest->peer]))
                      .what();
        changed.notify_all();
        return;
      }
      queue.pop_front();
      changed.notify_all();
    }
  }

  const std::chrono::milliseconds timeout;
  const std::vector<int64_t> jobRanks;
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::unique_ptr<PendingSend>> queue;
  std::optional<std::string> failure;
  bool stopping = false;
  std::thread waiter;
};

Communicator::Communicator(const RendezvousInfo &info)
    : myRank(info.rank), size(info.worldSize), timeout(info.timeout) {
  for (int rank = 0; rank < size; ++rank)
    jobRanks.push_back(rank);
  if (size == 1)
    return;
  // Rank 0 serves the store for the whole job: others may still read it
  // after rank 0 has connected.
  store = std::make_shared<TcpStore>(info.masterAddr, info.masterPort,
                                     info.rank == 0, info.timeout);
  // Listen where the others can reach this rank: the master address on
  // rank 0 or in a single-machine job, this machine's name elsewhere.
  gloo::transport::tcp::attr attr;
  bool local = info.masterAddr == "127.0.0.1" || info.masterAddr == "localhost";
  if (info.rank == 0 || local) {
    attr.hostname = info.masterAddr;
  } else {
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    attr.hostname = host;
  }
  device = gloo::transport::tcp::CreateDevice(attr);
  context = std::make_shared<gloo::rendezvous::Context>(myRank, size);
  connect(*context, *store, device, timeout);
  startSends();
}

Communicator::Communicator(const Communicator &parent, int rank,
                           std::vector<int64_t> jobRanks)
    : myRank(rank), size(static_cast<int>(jobRanks.size())),
      timeout(parent.timeout), jobRanks(std::move(jobRanks)),
      store(parent.store), device(parent.device) {}

void Communicator::startSends() {
  sends = std::make_unique<SendQueue>(timeout, jobRanks);
}

Communicator::~Communicator() {
  try {
    flushSends();
  } catch (const std::exception &) {
    // The job is failing already; the first error has been reported.
  }
}

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
  std::unique_ptr<Communicator> group(
      new Communicator(*this, groupRank, std::move(members)));
  if (group->size == 1)
    return group;
  gloo::rendezvous::PrefixStore prefixed(key, *store);
  group->context =
      std::make_shared<gloo::rendezvous::Context>(groupRank, group->size);
  connect(*group->context, prefixed, group->device, timeout);
  group->startSends();
  return group;
}

void Communicator::send(int peer, uint64_t slot, const void *bytes,
                        size_t size) {
  auto message = std::make_unique<PendingSend>();
  message->peer = peer;
  message->bytes.assign(static_cast<const char *>(bytes),
                        static_cast<const char *>(bytes) + size);
  message->buffer = context->createUnboundBuffer(message->bytes.data(),
                                                 message->bytes.size());
  message->buffer->send(peer, slot);
  sends->push(std::move(message));
}

void Communicator::recv(int peer, uint64_t slot, void *bytes, size_t size) {
  sends->check();
  try {
    auto buffer = context->createUnboundBuffer(bytes, size);
    buffer->recv(peer, slot);
    if (!buffer->waitRecv(timeout))
      throw std::runtime_error("timed out after " +
                               std::to_string(timeout.count() / 1000) + " s");
  } catch (const std::exception &error) {
    throw communicationFailure("waiting for a message from rank " +
                                   std::to_string(peer) +
                                   " failed: " + error.what(),
                               static_cast<int>(jobRanks[peer]));
  }
}

void Communicator::flushSends() {
  if (sends)
    sends->flush();
}

size_t Communicator::pendingSendCount() const {
  return sends ? sends->size() : 0;
}

void Communicator::allReduceSum(std::vector<double> &values) {
  if (size == 1 || values.empty())
    return;
  gloo::AllreduceOptions options(context);
  options.setOutput(values.data(), values.size());
  options.setReduceFunction(
      static_cast<void (*)(void *, const void *, const void *, size_t)>(
          &gloo::sum<double>));
  options.setTimeout(timeout);
  collective("summing over " + std::to_string(size) + " ranks",
             [&] { gloo::allreduce(options); });
}

void Communicator::broadcast(void *bytes, size_t size, int root) {
  if (this->size == 1 || size == 0)
    return;
  gloo::BroadcastOptions options(context);
  options.setOutput(static_cast<char *>(bytes), size);
  options.setRoot(root);
  options.setTimeout(timeout);
  collective("broadcasting from rank " + std::to_string(root),
             [&] { gloo::broadcast(options); });
}

std::optional<int> firstCommunicationFailure() {
  std::lock_guard<std::mutex> lock(firstFailureMutex);
  return firstFailurePeer;
}

uint64_t messageSlot(const std::string &description) {
  // FNV-1a, folded below 2^56: Gloo reserves the top byte of slots.
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : description)
    hash = (hash ^ c) * 1099511628211ull;
  return hash & ((1ull << 56) - 1);
}

} // namespace pp::runtime
