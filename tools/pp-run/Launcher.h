//===- Launcher.h - starts and watches the ranks of a job -------*- C++ -*-===//
//
// The launcher side of pp-run: starts one process per rank on this machine
// with torchrun's variables, forwards their output a whole line at a time
// and the signals that end a job, stops them all when one fails and names
// the rank that caused the failure. Also the rank side of the report a rank
// gives its launcher when it fails.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RUN_LAUNCHER_H
#define PP_TOOLS_PP_RUN_LAUNCHER_H

#include <exception>
#include <string>
#include <vector>

/// Starts `count` ranks, each running this program with `arguments` (the
/// command line, program name first) and RANK, LOCAL_RANK, WORLD_SIZE,
/// LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, and waits for them.
///
/// Each rank runs in a process group of its own and gets SIGTERM when the
/// launcher dies. Rank 0's standard output is passed on as it is; every
/// other line a rank writes is passed on whole after `[rank N] `. When a
/// rank fails the others get SIGTERM (SIGKILL if they have not exited a few
/// seconds later), and the last line printed names the rank that caused the
/// failure. SIGTERM, SIGINT and SIGHUP to the launcher are passed on to the
/// ranks; once they have exited the launcher ends itself by the same signal.
/// Returns 0 when every rank succeeded, else 1.
int launchRanks(const std::vector<std::string> &arguments, int count);

/// Reports that rank `rank` of a job of `worldSize` ranks failed with
/// `failure`: to the pp-run launcher that started it, if one did, else on
/// stderr. Returns the rank's exit code.
int reportRankFailure(int rank, int worldSize, const std::exception &failure);

/// Has a mapped file's truncation (MappedFile's SIGBUS handler) end rank
/// `rank` as reportRankFailure would: the message reaches the launcher's
/// summary.
void reportTruncationsAsRankFailures(int rank, int worldSize);

#endif // PP_TOOLS_PP_RUN_LAUNCHER_H
