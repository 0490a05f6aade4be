//===- Socket.cpp - TCP helpers of the rendezvous store and links ---------===//

#include "runtime/communication/Socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace pp::runtime {
namespace {

using Addresses = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

/// The TCP addresses `host:port` resolves to; null with the reason in
/// `problem` when it does not.
Addresses resolve(const std::string &host, int port, std::string &problem) {
  addrinfo hints{}, *addresses = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  if (int error = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(),
                                &hints, &addresses)) {
    problem = "cannot resolve '" + host + "': " + gai_strerror(error);
    return Addresses(nullptr, &::freeaddrinfo);
  }
  return Addresses(addresses, &::freeaddrinfo);
}

/// Numeric host and port of a socket address.
std::pair<std::string, std::string> numeric(const sockaddr_storage &address,
                                            socklen_t length) {
  char host[NI_MAXHOST] = {0}, port[NI_MAXSERV] = {0};
  ::getnameinfo(reinterpret_cast<const sockaddr *>(&address), length, host,
                sizeof(host), port, sizeof(port),
                NI_NUMERICHOST | NI_NUMERICSERV);
  return {host, port};
}

void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

} // namespace

int listenOn(const std::string &host, int port, std::string &problem) {
  Addresses addresses = resolve(host, port, problem);
  if (!addresses)
    return -1;
  for (addrinfo *a = addresses.get(); a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      problem = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0)
      return fd;
    problem = std::strerror(errno);
    ::close(fd);
  }
  return -1;
}

/// This end of the socket `fd`: its numeric address and port.
static std::pair<std::string, std::string> socketName(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  return numeric(address, length);
}

std::string listeningAddress(int fd) {
  auto [host, port] = socketName(fd);
  return host + " " + port;
}

std::string localAddress(int fd) { return socketName(fd).first; }

bool isLoopbackAddress(const std::string &address) {
  return address.rfind("127.", 0) == 0 || address == "::1" ||
         address.rfind("::ffff:127.", 0) == 0;
}

int acceptWaiting(int listener) {
  setBlocking(listener, false);
  int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0)
    setNoDelay(fd);
  return fd;
}

void setBlocking(int fd, bool blocking) {
  int flags = ::fcntl(fd, F_GETFL);
  int wanted = blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK;
  if (flags >= 0 && wanted != flags)
    ::fcntl(fd, F_SETFL, wanted);
}

namespace {

/// The longest one connection attempt waits for an answer.
constexpr std::chrono::seconds kConnectAttempt(5);

/// Connects `fd` to `address`, giving up at `deadline` (a host that drops
/// packets would hold a blocking connect for minutes): a blocking connect
/// under a send timeout, which Linux applies to connect.
bool connectBefore(int fd, const addrinfo &address,
                   std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  setSendTimeout(fd, std::max(left, std::chrono::milliseconds(1)));
  bool connected = ::connect(fd, address.ai_addr, address.ai_addrlen) == 0;
  setSendTimeout(fd, std::chrono::milliseconds(0));
  return connected;
}

} // namespace

int connectTo(const std::string &host, int port,
              std::chrono::milliseconds timeout) {
  std::string problem;
  Addresses addresses = resolve(host, port, problem);
  if (!addresses)
    throw std::runtime_error(problem);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    for (addrinfo *a = addresses.get(); a; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0)
        continue;
      // Each address its share: a blackholed first one leaves time for
      // the next.
      if (connectBefore(fd, *a,
                        std::min(deadline, std::chrono::steady_clock::now() +
                                               kConnectAttempt))) {
        setNoDelay(fd);
        return fd;
      }
      ::close(fd);
    }
    if (std::chrono::steady_clock::now() > deadline)
      return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

/// Sets the socket timeout `option` (SO_RCVTIMEO, SO_SNDTIMEO) of `fd`.
static void setTimeout(int fd, int option, std::chrono::milliseconds timeout) {
  timeval limit{static_cast<time_t>(timeout.count() / 1000),
                static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, option, &limit, sizeof(limit));
}

void setReceiveTimeout(int fd, std::chrono::milliseconds timeout) {
  setTimeout(fd, SO_RCVTIMEO, timeout);
}

void setSendTimeout(int fd, std::chrono::milliseconds timeout) {
  setTimeout(fd, SO_SNDTIMEO, timeout);
}

bool writeAll(int fd, const void *data, size_t size) {
  return writeAll(fd, {{data, size}});
}

/// The send timeout of `fd` (SO_SNDTIMEO; 0: none).
static std::chrono::milliseconds sendTimeout(int fd) {
  timeval limit{};
  socklen_t length = sizeof(limit);
  if (::getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, &length) != 0)
    return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::seconds(limit.tv_sec) +
      std::chrono::microseconds(limit.tv_usec));
}

bool writeAll(int fd, std::initializer_list<ByteRange> parts) {
  std::vector<iovec> left;
  for (const ByteRange &part : parts)
    if (part.size > 0)
      left.push_back({const_cast<void *>(part.data), part.size});
  // The send timeout bounds a stall, not the whole write: a large message
  // that keeps going out takes as long as it takes.
  std::chrono::milliseconds timeout = sendTimeout(fd);
  auto lastProgress = std::chrono::steady_clock::now();
  size_t first = 0;
  while (first < left.size()) {
    msghdr message{};
    message.msg_iov = left.data() + first;
    message.msg_iovlen = left.size() - first;
    ssize_t written = ::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0 && errno == EINTR)
      continue;
    if (written < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return false;
    if (written < 0) {
      int wait = -1;
      if (timeout.count() > 0) {
        auto remaining = std::chrono::ceil<std::chrono::milliseconds>(
            lastProgress + timeout - std::chrono::steady_clock::now());
        if (remaining.count() <= 0) {
          errno = EAGAIN;
          return false;
        }
        wait = static_cast<int>(remaining.count());
      }
      pollfd room{fd, POLLOUT, 0};
      ::poll(&room, 1, wait);
      continue;
    }
    lastProgress = std::chrono::steady_clock::now();
    // Skips what went out: whole parts, then the start of the next one.
    auto sent = static_cast<size_t>(written);
    while (first < left.size() && sent >= left[first].iov_len)
      sent -= left[first++].iov_len;
    if (first < left.size()) {
      left[first].iov_base = static_cast<char *>(left[first].iov_base) + sent;
      left[first].iov_len -= sent;
    }
  }
  return true;
}

bool readAll(int fd, void *data, size_t size) {
  char *bytes = static_cast<char *>(data);
  while (size > 0) {
    ssize_t got = ::recv(fd, bytes, size, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    bytes += got;
    size -= got;
  }
  return true;
}

/// The numeric host and port of the other end of `fd`, or nullopt.
static std::optional<std::pair<std::string, std::string>> peerName(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getpeername(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0)
    return std::nullopt;
  return numeric(address, length);
}

std::string peerAddress(int fd) {
  auto name = peerName(fd);
  return name ? name->first + ":" + name->second : "an unknown address";
}

bool leavesHost(int fd) {
  auto name = peerName(fd);
  std::string local = localAddress(fd);
  return !name || (name->first != local && !isLoopbackAddress(local));
}

} // namespace pp::runtime
