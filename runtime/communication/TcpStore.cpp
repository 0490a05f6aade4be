//===- TcpStore.cpp - rendezvous over MASTER_ADDR:MASTER_PORT -------------===//
//
// Protocol: a connection starts with the proof of the job's secret
// (JobSecret.h); the server refuses, and logs, peers that fail it. Then a
// request is one byte ('S' set, 'G' get, 'W' wait), a key and for 'S' a
// value, each sent as a 64-bit length and its bytes. 'G' and 'W' wait on
// the server until the key exists; 'G' answers with the value, 'W' with an
// empty value.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/TcpStore.h"
#include "runtime/communication/JobSecret.h"
#include "runtime/communication/Socket.h"

#include "runtime/communication/ProofGate.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

namespace pp::runtime {
namespace {

bool writeBlob(int fd, const std::string &blob) {
  uint64_t size = blob.size();
  return writeAll(fd, &size, sizeof(size)) && writeAll(fd, blob.data(), size);
}

/// The longest key or value the store takes.
constexpr uint64_t kMaxBlob = 1ull << 32;

bool readBlob(int fd, std::string &blob) {
  uint64_t size = 0;
  if (!readAll(fd, &size, sizeof(size)) || size > kMaxBlob)
    return false;
  blob.resize(size);
  return readAll(fd, blob.data(), size);
}

} // namespace

/// The server rank 0 runs: one thread that polls the listener, the
/// connections still proving the job's secret (a ProofGate's), the proven
/// clients and a wake-up descriptor. A client's requests are handled in
/// order as their bytes arrive; a get or wait of a key not set yet is kept
/// (with what the client sent after it) until a set makes it answerable.
/// Replies go out as the client's socket takes them.
class TcpStoreServer {
public:
  /// Serves on `given` (a listening socket), or else listens on `host`
  /// (MASTER_ADDR) only, not on every interface.
  TcpStoreServer(const std::string &host, int port, const std::string &secret,
                 std::chrono::milliseconds timeout, int given)
      : gate(secret, "the rendezvous store", std::min(timeout, kProofTimeout),
             kMaxPending) {
    std::string problem;
    listener = given >= 0 ? given : listenOn(host, port, problem);
    if (listener < 0)
      throw std::runtime_error(
          "cannot serve the rendezvous store on " + host + ":" +
          std::to_string(port) + ": " + problem +
          " (is MASTER_PORT in use? does MASTER_ADDR name rank 0's machine?)");
    wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake < 0) {
      ::close(listener);
      throw std::runtime_error("cannot serve the rendezvous store: eventfd: " +
                               std::string(std::strerror(errno)));
    }
    server = std::thread([this] { run(); });
  }

  ~TcpStoreServer() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(wake, &one, sizeof(one));
    server.join();
    for (Client &client : clients)
      ::close(client.fd);
    ::close(listener);
    ::close(wake);
  }

private:
  /// At most this many connections prove the secret at once; past it the
  /// oldest is dropped (a job's ranks each prove within a round trip).
  static constexpr size_t kMaxPending = 256;

  struct Client {
    int fd = -1;
    /// Received bytes of requests not handled yet; replies not yet sent.
    std::string in, out;
  };

  void run() {
    std::vector<pollfd> fds;
    while (true) {
      fds = {{wake, POLLIN, 0}, {listener, POLLIN, 0}};
      gate.addPollEntries(fds);
      size_t firstClient = fds.size();
      for (const Client &client : clients)
        fds.push_back(
            {client.fd, static_cast<short>(client.out.empty() ? POLLIN
                                                              : POLLIN | POLLOUT),
             0});
      if (::poll(fds.data(), fds.size(), gate.msUntilDeadline()) < 0 &&
          errno != EINTR)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (fds[0].revents)
        return;
      // Clients before the gate's new ones, and those before new accepts:
      // each matches the entries polled.
      bool setAny = false;
      for (size_t i = 0; i < clients.size(); ++i)
        if (fds[firstClient + i].revents && !receive(clients[i], setAny))
          drop(clients[i]);
      for (const ProvenConnection &proven :
           gate.advance(fds.data() + 2, firstClient - 2))
        clients.push_back(Client{proven.fd, {}, {}});
      if (fds[1].revents)
        gate.acceptFrom(listener);
      // A set may answer what other clients wait for, and the requests
      // behind an answered one may set more keys.
      for (bool again = setAny; again;) {
        again = false;
        for (Client &client : clients)
          if (client.fd >= 0 && !handle(client, again))
            drop(client);
      }
      for (Client &client : clients)
        if (client.fd >= 0 && !flush(client))
          drop(client);
      clients.erase(std::remove_if(clients.begin(), clients.end(),
                                   [](const Client &client) {
                                     return client.fd < 0;
                                   }),
                    clients.end());
    }
  }

  void drop(Client &client) {
    if (client.fd >= 0)
      ::close(client.fd);
    client.fd = -1;
  }

  /// Reads what `client` sent and handles it; false when the connection
  /// ended or broke the protocol. Sets `setAny` when a key was set.
  bool receive(Client &client, bool &setAny) {
    char buffer[1 << 16];
    while (true) {
      ssize_t got = ::recv(client.fd, buffer, sizeof(buffer), 0);
      if (got > 0) {
        client.in.append(buffer, got);
        continue;
      }
      if (got < 0 && errno == EINTR)
        continue;
      bool open = got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      // Requests sent before a close still count.
      return handle(client, setAny) && open;
    }
  }

  /// Handles the complete requests at the start of `client.in`, up to one
  /// that waits for a key not set yet; false when the client broke the
  /// protocol. Sets `setAny` when a key was set.
  bool handle(Client &client, bool &setAny) {
    size_t at = 0;
    bool valid = true;
    auto blob = [&](std::string &value) {
      uint64_t size = 0;
      if (client.in.size() - at < sizeof(size))
        return false;
      std::memcpy(&size, client.in.data() + at, sizeof(size));
      valid = size <= kMaxBlob;
      if (!valid || client.in.size() - at - sizeof(size) < size)
        return false;
      value.assign(client.in, at + sizeof(size), size);
      at += sizeof(size) + size;
      return true;
    };
    while (valid && at < client.in.size()) {
      size_t start = at;
      char op = client.in[at++];
      std::string key, value;
      valid = op == 'S' || op == 'G' || op == 'W';
      if (!valid || !blob(key) || (op == 'S' && !blob(value))) {
        at = start; // Incomplete: wait for the rest (unless invalid).
        break;
      }
      if (op == 'S') {
        data[key] = std::move(value);
        setAny = true;
        continue;
      }
      auto found = data.find(key);
      if (found == data.end()) {
        at = start; // Answered by a later set.
        break;
      }
      std::string answer = op == 'G' ? found->second : std::string();
      uint64_t size = answer.size();
      client.out.append(reinterpret_cast<const char *>(&size), sizeof(size));
      client.out += answer;
    }
    client.in.erase(0, at);
    return valid;
  }

  /// Sends what `client.out` holds as far as the socket takes it; false
  /// when the connection failed.
  bool flush(Client &client) {
    while (!client.out.empty()) {
      ssize_t sent =
          ::send(client.fd, client.out.data(), client.out.size(), MSG_NOSIGNAL);
      if (sent < 0 && errno == EINTR)
        continue;
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return true;
      if (sent <= 0)
        return false;
      client.out.erase(0, sent);
    }
    return true;
  }

  ProofGate gate;
  int listener = -1, wake = -1;
  /// Owned by the server thread once it runs.
  std::vector<Client> clients;
  std::map<std::string, std::string> data;
  std::thread server;
};

TcpStore::TcpStore(const std::string &host, int port, bool serve,
                   const std::string &secret, std::chrono::milliseconds timeout,
                   int listener) {
  if (serve)
    server =
        std::make_unique<TcpStoreServer>(host, port, secret, timeout, listener);
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

std::string TcpStore::localAddress() const {
  return pp::runtime::localAddress(socket);
}

TcpStore::~TcpStore() { disconnect(); }

void TcpStore::disconnect() {
  std::lock_guard<std::mutex> lock(mutex);
  if (socket >= 0)
    ::close(socket);
  socket = -1;
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
