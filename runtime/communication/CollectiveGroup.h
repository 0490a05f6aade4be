//===- CollectiveGroup.h - collectives over a group of ranks ----*- C++ -*-===//
//
// One interface for every group that runs collectives: the devices a
// stage function's collectives span (pp.all_reduce, pp.all_gather,
// pp.reduce_scatter, pp.shard_slice and the sharded gather and
// cross-entropy: the ranks that differ from the caller only in the
// coordinates of the mesh axes the collective names, Frame.h) and the
// trainer's groups over its flat buffers (a stage's data-parallel
// replicas, ZeRO's gathers). Implementations: a Communicator's links
// (CommunicatorCollectives, TCP with the job's authentication), shared
// memory on one host (SharedMemoryCollectives) and NCCL on GPUs
// (runtime/cuda/NcclCollectives). Each collective runs on memory of a
// queue's device, in that queue's order.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COMMUNICATION_COLLECTIVEGROUP_H
#define PP_RUNTIME_COMMUNICATION_COLLECTIVEGROUP_H

#include "runtime/communication/LinkCollectives.h"
#include "runtime/core/ElementTypes.h"
#include "runtime/device/Device.h"
#include "runtime/device/Queue.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pp::runtime {

/// A group of ranks, one device each, that run collectives together. Every
/// member issues the same calls in the same order. The collectives take
/// memory of the device of the queue they are given (one the group
/// reaches) and run after the work queued there before and before the
/// work queued there after. Methods throw std::runtime_error on a failure
/// and std::logic_error for memory of a device the group does not reach.
class CollectiveGroup {
public:
  virtual ~CollectiveGroup() = default;
  /// This device's index in the group, in [0, size()).
  virtual int64_t rank() const = 0;
  /// The number of devices in the group.
  virtual int64_t size() const = 0;
  /// Whether the collectives work on memory of `device`: every group
  /// works on the host's; an NCCL group also on its GPU's.
  virtual bool reaches(const Device &device) const;

  /// Writes every member's `bytes` bytes at `mine` into `all` (size() *
  /// bytes, not overlapping `mine`), in group order.
  virtual void allGather(const void *mine, size_t bytes, void *all,
                         Queue &queue) = 0;
  /// Sums the `count` floats at `values` element-wise over the group, in
  /// place on every member: in group order (rank 0's plus rank 1's plus
  /// ...), the same bits on every member. NCCL adds in an order of its own.
  /// This one gathers every member's values and adds them up.
  virtual void allReduceSum(float *values, size_t count, Queue &queue);
  /// Sums each range of `ranges` (of the `count` floats at `values`) as
  /// allReduceSum does and leaves the sum on the range's owner only; the
  /// others' values there are left undefined. Every member passes the same
  /// ranges. This one gathers every member's values and adds up the
  /// ranges this member owns.
  virtual void reduceScatterSum(float *values, size_t count,
                                const std::vector<OwnedRange> &ranges,
                                Queue &queue);
  /// The sums above of bf16 values (half the bytes of f32's): each
  /// element's sum adds the members' values widened to float, in group
  /// order, and is rounded to bf16 once (the same bits on every member).
  /// NCCL adds in an order of its own and rounds each partial sum to bf16
  /// (for two members the same bits). These gather every member's values.
  virtual void allReduceSum(BFloat16 *values, size_t count, Queue &queue);
  virtual void reduceScatterSum(BFloat16 *values, size_t count,
                                const std::vector<OwnedRange> &ranges,
                                Queue &queue);

protected:
  /// Throws std::logic_error, naming `queue`'s device, unless the group
  /// reaches it.
  void checkReaches(const Queue &queue) const;

private:
  /// The gather-and-add sums of T (float or BFloat16) above.
  template <typename T>
  void gatheredSum(T *values, size_t count,
                   const std::vector<OwnedRange> *ranges, Queue &queue);
};

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATION_COLLECTIVEGROUP_H
