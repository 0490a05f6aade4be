//===- Communicator.h - messages and collectives between ranks --*- C++ -*-===//

#ifndef PP_RUNTIME_COMMUNICATOR_H
#define PP_RUNTIME_COMMUNICATOR_H

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gloo::rendezvous {
class Context;
}
namespace gloo::transport {
class UnboundBuffer;
}

namespace pp::runtime {

/// Where a rank finds the others (torchrun's environment variables).
struct RendezvousInfo {
  int rank = 0;
  int worldSize = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
};

/// Point-to-point messages and collectives between the CPU ranks of a job,
/// over Gloo. Throws std::runtime_error on failures and timeouts.
class Communicator {
public:
  /// Connects all ranks; a world of one needs no network.
  explicit Communicator(const RendezvousInfo &info);
  ~Communicator();

  int rank() const { return info.rank; }
  int worldSize() const { return info.worldSize; }

  /// Starts sending a copy of `bytes` to `peer`; completes by flushSends().
  void send(int peer, uint64_t slot, const void *bytes, size_t size);
  /// Receives exactly `size` bytes sent to this rank by `peer` on `slot`.
  void recv(int peer, uint64_t slot, void *bytes, size_t size);
  /// Waits until every send has been delivered.
  void flushSends();

  /// Element-wise sum over all ranks, result on every rank.
  void allReduceSum(std::vector<double> &values);
  /// Copies `size` bytes from `root` to every rank.
  void broadcast(void *bytes, size_t size, int root);

private:
  struct PendingSend;
  RendezvousInfo info;
  std::unique_ptr<class TcpStore> store;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::vector<std::unique_ptr<PendingSend>> pending;
};

/// A message slot both ends derive from the same description.
uint64_t messageSlot(const std::string &description);

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATOR_H
