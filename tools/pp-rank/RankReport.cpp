//===- RankReport.cpp - what a rank tells the launcher that started it ----===//
//
// The report lines: "error MESSAGE", "communication PEER MESSAGE" and
// "peak_rss KIB". The peak comes from /proc/self/status (VmHWM), not from
// the rusage the launcher's wait4 gets: a forked child's maximum starts at
// the launcher's own resident set, which exec does not reset.
//
//===----------------------------------------------------------------------===//

#include "tools/pp-rank/RankReport.h"

#include "runtime/communication/Communicator.h"
#include "runtime/communication/FlightRecord.h"
#include "runtime/core/MappedFile.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace {

/// How a rank names itself on stderr.
constexpr std::string_view kErrorPrefix = "pp-rank: error: ";

/// The descriptor in PP_RUN_STATUS_FD, or -1.
int statusFd() {
  const char *variable = std::getenv(kStatusFdVariable);
  if (!variable)
    return -1;
  int fd = -1;
  std::string_view text(variable);
  std::from_chars(text.data(), text.data() + text.size(), fd);
  return fd;
}

/// The report line of this rank's `failure`, which parseRankReport reads
/// back.
std::string formatFailure(const std::exception &failure) {
  std::string message = failure.what();
  std::replace(message.begin(), message.end(), '\n', ' ');
  if (std::optional<int> peer = pp::runtime::firstCommunicationFailure())
    return "communication " + std::to_string(*peer) + " " + message + "\n";
  return "error " + message + "\n";
}

/// The failure report of one line (formatFailure's, without "\n"), if it
/// is one.
std::optional<FailureReport> parseFailure(std::string_view line) {
  FailureReport report;
  auto word = [&]() {
    size_t space = std::min(line.find(' '), line.size());
    std::string_view first = line.substr(0, space);
    line.remove_prefix(std::min(space + 1, line.size()));
    return first;
  };
  std::string_view kind = word();
  if (kind == "communication") {
    std::string_view peer = word();
    report.communication = true;
    std::from_chars(peer.data(), peer.data() + peer.size(), report.peer);
  } else if (kind != "error") {
    return std::nullopt;
  }
  report.message = std::string(line);
  return report;
}

/// What the SIGBUS handler needs, set before any file is mapped.
int truncationStatusFd = -1;
std::string truncationPrefix;

/// An async-signal-safe reportRankFailure of a truncated file's message.
void reportTruncation(const char *message, size_t length) {
  if (truncationStatusFd >= 0) {
    (void)!::write(truncationStatusFd, "error ", 6);
    (void)!::write(truncationStatusFd, message, length);
    return;
  }
  (void)!::write(STDERR_FILENO, truncationPrefix.data(),
                 truncationPrefix.size());
  (void)!::write(STDERR_FILENO, message, length);
}

/// "rank N: " in a job of more than one rank, else "".
std::string rankPrefix(int rank, int worldSize) {
  return worldSize > 1 ? "rank " + std::to_string(rank) + ": " : "";
}

/// Where the SIGTERM handler reports, set before it is installed.
int stopStatusFd = -1;

/// Copies `text` to `at`; returns the end of the copy.
char *appendText(char *at, const char *text) {
  while (*text)
    *at++ = *text++;
  return at;
}

/// Writes the decimal digits of `value` (at least 0) at `at`; returns their
/// end.
char *appendDecimal(char *at, int64_t value) {
  char digits[24];
  int count = 0;
  do
    digits[count++] = static_cast<char>('0' + value % 10);
  while ((value /= 10) > 0);
  while (count > 0)
    *at++ = digits[--count];
  return at;
}

/// The SIGTERM handler: a rank its launcher (its parent) stops while it
/// waits for a message reports whom it waited for, as a rank that gave up
/// waiting does, so that the launcher follows the chain of waits to its end;
/// then the signal ends it as before.
void reportWaitWhenStopped(int signal, siginfo_t *sender, void *) {
  int64_t waited = 0;
  int peer = pp::runtime::longestAwaitedPeer(waited);
  // Only the launcher's SIGTERM: a rank someone else stops failed by that.
  if (peer >= 0 && sender && sender->si_pid == ::getppid()) {
    char line[160];
    char *at = appendText(line, "communication ");
    at = appendDecimal(at, peer);
    at = appendText(at, " stopped after waiting ");
    at = appendDecimal(at, waited);
    at = appendText(at, " s for a message from rank ");
    at = appendDecimal(at, peer);
    at = appendText(at, "\n");
    (void)!::write(stopStatusFd, line, static_cast<size_t>(at - line));
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

} // namespace

bool writeAll(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      return false;
    text.remove_prefix(static_cast<size_t>(written));
  }
  return true;
}

RankReport parseRankReport(std::string_view text) {
  RankReport report;
  while (!text.empty()) {
    size_t newline = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(std::min(newline + 1, text.size()));
    constexpr std::string_view kPeak = "peak_rss ";
    if (line.substr(0, kPeak.size()) == kPeak) {
      int64_t kib = 0;
      std::string_view value = line.substr(kPeak.size());
      if (std::from_chars(value.data(), value.data() + value.size(), kib).ec ==
          std::errc())
        report.peakResidentBytes = kib * 1024;
    } else if (!report.failure) {
      report.failure = parseFailure(line);
    }
  }
  return report;
}

void reportTruncationsAsRankFailures(int rank, int worldSize) {
  truncationStatusFd = statusFd();
  truncationPrefix = std::string(kErrorPrefix) + rankPrefix(rank, worldSize);
  pp::runtime::setTruncationReporter(reportTruncation);
}

void reportWaitsWhenStopped() {
  stopStatusFd = statusFd();
  if (stopStatusFd < 0)
    return;
  struct sigaction action {};
  action.sa_sigaction = reportWaitWhenStopped;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
}

int reportRankFailure(int rank, int worldSize, const std::exception &failure) {
  // A peer that sent nothing in time: what this rank did last, to read
  // beside the other ranks' (a hang across machines).
  if (pp::runtime::firstCommunicationFailureTimedOut())
    std::cerr << "flight record of rank " << rank
              << " (its last exchanges and actions, oldest first):\n"
              << pp::runtime::formatFlightRecord() << std::flush;
  if (int fd = statusFd(); fd >= 0 && writeAll(fd, formatFailure(failure)))
    return 1;
  std::cerr << kErrorPrefix << rankPrefix(rank, worldSize) << failure.what()
            << std::endl;
  return 1;
}

void reportPeakResidentMemory() {
  int fd = statusFd();
  if (fd < 0)
    return;
  std::ifstream status("/proc/self/status");
  constexpr std::string_view kHighWater = "VmHWM:";
  for (std::string line; std::getline(status, line);)
    if (std::string_view(line).substr(0, kHighWater.size()) == kHighWater) {
      // "VmHWM:	   51234 kB"
      std::string kib = line.substr(kHighWater.size());
      kib.erase(0, kib.find_first_not_of(" \t"));
      kib = kib.substr(0, kib.find(' '));
      writeAll(fd, "peak_rss " + kib + "\n");
      return;
    }
}
