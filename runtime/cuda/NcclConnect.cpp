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

} // namespace pp::runtime
