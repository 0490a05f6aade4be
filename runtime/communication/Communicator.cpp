//===- Communicator.cpp - messages and collectives between ranks ----------===//

#include "runtime/communication/Communicator.h"
#include "runtime/communication/JobSecret.h"
#include "runtime/communication/MessageLinks.h"
#include "runtime/communication/TcpStore.h"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <stdexcept>
#include <unistd.h>

namespace pp::runtime {
namespace {

/// Connects `context` to its peers through `store`, explaining failures.
void connect(gloo::rendezvous::Context &context, gloo::rendezvous::Store &store,
             std::shared_ptr<gloo::transport::Device> &device,
             std::chrono::milliseconds timeout) {
  context.setTimeout(timeout);
  try {
    context.connectFullMesh(store, device);
  } catch (const std::exception &error) {
    throw std::runtime_error(std::string("connecting the ranks failed: ") +
                             error.what());
  }
}

} // namespace

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
  store = std::make_shared<TcpStore>(info.masterAddr, info.masterPort,
                                     info.rank == 0, info.jobSecret,
                                     info.timeout);
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
  links = std::make_shared<MessageLinks>(myRank, size, *store, attr.hostname,
                                         info.jobSecret, timeout);
}

Communicator::Communicator(const Communicator &parent, int rank,
                           std::vector<int64_t> jobRanks, uint64_t channel)
    : myRank(rank), size(static_cast<int>(jobRanks.size())),
      timeout(parent.timeout), jobRanks(std::move(jobRanks)),
      store(parent.store), device(parent.device), links(parent.links),
      channel(channel) {}

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
  std::unique_ptr<Communicator> group(new Communicator(
      *this, groupRank, std::move(members), messageSlot(key)));
  if (group->size == 1)
    return group;
  gloo::rendezvous::PrefixStore prefixed(key, *store);
  group->context =
      std::make_shared<gloo::rendezvous::Context>(groupRank, group->size);
  connect(*group->context, prefixed, group->device, timeout);
  return group;
}

void Communicator::send(int peer, uint64_t slot, const void *bytes,
                        size_t size) {
  links->send(static_cast<int>(jobRanks.at(peer)), channel, slot, bytes, size);
}

void Communicator::recv(int peer, uint64_t slot, void *bytes, size_t size) {
  links->recv(static_cast<int>(jobRanks.at(peer)), channel, slot, bytes, size);
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
  gloo::allreduce(options);
}

void Communicator::broadcast(void *bytes, size_t size, int root) {
  if (this->size == 1 || size == 0)
    return;
  gloo::BroadcastOptions options(context);
  options.setOutput(static_cast<char *>(bytes), size);
  options.setRoot(root);
  options.setTimeout(timeout);
  gloo::broadcast(options);
}

uint64_t messageSlot(const std::string &description) {
  // FNV-1a, folded below 2^56: Gloo reserves the top byte of slots.
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : description)
    hash = (hash ^ c) * 1099511628211ull;
  return hash & ((1ull << 56) - 1);
}

} // namespace pp::runtime
