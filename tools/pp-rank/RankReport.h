//===- RankReport.h - what a rank tells the launcher that started it -*- C++ -*-===//
//
// A rank that pp-run's launcher started finds the descriptor of a report
// pipe in PP_RUN_STATUS_FD. On it the rank writes, one line each, why it
// failed (if it did) and its peak resident memory before it exits; the
// launcher reads them back for its summary. Without the variable (a rank
// torchrun started) failures go to stderr.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RANK_RANKREPORT_H
#define PP_TOOLS_PP_RANK_RANKREPORT_H

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

/// The environment variable that names the descriptor on which a rank
/// reports to the launcher that started it.
constexpr const char *kStatusFdVariable = "PP_RUN_STATUS_FD";

/// Why a rank failed, as it reported to the launcher.
struct FailureReport {
  /// Whether it failed exchanging messages with other ranks.
  bool communication = false;
  /// The job rank it was waiting for, or -1.
  int peer = -1;
  std::string message;
};

/// Everything a rank reported on its report pipe.
struct RankReport {
  std::optional<FailureReport> failure;
  /// The rank process's peak resident set (VmHWM), in bytes.
  std::optional<int64_t> peakResidentBytes;
};

/// Writes all of `text` to the pipe or file `fd`; false if it cannot.
bool writeAll(int fd, std::string_view text);

/// Reads back the lines a rank wrote on its report pipe.
RankReport parseRankReport(std::string_view text);

/// Reports that rank `rank` of a job of `worldSize` ranks failed with
/// `failure`: to the pp-run launcher that started it, if one did, else on
/// stderr. Returns the rank's exit code.
int reportRankFailure(int rank, int worldSize, const std::exception &failure);

/// Has a mapped file's truncation (MappedFile's SIGBUS handler) end rank
/// `rank` as reportRankFailure would: the message reaches the launcher's
/// summary.
void reportTruncationsAsRankFailures(int rank, int worldSize);

/// Has a SIGTERM from the launcher that started this rank, while the rank
/// waits for a message, report whom it waited for (and how long) as a
/// communication failure, before the signal ends the rank: so a launcher
/// that stops a rank others wait for learns what that rank waited for in
/// turn. Does nothing for a rank no pp-run launcher started.
void reportWaitsWhenStopped();

/// Reports this process's peak resident set so far to the launcher that
/// started it, if one did; call it last, just before the rank exits.
void reportPeakResidentMemory();

#endif // PP_TOOLS_PP_RANK_RANKREPORT_H
