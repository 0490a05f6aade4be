//===- RawSockets.h - what a stranger on the machine can do ------*- C++ -*-===//
//
// Plain TCP connections to a job's listeners, as anyone who reaches their
// ports can make, and the listening sockets this process holds.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TEST_UNIT_RUNTIME_RAWSOCKETS_H
#define PP_TEST_UNIT_RUNTIME_RAWSOCKETS_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace pp::runtime::test {

inline sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  return address;
}

/// A raw connection to 127.0.0.1:`port`, as anyone on the machine can make.
inline int connectRaw(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = loopback(port);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&address),
                      sizeof(address)),
            0);
  return fd;
}

/// The port of the local end of `fd`.
inline int localPort(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  return ntohs(address.sin_port);
}

/// Reads what the peer sends on `fd` until it closes the connection.
inline std::string readToEnd(int fd) {
  std::string bytes;
  char buffer[256];
  for (ssize_t got; (got = ::recv(fd, buffer, sizeof(buffer), 0)) > 0;)
    bytes.append(buffer, got);
  return bytes;
}

/// One IPv4 socket in the TCP_LISTEN state, from /proc/net/tcp.
struct Listening {
  std::string address; ///< Hex, as /proc/net/tcp writes it.
  int port = 0;
  std::string inode;
};

/// The IPv4 sockets that listen on this machine (this network namespace).
inline std::vector<Listening> listeningSockets() {
  std::vector<Listening> sockets;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line); // The header.
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid,
        timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >>
        retransmits >> uid >> timeout >> inode;
    size_t colon = local.find(':');
    if (state == "0A") // TCP_LISTEN
      sockets.push_back({local.substr(0, colon),
                         std::stoi(local.substr(colon + 1), nullptr, 16),
                         inode});
  }
  return sockets;
}

/// The local addresses (hex, as /proc/net/tcp writes them) of the IPv4
/// sockets that listen on `port`.
inline std::set<std::string> listeningAddresses(int port) {
  std::set<std::string> addresses;
  for (const Listening &socket : listeningSockets())
    if (socket.port == port)
      addresses.insert(socket.address);
  return addresses;
}

/// The IPv4 sockets on which this process listens.
inline std::vector<Listening> ownListeningSockets() {
  std::set<std::string> inodes;
  if (DIR *fds = ::opendir("/proc/self/fd")) {
    while (dirent *entry = ::readdir(fds)) {
      char target[64] = {0};
      std::string path = std::string("/proc/self/fd/") + entry->d_name;
      if (::readlink(path.c_str(), target, sizeof(target) - 1) > 0 &&
          std::string(target).rfind("socket:[", 0) == 0)
        inodes.insert(std::string(target + 8, std::strlen(target) - 9));
    }
    ::closedir(fds);
  }
  std::vector<Listening> own;
  for (const Listening &socket : listeningSockets())
    if (inodes.count(socket.inode))
      own.push_back(socket);
  return own;
}

/// How many threads this process runs.
inline int threadCount() {
  int threads = 0;
  if (DIR *tasks = ::opendir("/proc/self/task")) {
    while (dirent *entry = ::readdir(tasks))
      threads += entry->d_name[0] != '.';
    ::closedir(tasks);
  }
  return threads;
}

} // namespace pp::runtime::test

#endif // PP_TEST_UNIT_RUNTIME_RAWSOCKETS_H
