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

/// Where this node's ranks stand in a job, and how they meet.
struct NodeLaunch {
  /// The ranks this launcher starts (LOCAL_WORLD_SIZE), the job's number of
  /// the first (the node's number times that count) and the job's ranks.
  int localRanks = 1;
  int firstRank = 0;
  int worldSize = 1;
  /// Where job rank 0 serves the rendezvous store. The launcher of the node
  /// that runs rank 0 listens there itself and hands the socket down, so
  /// that no other process can take the port in between; port 0: a free
  /// port it picks (a job on one machine).
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  /// Where the store listens when that is not `masterAddr` (pp-run
  /// --rdzv-bind): an address of node 0, or 0.0.0.0 for all of them, where
  /// `masterAddr` forwards to node 0 without being its own (a Kubernetes
  /// ClusterIP, a load balancer); empty: `masterAddr`. Node 0's ranks
  /// then get it as MASTER_ADDR (unless it is 0.0.0.0 or ::), so that they
  /// need no route back through the service.
  std::string storeBind;
  /// The job's secret; empty: the launcher makes one (a job on one machine).
  std::string secret;
};

/// Starts `node.localRanks` ranks, each running the program `arguments[0]`
/// with `arguments` (the command line, program name first) and RANK,
/// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
/// set as torchrun sets them, and waits for them.
///
/// Each rank runs in a process group of its own and gets SIGTERM when the
/// launcher dies. Job rank 0's standard output is passed on as it is; every
/// other line a rank writes is passed on whole after `[rank N] ` (N the
/// job's number; none for the only rank of a job of one). When a
/// rank fails the others get SIGTERM (SIGKILL if they have not exited a few
/// seconds later), and the last line printed names the rank that caused the
/// failure. SIGTERM, SIGINT and SIGHUP to the launcher are passed on to the
/// ranks; once they have exited the launcher ends itself by the same signal.
/// With `printPeakMemory`, prints one line with each rank's peak resident
/// set as the rank reported it (RankReport.h) after the job.
/// Returns 0 when every rank succeeded, else 1.
int launchRanks(const std::vector<std::string> &arguments,
                const NodeLaunch &node, bool printPeakMemory);

#endif // PP_TOOLS_PP_RUN_LAUNCHER_H
