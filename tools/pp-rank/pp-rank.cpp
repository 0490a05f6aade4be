//===- pp-rank.cpp - one rank of a pipeline job ---------------------------===//
//
// Runs one rank of the job a job description file gives (pp-run writes
// it: docs/tools/pp-rank.md), at the place torchrun's variables give
// (RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
// PP_JOB_SECRET; one rank of one without RANK). It links the runtime only,
// so that a rank process holds the runtime and its tensors, not a
// compiler.
//
//===----------------------------------------------------------------------===//

#include "tools/pp-rank/RankEnvironment.h"
#include "tools/pp-rank/RankReport.h"
#include "tools/pp-rank/RankWorker.h"

#include "runtime/training/JobDescription.h"

#include <cstring>
#include <iostream>
#include <optional>
#include <string>

using namespace pp::runtime;

namespace {

constexpr const char *kUsage =
    "usage: pp-rank --job FILE\n"
    "  Runs one rank of the job FILE describes (pp-run --write-job FILE\n"
    "  ... writes one), at the place RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
    "  MASTER_ADDR, MASTER_PORT and PP_JOB_SECRET give, as torchrun sets\n"
    "  them: torchrun --nproc-per-node N pp-rank --job FILE\n";

/// Prints `message` and the usage as an error; returns the exit code.
int usageError(const std::string &message) {
  std::cerr << "pp-rank: error: " << message << "\n" << kUsage;
  return 1;
}

/// The job file `--job FILE` or `--job=FILE` names; nullopt (after saying
/// why) for any other command line, `help` set for --help.
std::optional<std::string> jobPath(int argc, char **argv, bool &help) {
  std::optional<std::string> path;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    if (argument == "--help" || argument == "-h") {
      help = true;
      return std::nullopt;
    }
    std::optional<std::string> value;
    if (argument == "--job" && i + 1 < argc)
      value = argv[++i];
    else if (argument.rfind("--job=", 0) == 0)
      value = argument.substr(std::strlen("--job="));
    if (!value || value->empty() || path) {
      usageError(argument == "--job" || argument.rfind("--job=", 0) == 0
                     ? path ? "--job is given twice"
                            : "--job needs a file name"
                     : "unknown argument '" + argument + "'");
      return std::nullopt;
    }
    path = value;
  }
  if (!path)
    usageError("no --job FILE given");
  return path;
}

} // namespace

int main(int argc, char **argv) {
  bool help = false;
  std::optional<std::string> path = jobPath(argc, argv, help);
  if (help) {
    std::cout << kUsage;
    return 0;
  }
  if (!path)
    return 1;
  int status;
  try {
    JobDescription job = readJobDescription(*path);
    adoptSlurmEnvironment();
    RendezvousInfo rendezvous = rendezvousFromEnvironment(job.timeoutSeconds);
    rendezvous.linkIntegrity = job.linkIntegrity;
    status = runRank(job, rendezvous);
  } catch (const std::exception &failure) {
    // The job file or the environment: before the rank knows its place.
    status = reportRankFailure(0, 1, failure);
  }
  reportPeakResidentMemory();
  return status;
}
