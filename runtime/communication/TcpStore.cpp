//===- TcpStore.cpp - rendezvous over MASTER_ADDR:MASTER_PORT -------------===//
//
// Protocol: a request is one byte ('S' set, 'G' get, 'W' wait), a key and
// for 'S' a value, each sent as a 64-bit length and its bytes. 'G' and 'W'
// block on the server until the key exists; 'G' answers with the value,
// 'W' with an empty value.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/TcpStore.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

namespace pp::runtime {
namespace {

bool writeAll(int fd, const void *data, size_t size) {
  const char *bytes = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t written = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (written <= 0)
      return false;
    bytes += written;
    size -= written;
  }
  return true;
}

bool readAll(int fd, void *data, size_t size) {
  char *bytes = static_cast<char *>(data);
  while (size > 0) {
    ssize_t got = ::recv(fd, bytes, size, 0);
    if (got <= 0)
      return false;
    bytes += got;
    size -= got;
  }
  return true;
}

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

/// The server rank 0 runs: one thread per client connection. Shutdown
/// wakes every thread (blocked accepts, reads and waits for keys) and joins
/// them before any member they use is destroyed; a client's socket is
/// closed only by its own thread, under the lock, so the destructor never
/// touches a descriptor that was closed and reused.
class TcpStoreServer {
public:
  explicit TcpStoreServer(int port) {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(port);
    if (::bind(listener, reinterpret_cast<sockaddr *>(&address),
               sizeof(address)) != 0 ||
        ::listen(listener, 128) != 0) {
      std::string reason = std::strerror(errno);
      ::close(listener);
      throw std::runtime_error("cannot serve the rendezvous store on port " +
                               std::to_string(port) + ": " + reason +
                               " (is MASTER_PORT in use?)");
    }
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
      int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0)
        return;
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping) {
        ::close(fd);
        return;
      }
      clients.insert(fd);
      workers.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    char op;
    std::string key, value;
    while (readAll(fd, &op, 1) && readBlob(fd, key)) {
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
                   std::chrono::milliseconds timeout)
    : timeout(timeout) {
  if (serve)
    server = std::make_unique<TcpStoreServer>(port);
  addrinfo hints{}, *addresses = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (int error = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(),
                                &hints, &addresses))
    throw std::runtime_error("cannot resolve MASTER_ADDR '" + host +
                             "': " + gai_strerror(error));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (socket < 0) {
    for (addrinfo *a = addresses; a && socket < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) == 0)
        socket = fd;
      else if (fd >= 0)
        ::close(fd);
    }
    if (socket >= 0)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::freeaddrinfo(addresses);
      throw std::runtime_error(
          "cannot reach the rendezvous store at " + host + ":" +
          std::to_string(port) + " within " +
          std::to_string(timeout.count() / 1000) +
          " s; check MASTER_ADDR/MASTER_PORT and that rank 0 is running");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::freeaddrinfo(addresses);
  int one = 1;
  ::setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A rank that never arrives makes reads fail instead of hanging.
  timeval limit{static_cast<time_t>(timeout.count() / 1000),
                static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
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
