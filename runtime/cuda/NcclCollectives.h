//===- NcclCollectives.h - a collective group on GPUs -----------*- C++ -*-===//
//
// The CollectiveGroup of GPU ranks (runtime/communication/CollectiveGroup.h):
// an NCCL communicator over the group's ranks, for the stage functions'
// collectives over the tensor-parallel ranks and for the trainer's flat
// buffers over the data-parallel ones. Collectives on host memory (the
// kernels that stage through the host) go to a host group of the same
// ranks.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CUDA_NCCLCOLLECTIVES_H
#define PP_RUNTIME_CUDA_NCCLCOLLECTIVES_H

#include "runtime/communication/CollectiveGroup.h"
#include "runtime/communication/Communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <string>

namespace pp::runtime {

/// An NCCL communicator over a group's ranks on the current GPU. A
/// collective on GPU memory runs on a stream of the group's own, after the
/// work queued on the caller's queue before it and before the work queued
/// there after (events); on host memory it is the host group's. NCCL adds
/// in an order of its own (bf16: rounding each partial sum to bf16): a
/// reduce-scatter of ranges is one ncclReduce per range to its owner.
class NcclCollectives : public CollectiveGroup {
public:
  /// Connects the NCCL communicator over `ranks` on the current GPU (its
  /// unique id travels over `ranks`), for `purpose` (in messages), with
  /// `host` (the same ranks, outliving this object) serving host memory.
  /// Every member calls it. Throws std::runtime_error on a failure.
  NcclCollectives(Communicator &ranks, CollectiveGroup &host,
                  const std::string &purpose);
  /// As above, with the host group the communicator's own.
  NcclCollectives(Communicator &ranks, const std::string &purpose);
  ~NcclCollectives() override;
  NcclCollectives(const NcclCollectives &) = delete;
  NcclCollectives &operator=(const NcclCollectives &) = delete;

  int64_t rank() const override { return host.rank(); }
  int64_t size() const override { return host.size(); }
  bool reaches(const Device &device) const override;
  void allGather(const void *mine, size_t bytes, void *all,
                 Queue &queue) override;
  void allReduceSum(float *values, size_t count, Queue &queue) override;
  void allReduceSum(BFloat16 *values, size_t count, Queue &queue) override;
  void reduceScatterSum(float *values, size_t count,
                        const std::vector<OwnedRange> &ranges,
                        Queue &queue) override;
  void reduceScatterSum(BFloat16 *values, size_t count,
                        const std::vector<OwnedRange> &ranges,
                        Queue &queue) override;

private:
  /// Connects the communicator and makes the stream and events.
  void connect(Communicator &ranks);
  /// Runs `collective` (NCCL calls on `stream`) between the work queued on
  /// `queue` before and after; `what` names it in errors.
  void onStream(Queue &queue, const std::string &what,
                const std::function<ncclResult_t()> &collective);
  /// The sums above of elements T (float or BFloat16), NCCL's `type`.
  template <typename T>
  void allReduceSumOf(T *values, size_t count, ncclDataType_t type,
                      Queue &queue);
  template <typename T>
  void reduceScatterSumOf(T *values, size_t count,
                          const std::vector<OwnedRange> &ranges,
                          ncclDataType_t type, Queue &queue);

  std::unique_ptr<CollectiveGroup> ownedHost;
  CollectiveGroup &host;
  std::string purpose;
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  /// Recorded on the caller's stream before a collective, and on `stream`
  /// after it.
  cudaEvent_t queued = nullptr, done = nullptr;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_NCCLCOLLECTIVES_H
