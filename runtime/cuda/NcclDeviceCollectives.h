//===- NcclDeviceCollectives.h - device collectives over NCCL ---*- C++ -*-===//
//
// The GPU implementation of DeviceCollectives
// (runtime/communication/DeviceCollectives.h): the data-parallel gradient
// reduction and the ZeRO gathers of a rank's flat buffers run on NCCL,
// where the buffers are.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CUDA_NCCLDEVICECOLLECTIVES_H
#define PP_RUNTIME_CUDA_NCCLDEVICECOLLECTIVES_H

#include "runtime/communication/DeviceCollectives.h"

#include <nccl.h>

#include <string>

namespace pp::runtime {

/// DeviceCollectives on GPU memory: an NCCL communicator over the ranks of
/// a host Communicator, each collective queued on the given queue's
/// stream. A reduce-scatter of ranges is one ncclReduce per range to its
/// owner, in one NCCL group.
class NcclDeviceCollectives : public DeviceCollectives {
public:
  /// Connects the NCCL communicator over `ranks` on the current device (its
  /// unique id travels over `ranks`), for `purpose` (in messages). Every
  /// member calls it. Throws std::runtime_error on a failure.
  NcclDeviceCollectives(Communicator &ranks, const std::string &purpose);
  ~NcclDeviceCollectives() override;
  NcclDeviceCollectives(const NcclDeviceCollectives &) = delete;
  NcclDeviceCollectives &operator=(const NcclDeviceCollectives &) = delete;

  int rank() const override { return myRank; }
  int size() const override { return ranks; }
  void allReduceSum(float *values, size_t count, Queue &queue) override;
  void reduceScatterSum(float *values, size_t count,
                        const std::vector<OwnedRange> &ranges,
                        Queue &queue) override;
  void allGather(const float *mine, size_t count, float *all,
                 Queue &queue) override;

private:
  std::string purpose;
  ncclComm_t comm = nullptr;
  int myRank = 0, ranks = 1;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_NCCLDEVICECOLLECTIVES_H
