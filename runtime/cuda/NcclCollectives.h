//===- NcclCollectives.h - a tensor-parallel group on GPUs ------*- C++ -*-===//

#ifndef PP_RUNTIME_CUDA_NCCLCOLLECTIVES_H
#define PP_RUNTIME_CUDA_NCCLCOLLECTIVES_H

#include "runtime/communication/Communicator.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>
#include <nccl.h>

namespace pp::runtime {

/// The stage functions' CollectiveGroup on GPUs: allGatherOnDevice is an
/// ncclAllGather over an NCCL communicator of the tensor-parallel ranks, on
/// a stream of its own ordered after (and before) the caller's stream's
/// work; allGather (host memory, for the kernels that stage through the
/// host), rank and size are `host`'s, the same ranks' host group.
class NcclCollectives : public CollectiveGroup {
public:
  /// Connects the NCCL communicator over `ranks` (the tensor-parallel
  /// group; its unique id travels over it) on the current device. Every
  /// member calls it. Throws std::runtime_error on a failure.
  NcclCollectives(Communicator &ranks, CollectiveGroup &host);
  ~NcclCollectives() override;
  NcclCollectives(const NcclCollectives &) = delete;
  NcclCollectives &operator=(const NcclCollectives &) = delete;

  int64_t rank() const override { return host.rank(); }
  int64_t size() const override { return host.size(); }
  void allGather(const void *mine, size_t bytes, void *all) override {
    host.allGather(mine, bytes, all);
  }
  bool allGatherOnDevice(const void *mine, size_t bytes, void *all,
                         void *stream) override;

private:
  CollectiveGroup &host;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  /// Recorded on the caller's stream before a gather, and on `stream`
  /// after it.
  cudaEvent_t queued = nullptr, gathered = nullptr;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_NCCLCOLLECTIVES_H
