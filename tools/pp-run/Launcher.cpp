//===- Launcher.cpp - starts and watches the ranks of a job ---------------===//
//
// The launcher forks every rank into a process group of its own, with its
// stdout, stderr and a report pipe (PP_RUN_STATUS_FD) connected to the
// launcher, and then watches them all from one poll() loop that signal
// handlers wake through a self-pipe. Own process groups keep a terminal's
// SIGINT and SIGHUP away from the ranks, so that the launcher alone decides
// how they end, and make a stopped rank's group orphaned when the launcher
// dies, which has the kernel send it SIGHUP and SIGCONT.
//
//===----------------------------------------------------------------------===//

#include "tools/pp-run/Launcher.h"

#include "tools/pp-rank/RankEnvironment.h"
#include "tools/pp-rank/RankReport.h"
#include "runtime/communication/Socket.h"

#include "runtime/communication/JobSecret.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <charconv>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>

using namespace llvm;
using Clock = std::chrono::steady_clock;

extern char **environ;

namespace {

/// How long ranks get to exit after SIGTERM before SIGKILL, and how long,
/// after a rank gave up waiting for another, the launcher lets the others
/// report what they were waiting for before it ends them.
constexpr std::chrono::seconds kGracePeriod(5);

/// Lines longer than this are passed on in pieces.
constexpr size_t kMaxLineBytes = 64 * 1024;

/// The signals that wake the launcher: a rank's change of state, and those
/// it passes on to the ranks.
constexpr int kHandledSignals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};

/// A signal's name, such as SIGTERM.
std::string signalName(int signal) {
  const char *abbreviation = ::sigabbrev_np(signal);
  return abbreviation ? std::string("SIG") + abbreviation
                      : "signal " + std::to_string(signal);
}

/// The write end of the pipe through which signal handlers wake the
/// launcher's loop, one byte (the signal number) per signal.
int wakeFd = -1;

void onSignal(int signal) {
  int savedErrno = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t written = ::write(wakeFd, &byte, 1);
  errno = savedErrno;
}

/// While it lives, SIGCHLD and the forwarded signals wake the launcher's
/// loop. A forwarded signal that was ignored (SIGINT of a background job,
/// SIGHUP under nohup) stays ignored, in the launcher and in the ranks.
class SignalWakeups {
public:
  SignalWakeups() {
    if (::pipe2(pipe, O_CLOEXEC | O_NONBLOCK) != 0)
      return;
    wakeFd = pipe[1];
    struct sigaction action {};
    action.sa_handler = onSignal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int signal : kHandledSignals) {
      struct sigaction old {};
      ::sigaction(signal, nullptr, &old);
      if (old.sa_handler == SIG_IGN && signal != SIGCHLD)
        continue;
      ::sigaction(signal, &action, &old);
      previous.push_back({signal, old});
    }
  }

  ~SignalWakeups() {
    restore();
    wakeFd = -1;
    for (int fd : pipe)
      if (fd >= 0)
        ::close(fd);
  }

  /// Puts the signals' old handlers back; async-signal-safe.
  void restore() const {
    for (auto &[signal, old] : previous)
      ::sigaction(signal, &old, nullptr);
  }

  bool ok() const { return pipe[0] >= 0; }
  int fd() const { return pipe[0]; }

  /// The signals that arrived since the last call.
  std::vector<int> take() const {
    std::vector<int> signals;
    unsigned char bytes[64];
    ssize_t count;
    while ((count = ::read(pipe[0], bytes, sizeof(bytes))) > 0)
      signals.insert(signals.end(), bytes, bytes + count);
    return signals;
  }

private:
  int pipe[2] = {-1, -1};
  std::vector<std::pair<int, struct sigaction>> previous;
};

/// The read end of a pipe from a rank, and what was read from it but not
/// handled yet.
struct Pipe {
  int fd = -1;
  std::string pending;

  /// Reads once, without blocking; closes the pipe at its end. Returns
  /// whether there may be more to read now.
  bool read() {
    if (fd < 0)
      return false;
    char buffer[4096];
    ssize_t count = ::read(fd, buffer, sizeof(buffer));
    if (count > 0) {
      pending.append(buffer, static_cast<size_t>(count));
      return true;
    }
    if (count < 0 && errno == EINTR)
      return true;
    if (count < 0 && errno == EAGAIN)
      return false;
    ::close(fd);
    fd = -1;
    return false;
  }

  /// Reads what the writer, which has exited, left in the pipe.
  void drain() {
    while (read())
      ;
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }
};

/// Passes the whole lines of `pipe` on to `target`, each after `prefix`,
/// in one write; at `end`, a last line without a newline too.
void forwardLines(Pipe &pipe, int target, const std::string &prefix, bool end) {
  std::string text;
  size_t start = 0;
  for (size_t newline;
       (newline = pipe.pending.find('\n', start)) != std::string::npos;
       start = newline + 1)
    text.append(prefix).append(pipe.pending, start, newline + 1 - start);
  pipe.pending.erase(0, start);
  if ((end && !pipe.pending.empty()) || pipe.pending.size() > kMaxLineBytes) {
    text.append(prefix).append(pipe.pending).append("\n");
    pipe.pending.clear();
  }
  writeAll(target, text);
}

/// What caused a rank to end, from the most to the least likely to be the
/// cause of a job's failure.
enum class Fault {
  /// It was stopped (SIGSTOP, SIGTSTP) when the job failed.
  Stopped,
  /// A signal the launcher did not send killed it.
  Signal,
  /// It failed on its own: an error it reported or an exit code.
  Error,
  /// It failed waiting for other ranks.
  Communication,
  /// The launcher ended it before it reported anything.
  Unreported,
  /// It succeeded.
  None,
};

/// A rank the launcher started, and what it knows of it.
struct Rank {
  int number = 0;
  /// The job's only rank, whose output is passed on without a prefix.
  bool alone = false;
  pid_t pid = -1;
  Pipe out, err, status;
  /// The signal that stopped it, while it is stopped.
  int stopSignal = 0;
  /// The signal that had stopped it when the launcher ended it.
  int stoppedBy = 0;
  /// The signals the launcher sent it to end it, one bit each.
  uint64_t sentSignals = 0;
  bool exited = false;
  int waitStatus = 0;
  /// The order in which the launcher saw its failure, or -1.
  int failureOrder = -1;
  std::optional<FailureReport> report;
  /// Its peak resident set as it reported it, in bytes.
  std::optional<int64_t> peakResidentBytes;

  /// Passes its output on: rank 0's stdout as it is, the rest after
  /// `[rank N] `.
  void forward(bool end) {
    std::string prefix =
        alone ? "" : "[rank " + std::to_string(number) + "] ";
    forwardLines(out, STDOUT_FILENO, number == 0 ? "" : prefix, end);
    forwardLines(err, STDERR_FILENO, prefix, end);
  }

  Fault fault() const {
    if (!exited || (WIFEXITED(waitStatus) && WEXITSTATUS(waitStatus) == 0))
      return Fault::None;
    if (stoppedBy)
      return Fault::Stopped;
    if (report)
      return report->communication ? Fault::Communication : Fault::Error;
    if (!WIFSIGNALED(waitStatus))
      return Fault::Error;
    return killedByLauncher() ? Fault::Unreported : Fault::Signal;
  }

  /// Sends `signal` to its process group, to end it.
  void end(int signal) {
    sentSignals |= uint64_t(1) << signal;
    ::kill(-pid, signal);
  }

  bool killedByLauncher() const {
    int signal = WTERMSIG(waitStatus);
    return signal < 64 && (sentSignals & (uint64_t(1) << signal));
  }

  /// Why it failed, in a few words.
  std::string reason() const {
    if (stoppedBy)
      return "stopped by " + signalName(stoppedBy) + " and made no progress";
    if (report)
      return report->message;
    if (WIFSIGNALED(waitStatus))
      return killedByLauncher()
                 ? "made no progress"
                 : "killed by " + signalName(WTERMSIG(waitStatus));
    return "exited with code " + std::to_string(WEXITSTATUS(waitStatus));
  }
};

/// Starts the ranks, watches them until they have all exited, and tells
/// how the job ended.
class Launcher {
public:
  Launcher(const NodeLaunch &node, bool printPeakMemory)
      : node(node), printPeakMemory(printPeakMemory) {}

  /// Runs the job; ends the launcher by the signal that interrupted it.
  int run(const std::vector<std::string> &arguments) {
    std::string problem = startAndWatch(arguments);
    if (!problem.empty()) {
      WithColor::error(errs(), "pp-run") << problem << "\n";
      return 1;
    }
    if (interruptedBy && failuresWhenInterrupted == 0)
      WithColor::error(errs(), "pp-run")
          << "interrupted by " << signalName(interruptedBy)
          << "; the ranks have exited\n";
    else if (failures > 0)
      summarize();
    if (printPeakMemory)
      printPeakResidentMemory();
    if (interruptedBy) {
      ::signal(interruptedBy, SIG_DFL);
      ::raise(interruptedBy);
    }
    return failures > 0 || interruptedBy ? 1 : 0;
  }

private:
  /// Starts the ranks and watches them until they have all exited, with
  /// the launcher's signal handlers in place; returns what went wrong.
  std::string startAndWatch(const std::vector<std::string> &arguments) {
    // Descriptors 0 to 2 are open, so that no pipe takes their place.
    int fd;
    while ((fd = ::open("/dev/null", O_RDWR)) >= 0 && fd <= STDERR_FILENO)
      ;
    if (fd > STDERR_FILENO)
      ::close(fd);
    SignalWakeups wakeups;
    if (!wakeups.ok())
      return "cannot create a pipe: " + std::string(std::strerror(errno));
    std::string problem = start(arguments, wakeups);
    if (!problem.empty())
      endRanks(SIGTERM);
    if (!watch(wakeups))
      return "cannot watch the ranks: " + std::string(std::strerror(errno));
    return problem;
  }

  /// Forks the ranks; returns what went wrong, if anything.
  std::string start(const std::vector<std::string> &arguments,
                    const SignalWakeups &wakeups) {
    // One secret for the job: only its ranks can use its rendezvous store.
    std::string secret = node.secret.empty() ? pp::runtime::generateJobSecret()
                                             : node.secret;
    int port = node.masterPort;
    if (node.firstRank == 0) {
      std::string problem;
      const std::string &bind =
          node.storeBind.empty() ? node.masterAddr : node.storeBind;
      storeListener = pp::runtime::listenOn(bind, port, problem);
      if (storeListener < 0)
        return "cannot serve the rendezvous store on " + bind + ":" +
               std::to_string(port) + ": " + problem +
               (node.storeBind.empty()
                    ? " (is --master-port in use? is --master-addr an "
                      "address of this machine? if it forwards here, give "
                      "--rdzv-bind an address of this machine)"
                    : " (is --master-port in use? is --rdzv-bind an "
                      "address of this machine?)");
      ::fcntl(storeListener, F_SETFD, FD_CLOEXEC);
      std::string address = pp::runtime::listeningAddress(storeListener);
      port = std::stoi(address.substr(address.find(' ') + 1));
      std::string host = address.substr(0, address.find(' '));
      if (node.localRanks < node.worldSize &&
          pp::runtime::isLoopbackAddress(host)) {
        ::close(std::exchange(storeListener, -1));
        return (node.storeBind.empty() ? "--master-addr " + node.masterAddr
                                       : "--rdzv-bind " + node.storeBind) +
               " is a loopback address here (" + host +
               "), which the other machines cannot reach; give an address "
               "of this machine on the network they share (not a name "
               "/etc/hosts maps to 127.0.1.1)";
      }
    }
    pid_t launcher = ::getpid();
    int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    std::vector<std::string> args = arguments;
    std::vector<char *> argv;
    for (std::string &arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::string problem;
    for (int local = 0; local < node.localRanks; ++local) {
      int number = node.firstRank + local;
      int out[2], err[2], status[2];
      if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
          ::pipe2(status, O_CLOEXEC) != 0) {
        problem = "cannot create a pipe: " + std::string(std::strerror(errno));
        break;
      }
      std::vector<std::string> environment =
          rankEnvironment(local, port, secret, status[1]);
      std::vector<char *> envp;
      for (std::string &entry : environment)
        envp.push_back(entry.data());
      envp.push_back(nullptr);

      // No signal handler of the launcher may run in the child.
      sigset_t all, old;
      sigfillset(&all);
      ::pthread_sigmask(SIG_SETMASK, &all, &old);
      pid_t pid = ::fork();
      if (pid == 0)
        execRank(wakeups, launcher, devNull, out[1], err[1], status[1],
                 number == 0 ? storeListener : -1, old, argv.data(),
                 envp.data());
      int forkErrno = errno;
      ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
      for (int fd : {out[1], err[1], status[1]})
        ::close(fd);
      if (pid < 0) {
        problem = "cannot start rank " + std::to_string(number) + ": " +
                  std::strerror(forkErrno);
        for (int fd : {out[0], err[0], status[0]})
          ::close(fd);
        break;
      }
      // Also here, in case the child has not run yet.
      ::setpgid(pid, pid);
      Rank &rank = ranks.emplace_back();
      rank.number = number;
      rank.alone = node.worldSize == 1;
      rank.pid = pid;
      rank.out.fd = out[0];
      rank.err.fd = err[0];
      rank.status.fd = status[0];
      for (int fd : {out[0], err[0], status[0]})
        ::fcntl(fd, F_SETFL, O_NONBLOCK);
    }
    if (devNull >= 0)
      ::close(devNull);
    // Rank 0 has its copy.
    if (storeListener >= 0)
      ::close(std::exchange(storeListener, -1));
    return problem;
  }

  /// This process's environment with the variables of the node's rank
  /// `local`: torchrun's, the secret, where it reports its status and, for
  /// job rank 0, the rendezvous store's socket.
  std::vector<std::string> rankEnvironment(int local, int port,
                                           const std::string &secret,
                                           int statusFd) const {
    int number = node.firstRank + local;
    // Node 0's ranks reach the store where it listens, not through a
    // service address that would have to route back to its own machine.
    bool bound = node.firstRank == 0 && !node.storeBind.empty() &&
                 node.storeBind != "0.0.0.0" && node.storeBind != "::";
    std::vector<std::pair<std::string, std::string>> variables = {
        {"RANK", std::to_string(number)},
        {"LOCAL_RANK", std::to_string(local)},
        {"LOCAL_WORLD_SIZE", std::to_string(node.localRanks)},
        {"WORLD_SIZE", std::to_string(node.worldSize)},
        {"GROUP_RANK", std::to_string(node.firstRank / node.localRanks)},
        {"MASTER_ADDR", bound ? node.storeBind : node.masterAddr},
        {"MASTER_PORT", std::to_string(port)},
        {pp::runtime::kJobSecretVariable, secret},
        {kStatusFdVariable, std::to_string(statusFd)},
        {kStoreFdVariable, number == 0 ? std::to_string(storeListener) : ""}};
    std::vector<std::string> environment;
    for (char **entry = environ; *entry; ++entry) {
      std::string_view text(*entry);
      std::string_view name = text.substr(0, text.find('='));
      if (std::none_of(
              variables.begin(), variables.end(),
              [&](const auto &variable) { return variable.first == name; }))
        environment.emplace_back(text);
    }
    for (auto &[name, value] : variables)
      if (!value.empty())
        environment.push_back(name + "=" + value);
    return environment;
  }

  /// The forked child: becomes rank `argv` and never returns. Calls only
  /// async-signal-safe functions (the launcher may have threads).
  [[noreturn]] static void execRank(const SignalWakeups &wakeups,
                                    pid_t launcher, int devNull, int out,
                                    int err, int status, int storeListener,
                                    const sigset_t &mask, char **argv,
                                    char **envp) {
    ::setpgid(0, 0);
    // Die with the launcher, even if it died before prctl.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != launcher)
      ::_exit(1);
    wakeups.restore();
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    if (devNull >= 0)
      ::dup2(devNull, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::fcntl(status, F_SETFD, 0);
    if (storeListener >= 0)
      ::fcntl(storeListener, F_SETFD, 0);
    ::execve(argv[0], argv, envp);
    const char message[] = "pp-run: error: cannot start a rank (execve)\n";
    [[maybe_unused]] ssize_t written =
        ::write(STDERR_FILENO, message, sizeof(message) - 1);
    ::_exit(127);
  }

  /// Passes output and signals on until every rank has exited; false if
  /// poll() fails.
  bool watch(const SignalWakeups &wakeups) {
    while (std::any_of(ranks.begin(), ranks.end(),
                       [](const Rank &rank) { return !rank.exited; })) {
      std::vector<pollfd> fds = {{wakeups.fd(), POLLIN, 0}};
      std::vector<Pipe *> pipes;
      for (Rank &rank : ranks)
        for (Pipe *pipe : {&rank.out, &rank.err, &rank.status})
          if (pipe->fd >= 0) {
            fds.push_back({pipe->fd, POLLIN, 0});
            pipes.push_back(pipe);
          }
      if (::poll(fds.data(), fds.size(), pollTimeout()) < 0 && errno != EINTR)
        return false;
      for (size_t i = 0; i < pipes.size(); ++i)
        if (fds[i + 1].revents)
          pipes[i]->read();
      for (Rank &rank : ranks)
        rank.forward(/*end=*/false);
      for (int signal : wakeups.take())
        if (signal != SIGCHLD)
          interrupt(signal);
      reap();
      decide();
    }
    return true;
  }

  /// Milliseconds until the next deadline, or -1 for none.
  int pollTimeout() const {
    std::optional<Clock::time_point> next =
        killDeadline ? (killed ? std::nullopt : killDeadline) : settleDeadline;
    if (!next)
      return -1;
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  }

  /// Takes note of ranks that stopped, continued or exited.
  void reap() {
    for (Rank &rank : ranks) {
      int status = 0;
      while (!rank.exited &&
             ::waitpid(rank.pid, &status, WNOHANG | WUNTRACED | WCONTINUED) ==
                 rank.pid) {
        if (WIFSTOPPED(status)) {
          rank.stopSignal = WSTOPSIG(status);
        } else if (WIFCONTINUED(status)) {
          rank.stopSignal = 0;
        } else {
          rank.exited = true;
          rank.waitStatus = status;
          for (Pipe *pipe : {&rank.out, &rank.err, &rank.status})
            pipe->drain();
          rank.forward(/*end=*/true);
          RankReport reported = parseRankReport(rank.status.pending);
          rank.report = reported.failure;
          rank.peakResidentBytes = reported.peakResidentBytes;
          if (rank.fault() != Fault::None)
            rank.failureOrder = failures++;
        }
      }
    }
  }

  /// Ends the job when a rank failed: at once when the cause is clear or
  /// only the ranks others waited for are left, else once the others had
  /// time to report what they were waiting for; kills the ranks that
  /// outlive the grace period.
  void decide() {
    Clock::time_point now = Clock::now();
    if (killDeadline) {
      if (!killed && now >= *killDeadline) {
        killed = true;
        for (Rank &rank : ranks)
          if (!rank.exited) {
            WithColor::warning(errs(), "pp-run")
                << "rank " << rank.number << " did not exit "
                << kGracePeriod.count() << " s after " << signalName(endSignal)
                << "; sending SIGKILL\n";
            rank.end(SIGKILL);
          }
      }
      return;
    }
    if (failures == 0)
      return;
    if (causeKnown() || onlySuspectsLeft() ||
        (settleDeadline && now >= *settleDeadline))
      endRanks(SIGTERM);
    else if (!settleDeadline)
      settleDeadline = now + kGracePeriod;
  }

  /// Whether a failure has a cause other than waiting: a rank that is
  /// stopped, was killed by someone else or failed on its own.
  bool causeKnown() const {
    return std::any_of(ranks.begin(), ranks.end(), [](const Rank &rank) {
      Fault fault = rank.fault();
      return (!rank.exited && rank.stopSignal) || fault == Fault::Signal ||
             fault == Fault::Error;
    });
  }

  /// Whether every rank that has not exited is one that another rank gave
  /// up waiting for, so that none is left to report more.
  bool onlySuspectsLeft() const {
    return std::all_of(ranks.begin(), ranks.end(), [&](const Rank &rank) {
      return rank.exited ||
             std::any_of(ranks.begin(), ranks.end(), [&](const Rank &other) {
               return other.fault() == Fault::Communication &&
                      other.report->peer == rank.number;
             });
    });
  }

  /// Sends `signal` to the ranks that have not exited, and SIGCONT to the
  /// stopped ones so that they handle it.
  void endRanks(int signal) {
    for (Rank &rank : ranks) {
      if (rank.exited)
        continue;
      rank.end(signal);
      if (rank.stopSignal) {
        rank.stoppedBy = rank.stopSignal;
        ::kill(-rank.pid, SIGCONT);
      }
    }
    if (!killDeadline) {
      killDeadline = Clock::now() + kGracePeriod;
      endSignal = signal;
    }
  }

  /// The launcher got `signal`: passes it on to the ranks.
  void interrupt(int signal) {
    if (!interruptedBy) {
      interruptedBy = signal;
      failuresWhenInterrupted = failures;
    }
    endRanks(signal);
  }

  /// The rank with `fault` that failed first, if any.
  const Rank *first(Fault fault) const {
    const Rank *found = nullptr;
    for (const Rank &rank : ranks)
      if (rank.fault() == fault &&
          (!found || rank.failureOrder < found->failureOrder))
        found = &rank;
    return found;
  }

  /// The rank that caused the failure: a stopped rank, one killed by
  /// someone else or failing on its own; else the rank the first rank that
  /// gave up waiting was (indirectly) waiting for, if it never reported, or
  /// the last of that chain here when it leads to another machine; else a
  /// rank that never reported; else the first that failed.
  const Rank &culprit() const {
    for (Fault fault : {Fault::Stopped, Fault::Signal, Fault::Error})
      if (const Rank *rank = first(fault))
        return *rank;
    const Rank *waiting = first(Fault::Communication);
    std::set<int> seen;
    while (waiting && waiting->fault() == Fault::Communication &&
           waiting->report->peer >= 0 && seen.insert(waiting->number).second) {
      // A peer on another machine has no Rank here: the chain ends with
      // the rank that waited for it.
      const Rank *peer = numbered(waiting->report->peer);
      if (!peer)
        return *waiting;
      waiting = peer;
    }
    if (waiting && waiting->fault() == Fault::Unreported)
      return *waiting;
    if (const Rank *rank = first(Fault::Unreported))
      return *rank;
    return *std::find_if(ranks.begin(), ranks.end(), [](const Rank &rank) {
      return rank.failureOrder == 0;
    });
  }

  /// The rank of this node with the job's number `number`, if any.
  const Rank *numbered(int number) const {
    auto rank = std::find_if(ranks.begin(), ranks.end(), [&](const Rank &r) {
      return r.number == number;
    });
    return rank == ranks.end() ? nullptr : &*rank;
  }

  /// Prints one line with each rank's peak resident set as it reported it
  /// ("?" for a rank that did not report).
  void printPeakResidentMemory() const {
    std::string line = "peak resident memory per rank:";
    for (const Rank &rank : ranks) {
      char size[32] = "?";
      if (rank.peakResidentBytes)
        std::snprintf(size, sizeof(size), "%.1f MiB",
                      static_cast<double>(*rank.peakResidentBytes) /
                          (1024 * 1024));
      line += " " + std::to_string(rank.number) + "=" + size;
    }
    outs() << line << "\n";
    outs().flush();
  }

  /// Prints the other failed ranks' errors, then, last, the cause.
  void summarize() const {
    const Rank &cause = culprit();
    std::vector<const Rank *> failed;
    for (const Rank &rank : ranks)
      if (rank.failureOrder >= 0 && &rank != &cause &&
          rank.fault() != Fault::Unreported)
        failed.push_back(&rank);
    std::sort(failed.begin(), failed.end(), [](const Rank *a, const Rank *b) {
      return a->failureOrder < b->failureOrder;
    });
    for (const Rank *rank : failed) {
      errs() << "[rank " << rank->number << "] ";
      WithColor::error(errs()) << rank->reason() << "\n";
    }
    std::string waiter;
    for (const Rank *rank : failed)
      if (rank->fault() == Fault::Communication &&
          rank->report->peer == cause.number && waiter.empty())
        waiter = "; rank " + std::to_string(rank->number) +
                 " gave up waiting for it";
    if (cause.fault() == Fault::Communication && cause.report->peer >= 0 &&
        !numbered(cause.report->peer)) {
      WithColor::error(errs(), "pp-run")
          << "rank " << cause.report->peer
          << ", on another machine, failed or stopped answering: rank "
          << cause.number << " gave up waiting for it (" << cause.reason()
          << ")\n";
      return;
    }
    WithColor::error(errs(), "pp-run")
        << (node.worldSize > 1 ? "rank " + std::to_string(cause.number) + ": "
                               : "")
        << cause.reason()
        << (cause.fault() == Fault::Stopped ||
                    cause.fault() == Fault::Unreported
                ? waiter
                : "")
        << "\n";
  }

  const NodeLaunch node;
  const bool printPeakMemory;
  /// Job rank 0's rendezvous store socket while the ranks start (on the
  /// node that runs it).
  int storeListener = -1;
  std::vector<Rank> ranks;
  /// How many ranks have failed so far.
  int failures = 0;
  /// The first signal the launcher got, and the failures seen before it.
  int interruptedBy = 0;
  int failuresWhenInterrupted = 0;
  /// When the launcher ends the ranks if nothing made the cause clear.
  std::optional<Clock::time_point> settleDeadline;
  /// When the launcher kills the ranks it ended (with `endSignal`) that
  /// have not exited, and whether it has.
  std::optional<Clock::time_point> killDeadline;
  int endSignal = SIGTERM;
  bool killed = false;
};

} // namespace

int launchRanks(const std::vector<std::string> &arguments,
                const NodeLaunch &node, bool printPeakMemory) {
  return Launcher(node, printPeakMemory).run(arguments);
}

