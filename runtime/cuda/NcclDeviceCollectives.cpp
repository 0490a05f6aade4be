//===- NcclDeviceCollectives.cpp - device collectives over NCCL -----------===//

#include "runtime/cuda/NcclDeviceCollectives.h"

#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/NcclConnect.h"
#include "runtime/communication/LinkCollectives.h"

namespace pp::runtime {

NcclDeviceCollectives::NcclDeviceCollectives(Communicator &ranks,
                                             const std::string &purpose)
    : purpose(purpose), comm(connectNccl(ranks, purpose)),
      myRank(ranks.rank()), ranks(ranks.worldSize()) {}

NcclDeviceCollectives::~NcclDeviceCollectives() { ncclCommDestroy(comm); }

void NcclDeviceCollectives::allReduceSum(float *values, size_t count,
                                         Queue &queue) {
  if (count == 0)
    return;
  check(ncclAllReduce(values, values, count, ncclFloat, ncclSum, comm,
                      streamOf(queue)),
        "an all-reduce of " + purpose);
}

void NcclDeviceCollectives::reduceScatterSum(
    float *values, size_t count, const std::vector<OwnedRange> &ranges,
    Queue &queue) {
  checkOwnedRanges(ranges, count, ranks);
  check(ncclGroupStart(), "ncclGroupStart");
  // The group ends however its calls go: an open group would defer every
  // later call of this thread.
  ncclResult_t failed = ncclSuccess;
  for (const OwnedRange &range : ranges)
    if (range.count > 0 && failed == ncclSuccess)
      failed = ncclReduce(values + range.begin, values + range.begin,
                          range.count, ncclFloat, ncclSum, range.owner, comm,
                          streamOf(queue));
  ncclResult_t ended = ncclGroupEnd();
  check(failed, "a reduce-scatter of " + purpose);
  check(ended, "a reduce-scatter of " + purpose);
}

void NcclDeviceCollectives::allGather(const float *mine, size_t count,
                                      float *all, Queue &queue) {
  if (count == 0)
    return;
  check(ncclAllGather(mine, all, count, ncclFloat, comm, streamOf(queue)),
        "an all-gather of " + purpose);
}

} // namespace pp::runtime
