//===- FreePort.h - a free loopback port for tests of ranks -----*- C++ -*-===//

#ifndef PP_TEST_UNIT_RUNTIME_FREEPORT_H
#define PP_TEST_UNIT_RUNTIME_FREEPORT_H

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pp::runtime::test {

/// A TCP port of 127.0.0.1 that is free right now.
inline int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), length), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length),
            0);
  ::close(fd);
  return ntohs(address.sin_port);
}

} // namespace pp::runtime::test

#endif // PP_TEST_UNIT_RUNTIME_FREEPORT_H
