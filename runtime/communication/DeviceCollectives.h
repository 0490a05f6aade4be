//===- DeviceCollectives.h - collectives on a device's memory ---*- C++ -*-===//
//
// The collectives the trainer runs on its flat buffers (gradient sums,
// ZeRO shares of values and gradients) where they live: each is queued on a
// queue of the buffers' device, after the work queued there before it and
// before the work queued after. The host's implementation runs them at
// once over a Communicator (hostCollectives); a GPU's is an NCCL
// communicator over the same ranks (runtime/cuda). The scalars of a step
// (norms, counts) stay on the host Communicator.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COMMUNICATION_DEVICECOLLECTIVES_H
#define PP_RUNTIME_COMMUNICATION_DEVICECOLLECTIVES_H

#include "runtime/communication/Communicator.h"
#include "runtime/device/Queue.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace pp::runtime {

/// Collectives over a group of ranks on memory of one device per rank.
/// Every rank of the group issues the same calls in the same order.
/// Methods throw std::runtime_error on a failure.
class DeviceCollectives {
public:
  virtual ~DeviceCollectives() = default;
  /// This rank's index in the group, and the group's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Sums the `count` floats at `values` element-wise over the group, in
  /// place on every rank, on `queue`.
  virtual void allReduceSum(float *values, size_t count, Queue &queue) = 0;
  /// Sums each range of `ranges` (of the `count` floats at `values`) over
  /// the group and leaves the sum on the range's owner only, on `queue`;
  /// the other ranks' values there are left undefined. Every rank passes
  /// the same ranges.
  virtual void reduceScatterSum(float *values, size_t count,
                                const std::vector<OwnedRange> &ranges,
                                Queue &queue) = 0;
  /// Gathers every rank's `count` floats at `mine` into `all` (`count` x
  /// the ranks, not overlapping `mine`), in rank order, on `queue`.
  virtual void allGather(const float *mine, size_t count, float *all,
                         Queue &queue) = 0;
};

/// The collectives of `ranks` on host memory, run at once on the caller's
/// thread (a host queue's order): the Communicator's, with its bits.
std::unique_ptr<DeviceCollectives> hostCollectives(Communicator &ranks);

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATION_DEVICECOLLECTIVES_H
