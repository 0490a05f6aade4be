//===- Socket.h - TCP helpers of the rendezvous store and links -*- C++ -*-===//
//
// Blocking TCP sockets as the rendezvous store (TcpStore) and the ranks'
// message links (MessageLinks) use them: listening on the one address a
// job names, connecting, whole reads and writes, and the peer's address for
// logs.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_SOCKET_H
#define PP_RUNTIME_SOCKET_H

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <string>

namespace pp::runtime {

/// Listens on `host` (a name or numeric address: only the interface it
/// resolves to, never every interface) at `port` (0: any free port); -1
/// with the reason in `problem` on failure.
int listenOn(const std::string &host, int port, std::string &problem);

/// "address port" of the listening socket `fd`, numeric, as connectTo()
/// takes it.
std::string listeningAddress(int fd);

/// The numeric address of this end of the socket `fd`: for a connection,
/// the address of the interface that reaches its peer.
std::string localAddress(int fd);

/// Whether the numeric address `address` is a loopback one (127.0.0.0/8,
/// ::1), which other machines cannot reach.
bool isLoopbackAddress(const std::string &address);

/// Accepts a connection waiting on the non-blocking `listener`, itself
/// non-blocking (and TCP_NODELAY, as connectTo's); -1 with errno set when
/// none waits (EAGAIN) or accept fails.
int acceptWaiting(int listener);

/// Makes reads and writes on `fd` block (`blocking`) or not.
void setBlocking(int fd, bool blocking);

/// Connects to `host:port` (TCP_NODELAY: small messages leave at once),
/// retrying until `timeout` has passed; an attempt waits at most 5 s for an
/// answer (a host that drops packets holds none longer); -1 when no address
/// of `host` accepted by then. Throws when `host` does not resolve.
int connectTo(const std::string &host, int port,
              std::chrono::milliseconds timeout);

/// Makes reads on `fd` fail after `timeout` without data (0: never).
void setReceiveTimeout(int fd, std::chrono::milliseconds timeout);
/// Makes writes on `fd`, and a blocking connect, fail after `timeout`
/// without progress (0: never).
void setSendTimeout(int fd, std::chrono::milliseconds timeout);

/// Sends/receives exactly `size` bytes; false when the connection failed.
bool writeAll(int fd, const void *data, size_t size);
bool readAll(int fd, void *data, size_t size);
/// Bytes to send: where they are and how many.
struct ByteRange {
  const void *data;
  size_t size;
};
/// Sends `parts` one after another, in one system call when the socket
/// takes them at once; false when the connection failed.
bool writeAll(int fd, std::initializer_list<ByteRange> parts);

/// "address:port" of the other end of the connected socket `fd`.
std::string peerAddress(int fd);

/// Whether the connection `fd` may cross a network: its two ends' addresses
/// differ and are not loopback (a connection between one address and
/// itself stays in this host's kernel).
bool leavesHost(int fd);

} // namespace pp::runtime

#endif // PP_RUNTIME_SOCKET_H
