//===- ThreadRanks.h - a job's ranks as threads of a test -------*- C++ -*-===//

#ifndef PP_TEST_UNIT_RUNTIME_THREADRANKS_H
#define PP_TEST_UNIT_RUNTIME_THREADRANKS_H

#include "FreePort.h"

#include "runtime/communication/Communicator.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace pp::runtime::test {

/// The ranks each rank links with (RendezvousInfo::peers), by rank.
using PeersOf = std::function<std::vector<int>(int)>;

/// How a test's thread ranks connect.
struct RankOptions {
  RankOptions(std::chrono::milliseconds timeout = std::chrono::seconds(30),
              PeersOf peersOf = {})
      : timeout(timeout), peersOf(std::move(peersOf)) {}

  /// How long an exchange waits.
  std::chrono::milliseconds timeout;
  /// Whom each rank links with; every other rank when empty.
  PeersOf peersOf;
  LinkIntegrity integrity = LinkIntegrity::AcrossHosts;
  /// What each rank must agree on (RendezvousInfo::agreement), by rank, and
  /// what a refusal says; nothing when empty.
  std::function<std::string(int)> agreementOf;
  std::string disagreement;
};

/// Connects rank `rank` of a job of `size` ranks whose store listens on
/// `port` as `options` say and runs `body` on its world communicator;
/// returns what it threw ("" when nothing; a placeholder for an exception
/// without a message, so that it still counts).
inline std::string runRank(int rank, int size, int port,
                           const std::function<void(Communicator &)> &body,
                           const RankOptions &options) {
  try {
    RendezvousInfo info;
    info.rank = rank;
    info.worldSize = size;
    info.masterPort = port;
    info.jobSecret = "the job's secret";
    info.timeout = options.timeout;
    if (options.peersOf)
      info.peers = options.peersOf(rank);
    info.linkIntegrity = options.integrity;
    if (options.agreementOf)
      info.agreement = options.agreementOf(rank);
    info.disagreement = options.disagreement;
    Communicator world(info);
    body(world);
  } catch (const std::exception &error) {
    std::string message = error.what();
    return message.empty() ? "an error without a message" : message;
  }
  return "";
}

/// Runs `body` on `size` threads, each one rank of a job whose rank 0
/// serves the rendezvous store on a free local port, connected as
/// `options` say; expects that no rank throws.
inline void runRanks(int size, const std::function<void(Communicator &)> &body,
                     const RankOptions &options = {}) {
  // Each job starts with no failure recorded, whatever ran before it.
  forgetCommunicationFailures();
  int port = freePort();
  std::vector<std::string> errors(size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank)
    threads.emplace_back(
        [&, rank] { errors[rank] = runRank(rank, size, port, body, options); });
  for (std::thread &thread : threads)
    thread.join();
  for (int rank = 0; rank < size; ++rank)
    EXPECT_EQ(errors[rank], "") << "rank " << rank;
}

} // namespace pp::runtime::test

#endif // PP_TEST_UNIT_RUNTIME_THREADRANKS_H
