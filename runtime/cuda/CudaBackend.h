//===- CudaBackend.h - stage functions on a GPU, messages over NCCL -*- C++
//-*-===//

#ifndef PP_RUNTIME_CUDA_CUDABACKEND_H
#define PP_RUNTIME_CUDA_CUDABACKEND_H

#include "runtime/training/Backend.h"

namespace pp::runtime {

/// Where a rank of a GPU job sits: its groups and its GPU.
struct CudaRank {
  /// The rank's pipeline group (its ranks are the stages).
  Communicator &pipeline;
  /// The rank's tensor-parallel group and the host CollectiveGroup over it.
  Communicator &tensorParallel;
  CollectiveGroup &hostCollectives;
  /// The rank's index among the job's ranks on its machine, and their
  /// number (LOCAL_RANK, LOCAL_WORLD_SIZE).
  int localRank = 0, localRanks = 1;
};

/// Runs the stage functions of libstages_cuda.so on GPU `localRank` modulo
/// the visible devices, with NCCL between the ranks' GPUs: a two-rank
/// communicator for each stream of pipeline messages between ranks
/// (Backend::connectMessages; in schedule order on a CUDA stream of its own
/// at each end, so that any rank may send to any other, as virtual stages
/// need, and no message waits behind another stream's; their ids travel
/// over the pipeline group),
/// and with more than one tensor-parallel rank one over the
/// tensor-parallel group for the stage functions' collectives
/// (NcclCollectives, Backend::tensorCollectives). Ranks that share a GPU
/// (more local ranks than GPUs) reach each other through host memory.
std::unique_ptr<Backend> createCudaBackend(const CudaRank &rank);

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_CUDABACKEND_H
