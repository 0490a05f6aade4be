//===- TcpStore.h - rendezvous over MASTER_ADDR:MASTER_PORT -----*- C++ -*-===//
//
// A key-value store for the ranks' rendezvous, as torchrun's: rank 0 serves
// it on MASTER_ADDR:MASTER_PORT, every rank (rank 0 included) is a client,
// and only clients that know the job's secret get in. The server is one
// thread, whatever connects: it proves connections many at once, each
// within a deadline (ProofGate.h), and serves the proven ones from the same
// poll loop.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TCPSTORE_H
#define PP_RUNTIME_TCPSTORE_H

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pp::runtime {

class TcpStoreServer;

class TcpStore {
public:
  /// Connects to the store at `host:port`, serving it first when `serve`:
  /// on `listener` when given (a listening socket its launcher made and
  /// handed down, so that no other process can take the port in between;
  /// the store owns it then), else on the address `host` names only. Both
  /// ends prove that they know the job's `secret` (JobSecret.h); the server
  /// refuses, and logs on stderr, connections that do not. Throws
  /// std::runtime_error with a clear message on failure.
  TcpStore(const std::string &host, int port, bool serve,
           const std::string &secret, std::chrono::milliseconds timeout,
           int listener = -1);
  ~TcpStore();
  TcpStore(const TcpStore &) = delete;
  TcpStore &operator=(const TcpStore &) = delete;

  /// Sets `key` to `data`.
  void set(const std::string &key, const std::vector<char> &data);
  /// The value of `key`, waiting up to the timeout for a rank to set it.
  std::vector<char> get(const std::string &key);
  /// Waits up to the timeout until every one of `keys` is set.
  void wait(const std::vector<std::string> &keys);
  /// Closes this rank's connection to the store, once it has read what it
  /// needs; a serving rank goes on serving the others until destroyed.
  /// set() and get() throw after it.
  void disconnect();
  /// The numeric address of this rank's interface that reaches the store:
  /// where the other ranks can reach it too.
  std::string localAddress() const;

private:
  std::unique_ptr<TcpStoreServer> server;
  int socket = -1;
  std::mutex mutex;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TCPSTORE_H
