//===- NcclCollectives.cpp - a collective group on GPUs -------------------===//

#include "runtime/cuda/NcclCollectives.h"

#include "runtime/communication/CommunicatorCollectives.h"
#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/NcclConnect.h"

namespace pp::runtime {

NcclCollectives::NcclCollectives(Communicator &ranks, CollectiveGroup &host,
                                 const std::string &purpose)
    : host(host), purpose(purpose) {
  connect(ranks);
}

NcclCollectives::NcclCollectives(Communicator &ranks,
                                 const std::string &purpose)
    : ownedHost(std::make_unique<CommunicatorCollectives>(ranks)),
      host(*ownedHost), purpose(purpose) {
  connect(ranks);
}

void NcclCollectives::connect(Communicator &ranks) {
  check(cudaGetDevice(&device), "cudaGetDevice");
  comm = connectNccl(ranks, purpose);
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");
  for (cudaEvent_t *event : {&queued, &done})
    check(cudaEventCreateWithFlags(event, cudaEventDisableTiming),
          "cudaEventCreate");
}

NcclCollectives::~NcclCollectives() {
  cudaStreamSynchronize(stream);
  ncclCommDestroy(comm);
  cudaEventDestroy(queued);
  cudaEventDestroy(done);
  cudaStreamDestroy(stream);
}

bool NcclCollectives::reaches(const Device &memory) const {
  return CollectiveGroup::reaches(memory) ||
         (memory.deviceKind() == PP_DEVICE_CUDA &&
          memory.deviceOrdinal() == device);
}

void NcclCollectives::onStream(
    Queue &queue, const std::string &what,
    const std::function<ncclResult_t()> &collective) {
  cudaStream_t caller = streamOf(queue);
  check(cudaEventRecord(queued, caller), "cudaEventRecord");
  check(cudaStreamWaitEvent(stream, queued, 0), "cudaStreamWaitEvent");
  check(collective(), what + " over " + purpose);
  check(cudaEventRecord(done, stream), "cudaEventRecord");
  check(cudaStreamWaitEvent(caller, done, 0), "cudaStreamWaitEvent");
}

void NcclCollectives::allGather(const void *mine, size_t bytes, void *all,
                                Queue &queue) {
  if (queue.device().deviceKind() == PP_DEVICE_CPU)
    return host.allGather(mine, bytes, all, queue);
  checkReaches(queue);
  if (bytes > 0)
    onStream(queue, "an all-gather", [&] {
      return ncclAllGather(mine, all, bytes, ncclChar, comm, stream);
    });
}

template <typename T>
void NcclCollectives::allReduceSumOf(T *values, size_t count,
                                     ncclDataType_t type, Queue &queue) {
  if (queue.device().deviceKind() == PP_DEVICE_CPU)
    return host.allReduceSum(values, count, queue);
  checkReaches(queue);
  if (count > 0)
    onStream(queue, "an all-reduce", [&] {
      return ncclAllReduce(values, values, count, type, ncclSum, comm, stream);
    });
}

template <typename T>
void NcclCollectives::reduceScatterSumOf(T *values, size_t count,
                                         const std::vector<OwnedRange> &ranges,
                                         ncclDataType_t type, Queue &queue) {
  if (queue.device().deviceKind() == PP_DEVICE_CPU)
    return host.reduceScatterSum(values, count, ranges, queue);
  checkReaches(queue);
  checkOwnedRanges(ranges, count, static_cast<int>(size()));
  onStream(queue, "a reduce-scatter", [&] {
    // The group ends however its calls go: an open group would defer every
    // later call of this thread.
    ncclResult_t result = ncclGroupStart();
    if (result != ncclSuccess)
      return result;
    for (const OwnedRange &range : ranges)
      if (range.count > 0 && result == ncclSuccess)
        result =
            ncclReduce(values + range.begin, values + range.begin, range.count,
                       type, ncclSum, range.owner, comm, stream);
    ncclResult_t ended = ncclGroupEnd();
    return result != ncclSuccess ? result : ended;
  });
}

void NcclCollectives::allReduceSum(float *values, size_t count, Queue &queue) {
  allReduceSumOf(values, count, ncclFloat, queue);
}

void NcclCollectives::allReduceSum(BFloat16 *values, size_t count,
                                   Queue &queue) {
  allReduceSumOf(values, count, ncclBfloat16, queue);
}

void NcclCollectives::reduceScatterSum(float *values, size_t count,
                                       const std::vector<OwnedRange> &ranges,
                                       Queue &queue) {
  reduceScatterSumOf(values, count, ranges, ncclFloat, queue);
}

void NcclCollectives::reduceScatterSum(BFloat16 *values, size_t count,
                                       const std::vector<OwnedRange> &ranges,
                                       Queue &queue) {
  reduceScatterSumOf(values, count, ranges, ncclBfloat16, queue);
}

} // namespace pp::runtime
