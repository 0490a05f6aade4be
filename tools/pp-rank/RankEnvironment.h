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

/// The descriptor of the rendezvous store's listening socket, made by the
/// launcher of job rank 0's node and inherited by rank 0 (pp-run's
/// launcher sets it; torchrun does not).
inline constexpr const char *kStoreFdVariable = "PP_STORE_FD";

/// The non-negative integer in the environment variable `name`, or
/// nullopt when it is not set; sets `problem` (naming the variable and its
/// value) when it is not such an integer.
std::optional<int> environmentInt(const char *name, std::string &problem);

/// The rendezvous of this rank: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
/// PP_JOB_SECRET and, on rank 0, PP_STORE_FD (rank 0 of 1 without RANK),
/// waiting `timeoutSeconds`
/// for other ranks. Throws std::runtime_error naming the variable that is
/// malformed, missing or out of range.
pp::runtime::RendezvousInfo rendezvousFromEnvironment(int timeoutSeconds);

/// The first host of a Slurm host list ("node[01-04,07],gpu5" gives
/// "node01"); "" for an empty list.
std::string firstSlurmHost(const std::string &nodeList);

/// The tasks Slurm runs on node `node` by SLURM_TASKS_PER_NODE's syntax
/// ("2(x3),1": two on nodes 0-2, one on node 3); nullopt when the text does
/// not say.
std::optional<int> slurmTasksOnNode(const std::string &tasksPerNode, int node);

/// Under `srun` with one task per rank (a step of several tasks:
/// SLURM_PROCID and SLURM_STEP_NUM_TASKS above 1 set, torchrun's RANK not),
/// sets torchrun's variables from Slurm's: RANK from SLURM_PROCID,
/// WORLD_SIZE from SLURM_STEP_NUM_TASKS, LOCAL_RANK from
/// SLURM_LOCALID, LOCAL_WORLD_SIZE from SLURM_TASKS_PER_NODE and
/// SLURM_NODEID, MASTER_ADDR (unless set) from the first host of
/// SLURM_JOB_NODELIST (or SLURM_NODELIST) and MASTER_PORT (unless set) to
/// 29500. Returns whether it did; throws std::runtime_error naming the
/// variable Slurm set that cannot be read.
bool adoptSlurmEnvironment();

/// The CPUs this process may run on.
int availableCpus();

/// `requested` threads if positive, else the CPUs this process may run on
/// divided among `ranks` ranks, at least 1.
int threadsAmong(int requested, int ranks);

#endif // PP_TOOLS_PP_RANK_RANKENVIRONMENT_H
