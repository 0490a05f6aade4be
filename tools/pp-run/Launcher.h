//===- Launcher.h - starts and watches the ranks of a job -------*- C++ -*-===//
//
// The launcher side of pp-run: starts one process per rank on this machine
// with torchrun's variables, forwards their output a whole line at a time
// and the signals that end a job, stops them all when one fails and names
// the rank that caused the failure. The rank side is tools/pp-rank.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RUN_LAUNCHER_H
#define PP_TOOLS_PP_RUN_LAUNCHER_H

#include <string>
#include <vector>

/// Starts `count` ranks, each running the program `arguments[0]` with
/// `arguments` (the command line, program name first) and RANK,
/// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
/// set, and waits for them.
///
/// Each rank runs in a process group of its own and gets SIGTERM when the
/// launcher dies. Rank 0's standard output is passed on as it is; every
/// other line a rank writes is passed on whole after `[rank N] ` (none for
/// the only rank of a job of one). When a
/// rank fails the others get SIGTERM (SIGKILL if they have not exited a few
/// seconds later), and the last line printed names the rank that caused the
/// failure. SIGTERM, SIGINT and SIGHUP to the launcher are passed on to the
/// ranks; once they have exited the launcher ends itself by the same signal.
/// With `printPeakMemory`, prints one line with each rank's peak resident
/// set as the rank reported it (RankReport.h) after the job.
/// Returns 0 when every rank succeeded, else 1.
int launchRanks(const std::vector<std::string> &arguments, int count,
                bool printPeakMemory);

#endif // PP_TOOLS_PP_RUN_LAUNCHER_H
