//===- RankEnvironment.h - a rank's place from torchrun's variables -*- C++ -*-===//
//
// torchrun (and pp-run's launcher) tell a rank where it stands in
// environment variables: RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT and the job secret. These read them, and the CPUs the
// rank's threads share.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RANK_RANKENVIRONMENT_H
#define PP_TOOLS_PP_RANK_RANKENVIRONMENT_H

#include "runtime/communication/Communicator.h"

#include <optional>
#include <string>

/// The non-negative integer in the environment variable `name`, or
/// nullopt when it is not set; sets `problem` (naming the variable and its
/// value) when it is not such an integer.
std::optional<int> environmentInt(const char *name, std::string &problem);

/// The rendezvous of this rank: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
/// and PP_JOB_SECRET (rank 0 of 1 without RANK), waiting `timeoutSeconds`
/// for other ranks. Throws std::runtime_error naming the variable that is
/// malformed, missing or out of range.
pp::runtime::RendezvousInfo rendezvousFromEnvironment(int timeoutSeconds);

/// The CPUs this process may run on.
int availableCpus();

/// `requested` threads if positive, else the CPUs this process may run on
/// divided among `ranks` ranks, at least 1.
int threadsAmong(int requested, int ranks);

#endif // PP_TOOLS_PP_RANK_RANKENVIRONMENT_H
