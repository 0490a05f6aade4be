//===- Launcher.cpp - starts and watches the ranks of a job ---------------===//

#include "tools/pp-run/Launcher.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

using namespace llvm;

namespace {

/// A TCP port that is free right now.
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) ==
          0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

} // namespace

int launchRanks(const std::vector<std::string> &arguments, int count) {
  int port = freePort();
  std::vector<std::string> args = arguments;
  std::vector<pid_t> children;
  for (int rank = 0; rank < count; ++rank) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(count).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      std::vector<char *> argv;
      for (std::string &arg : args)
        argv.push_back(arg.data());
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      std::perror("pp-run: cannot start a rank");
      ::_exit(127);
    }
    if (pid < 0) {
      WithColor::error(errs(), "pp-run") << "cannot start rank " << rank
                                         << "\n";
      return 1;
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (size_t done = 0; done < children.size(); ++done) {
    int status = 0;
    pid_t pid = ::wait(&status);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && !failed) {
      failed = 1;
      auto it = std::find(children.begin(), children.end(), pid);
      int rank = it - children.begin();
      errs() << "pp-run: rank " << rank << " failed ("
             << (WIFSIGNALED(status)
                     ? "signal " + std::to_string(WTERMSIG(status))
                     : "exit code " + std::to_string(WEXITSTATUS(status)))
             << "); stopping the other ranks\n";
      for (pid_t child : children)
        if (child != pid)
          ::kill(child, SIGTERM);
    }
  }
  return failed;
}
