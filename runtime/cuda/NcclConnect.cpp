//===- NcclConnect.cpp - NCCL communicators over host groups --------------===//

#include "runtime/cuda/NcclConnect.h"

#include "runtime/cuda/CudaChecks.h"

namespace pp::runtime {

ncclComm_t connectNccl(Communicator &ranks, const std::string &purpose) {
  ncclUniqueId id;
  if (ranks.rank() == 0)
    check(ncclGetUniqueId(&id), "ncclGetUniqueId for " + purpose);
  ranks.broadcast(&id, sizeof(id), 0);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, ranks.worldSize(), id, ranks.rank()),
        "ncclCommInitRank for " + purpose);
  return comm;
}

ncclComm_t connectNcclPair(Communicator &ranks, int sender, int receiver,
                           const std::string &purpose) {
  ncclUniqueId id;
  if (ranks.rank() == sender)
    check(ncclGetUniqueId(&id), "ncclGetUniqueId for " + purpose);
  ranks.broadcast(&id, sizeof(id), sender);
  if (ranks.rank() != sender && ranks.rank() != receiver)
    return nullptr;
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, 2, id, ranks.rank() == sender ? 0 : 1),
        "ncclCommInitRank for " + purpose);
  return comm;
}

} // namespace pp::runtime
