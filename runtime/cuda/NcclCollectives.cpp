//===- NcclCollectives.cpp - a tensor-parallel group on GPUs --------------===//

#include "runtime/cuda/NcclCollectives.h"

#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/NcclConnect.h"

namespace pp::runtime {

NcclCollectives::NcclCollectives(Communicator &ranks, CollectiveGroup &host)
    : host(host) {
  comm = connectNccl(ranks, "the tensor-parallel group");
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");
  for (cudaEvent_t *event : {&queued, &gathered})
    check(cudaEventCreateWithFlags(event, cudaEventDisableTiming),
          "cudaEventCreate");
}

NcclCollectives::~NcclCollectives() {
  cudaStreamSynchronize(stream);
  ncclCommDestroy(comm);
  cudaEventDestroy(queued);
  cudaEventDestroy(gathered);
  cudaStreamDestroy(stream);
}

bool NcclCollectives::allGatherOnDevice(const void *mine, size_t bytes,
                                        void *all, void *callerStream) {
  if (bytes == 0)
    return true;
  auto caller = static_cast<cudaStream_t>(callerStream);
  check(cudaEventRecord(queued, caller), "cudaEventRecord");
  check(cudaStreamWaitEvent(stream, queued, 0), "cudaStreamWaitEvent");
  check(ncclAllGather(mine, all, bytes, ncclChar, comm, stream),
        "ncclAllGather over the tensor-parallel group");
  check(cudaEventRecord(gathered, stream), "cudaEventRecord");
  check(cudaStreamWaitEvent(caller, gathered, 0), "cudaStreamWaitEvent");
  return true;
}

} // namespace pp::runtime
