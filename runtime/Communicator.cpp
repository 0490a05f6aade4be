//===- Communicator.cpp - messages and collectives between ranks ----------===//

#include "runtime/Communicator.h"
#include "runtime/TcpStore.h"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstring>
#include <stdexcept>
#include <unistd.h>

namespace pp::runtime {

struct Communicator::PendingSend {
  std::vector<char> bytes;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
};

Communicator::Communicator(const RendezvousInfo &info) : info(info) {
  if (info.worldSize == 1)
    return;
  // Rank 0 serves the store for the whole job: others may still read it
  // after rank 0 has connected.
  store = std::make_unique<TcpStore>(info.masterAddr, info.masterPort,
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
  auto device = gloo::transport::tcp::CreateDevice(attr);
  context =
      std::make_shared<gloo::rendezvous::Context>(info.rank, info.worldSize);
  context->setTimeout(info.timeout);
  try {
    context->connectFullMesh(*store, device);
  } catch (const std::exception &error) {
    throw std::runtime_error(std::string("connecting the ranks failed: ") +
                             error.what());
  }
}

Communicator::~Communicator() {
  try {
    flushSends();
  } catch (const std::exception &) {
    // The job is failing already; the first error has been reported.
  }
}

void Communicator::send(int peer, uint64_t slot, const void *bytes,
                        size_t size) {
  auto message = std::make_unique<PendingSend>();
  message->bytes.assign(static_cast<const char *>(bytes),
                        static_cast<const char *>(bytes) + size);
  message->buffer = context->createUnboundBuffer(message->bytes.data(),
                                                 message->bytes.size());
  message->buffer->send(peer, slot);
  pending.push_back(std::move(message));
}

void Communicator::recv(int peer, uint64_t slot, void *bytes, size_t size) {
  auto buffer = context->createUnboundBuffer(bytes, size);
  buffer->recv(peer, slot);
  if (!buffer->waitRecv(info.timeout))
    throw std::runtime_error(
        "timed out after " + std::to_string(info.timeout.count() / 1000) +
        " s waiting for a message from rank " + std::to_string(peer));
}

void Communicator::flushSends() {
  for (auto &message : pending)
    if (!message->buffer->waitSend(info.timeout))
      throw std::runtime_error("timed out delivering a message");
  pending.clear();
}

void Communicator::allReduceSum(std::vector<double> &values) {
  if (info.worldSize == 1 || values.empty())
    return;
  gloo::AllreduceOptions options(context);
  options.setOutput(values.data(), values.size());
  options.setReduceFunction(
      static_cast<void (*)(void *, const void *, const void *, size_t)>(
          &gloo::sum<double>));
  options.setTimeout(info.timeout);
  gloo::allreduce(options);
}

void Communicator::broadcast(void *bytes, size_t size, int root) {
  if (info.worldSize == 1 || size == 0)
    return;
  gloo::BroadcastOptions options(context);
  options.setOutput(static_cast<char *>(bytes), size);
  options.setRoot(root);
  options.setTimeout(info.timeout);
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
