//===- RankWorker.h - runs one rank of a job --------------------*- C++ -*-===//
//
// The rank side of pp-run's jobs, which pp-rank runs: one rank of the job
// a job description gives, at the place in the job torchrun's variables
// give. Links the runtime only (no MLIR, LLVM or LibTorch).
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RANK_RANKWORKER_H
#define PP_TOOLS_PP_RANK_RANKWORKER_H

#include "runtime/communication/Communicator.h"
#include "runtime/training/JobDescription.h"

/// Runs rank `info.rank` of `job`: trains its stages, or with
/// `job.inference` runs its part of the forward pass (job rank 0 writes the
/// outputs). Reports a failure to the launcher (RankReport.h) and returns
/// the rank's exit code.
int runRank(const pp::runtime::JobDescription &job,
            const pp::runtime::RendezvousInfo &info);

#endif // PP_TOOLS_PP_RANK_RANKWORKER_H
