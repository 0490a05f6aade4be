//===- TcpStore.h - rendezvous over MASTER_ADDR:MASTER_PORT -----*- C++ -*-===//
//
// A key-value store for Gloo's rendezvous, as torchrun's: rank 0 serves it
// on MASTER_ADDR:MASTER_PORT, every rank (rank 0 included) is a client, and
// only clients that know the job's secret get in.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TCPSTORE_H
#define PP_RUNTIME_TCPSTORE_H

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace pp::runtime {

class TcpStoreServer;

class TcpStore : public gloo::rendezvous::Store {
public:
  /// Connects to the store at `host:port`, serving it first when `serve`
  /// (on the address `host` names only). Both ends prove that they know the
  /// job's `secret` (JobSecret.h); the server refuses, and logs on stderr,
  /// connections that do not. Throws std::runtime_error with a clear message
  /// on failure.
  TcpStore(const std::string &host, int port, bool serve,
           const std::string &secret, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string &key, const std::vector<char> &data) override;
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

private:
  std::unique_ptr<TcpStoreServer> server;
  int socket = -1;
  std::chrono::milliseconds timeout;
  std::mutex mutex;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TCPSTORE_H
