//===- TcpStore.cpp - rendezvous over MASTER_ADDR:MASTER_PORT -------------===//
//
// Protocol: a connection starts with the proof of the job's secret
// (JobSecret.h); the server refuses, and logs, peers that fail it. Then a
// request is one byte ('S' set, 'G' get, 'W' wait), a key and for 'S' a
// value, each sent as a 64-bit length and its bytes. 'G' and 'W' block on
// the server until the key exists; 'G' answers with the value, 'W' with an
// empty value.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/TcpStore.h"
#include "runtime/communication/JobSecret.h"
#include "runtime/communication/Socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

namespace pp::runtime {
namespace {

bool writeBlob(int fd, const std::string &blob) {
  uint64_t size = blob.size();
  return writeAll(fd, &size, sizeof(size)) && writeAll(fd, blob.data(), size);
}

bool readBlob(int fd, std::string &blob) {
  uint64_t size = 0;
  if (!readAll(fd, &size, sizeof(size)) || size > (1ull << 32))
    return false;
  blob.resize(size);
  return readAll(fd, blob.data(), size);
}

} // namespace

/// The server rank 0 runs: one thread per client connection, which first
/// admits the client by the job's secret. Shutdown
/// wakes every thread (blocked accepts, reads and waits for keys) and joins
/// them before any member they use is destroyed; a client's socket is
/// closed only by its own thread, under the lock, so the destructor never
/// touches a descriptor that was closed and reused.
class TcpStoreServer {
public:
  /// Listens on `host` (MASTER_ADDR) only, not on every interface.
  TcpStoreServer(const std::string &host, int port, std::string secret,
                 std::chrono::milliseconds timeout)
      : secret(std::move(secret)), timeout(timeout) {
    std::string problem;
    listener = listenOn(host, port, problem);
    if (listener < 0)
      throw std::runtime_error(
          "cannot serve the rendezvous store on " + host + ":" +
          std::to_string(port) + ": " + problem +
          " (is MASTER_PORT in use? does MASTER_ADDR name rank 0's machine?)");
    acceptor = std::thread([this] { acceptLoop(); });
  }

  ~TcpStoreServer() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      changed.notify_all();
      for (int fd : clients)
        ::shutdown(fd, SHUT_RDWR);
    }
    // Wakes the blocked accept; the acceptor adds no client after
    // `stopping`, so `workers` is final once it has returned.
    ::shutdown(listener, SHUT_RDWR);
    acceptor.join();
    ::close(listener);
    for (std::thread &worker : workers)
      worker.join();
  }

private:
  void acceptLoop() {
    while (true) {
      int fd = acceptOn(listener);
      std::unique_lock<std::mutex> lock(mutex);
      if (stopping) {
        if (fd >= 0)
          ::close(fd);
        return;
      }
      if (fd < 0) {
        // Out of descriptors or memory (a flood of connections): wait for
        // some to close instead of serving no one from now on.
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      try {
        workers.emplace_back([this, fd] { serve(fd); });
        clients.insert(fd);
      } catch (const std::exception &) {
        ::close(fd); // No thread to serve it: the peer sees it closed.
      }
    }
  }

  void serve(int fd) {
    // A peer that never answers the challenge is dropped soon.
    setReceiveTimeout(fd, std::min(timeout, kProofTimeout));
    std::string refusal;
    try {
      refusal = admitPeer(fd, secret, "the rendezvous store");
    } catch (const std::exception &error) {
      refusal = error.what(); // No random bytes for the challenge.
    }
    if (refusal.empty())
      setReceiveTimeout(fd, std::chrono::milliseconds(0));
    char op;
    std::string key, value;
    while (refusal.empty() && readAll(fd, &op, 1) && readBlob(fd, key)) {
      if (op == 'S') {
        if (!readBlob(fd, value))
          break;
        std::lock_guard<std::mutex> lock(mutex);
        data[key] = value;
        changed.notify_all();
        continue;
      }
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return stopping || data.count(key); });
      if (stopping)
        break;
      std::string answer = op == 'G' ? data[key] : std::string();
      lock.unlock();
      if (!writeBlob(fd, answer))
        break;
    }
    std::lock_guard<std::mutex> lock(mutex);
    clients.erase(fd);
    ::close(fd);
  }

  const std::string secret;
  const std::chrono::milliseconds timeout;
  int listener = -1;
  std::thread acceptor;
  /// Guards everything below.
  std::mutex mutex;
  std::condition_variable changed;
  bool stopping = false;
  std::vector<std::thread> workers;
  std::set<int> clients;
  std::map<std::string, std::string> data;
};

TcpStore::TcpStore(const std::string &host, int port, bool serve,
                   const std::string &secret,
                   std::chrono::milliseconds timeout)
    : timeout(timeout) {
  if (serve)
    server = std::make_unique<TcpStoreServer>(host, port, secret, timeout);
  std::string address = host + ":" + std::to_string(port);
  try {
    socket = connectTo(host, port, timeout);
  } catch (const std::runtime_error &error) {
    throw std::runtime_error("MASTER_ADDR: " + std::string(error.what()));
  }
  if (socket < 0)
    throw std::runtime_error(
        "cannot reach the rendezvous store at " + address + " within " +
        std::to_string(timeout.count() / 1000) +
        " s; check MASTER_ADDR/MASTER_PORT and that rank 0 is running");
  // A rank that never arrives makes reads fail instead of hanging.
  setReceiveTimeout(socket, timeout);
  std::string problem = proveToPeer(socket, secret);
  if (!problem.empty())
    throw std::runtime_error("the rendezvous store at " + address + ": " +
                             problem);
}

TcpStore::~TcpStore() {
  if (socket >= 0)
    ::close(socket);
}

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!writeAll(socket, "S", 1) || !writeBlob(socket, key) ||
      !writeBlob(socket, std::string(data.begin(), data.end())))
    throw std::runtime_error("lost the rendezvous store while setting '" + key +
                             "'");
}

std::vector<char> TcpStore::get(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex);
  std::string value;
  if (!writeAll(socket, "G", 1) || !writeBlob(socket, key) ||
      !readBlob(socket, value))
    throw std::runtime_error("no rank published '" + key +
                             "' to the rendezvous store in time (a rank "
                             "failed or never started)");
  return std::vector<char>(value.begin(), value.end());
}

void TcpStore::wait(const std::vector<std::string> &keys) {
  wait(keys, timeout);
}

void TcpStore::wait(const std::vector<std::string> &keys,
                    const std::chrono::milliseconds &) {
  std::lock_guard<std::mutex> lock(mutex);
  std::string ignored;
  for (const std::string &key : keys)
    if (!writeAll(socket, "W", 1) || !writeBlob(socket, key) ||
        !readBlob(socket, ignored))
      throw std::runtime_error("no rank published '" + key +
                               "' to the rendezvous store in time (a rank "
                               "failed or never started)");
}

} // namespace pp::runtime
