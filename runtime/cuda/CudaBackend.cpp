//===- CudaBackend.cpp - stage functions on a GPU, messages over NCCL -----===//
//
// Kernels run on the legacy default stream. A send waits for the kernels
// before it, copies the tensor on a copy stream into a buffer the channel
// owns (so the generated code may free the tensor at once) and sends that
// buffer on the stream of its communicator; a receive is ordered after the
// tensor's allocation and the kernels after it wait for the receive. The
// communication streams are non-blocking, so kernels never wait for a peer
// implicitly.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/NcclCollectives.h"
#include "runtime/cuda/NcclConnect.h"
#include "runtime/cuda/pp_kernels_cuda.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace pp::runtime {
namespace {

/// One NCCL communicator over the pipeline group with its own stream.
struct Link {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

class NcclChannel : public MessageChannel {
public:
  NcclChannel(int rank, Link &toLater, Link &toEarlier)
      : rank(rank), toLater(toLater), toEarlier(toEarlier) {
    check(cudaStreamCreateWithFlags(&copyStream, cudaStreamNonBlocking),
          "cudaStreamCreate");
  }

  ~NcclChannel() override {
    finish();
    cudaStreamDestroy(copyStream);
  }

  void send(int64_t stage, const std::string &name,
            const pp_tensor &tensor) override {
    size_t bytes = pp_tensor_nbytes(&tensor);
    if (bytes == 0)
      return;
    Link &link = stage > rank ? toLater : toEarlier;
    void *buffer = nullptr;
    check(cudaMalloc(&buffer, bytes), "cudaMalloc");
    pending.push_back(buffer);
    cudaEvent_t computed = newEvent(), copied = newEvent();
    check(cudaEventRecord(computed, 0), "cudaEventRecord");
    check(cudaStreamWaitEvent(copyStream, computed, 0), "cudaStreamWaitEvent");
    check(cudaMemcpyAsync(buffer,
                          pp_tensor_data(const_cast<pp_tensor *>(&tensor)),
                          bytes, cudaMemcpyDeviceToDevice, copyStream),
          "cudaMemcpyAsync");
    check(cudaEventRecord(copied, copyStream), "cudaEventRecord");
    // The generated code may free the tensor after this call: later
    // kernels (and the free) wait for the copy, which waits for no peer.
    check(cudaStreamWaitEvent(0, copied, 0), "cudaStreamWaitEvent");
    check(cudaStreamWaitEvent(link.stream, copied, 0), "cudaStreamWaitEvent");
    check(ncclSend(buffer, bytes, ncclChar, static_cast<int>(stage), link.comm,
                   link.stream),
          "sending '" + name + "'");
  }

  std::string recv(int64_t stage, const std::string &name,
                   pp_tensor &tensor) override {
    size_t bytes = pp_tensor_nbytes(&tensor);
    if (bytes == 0)
      return "";
    // A message from an earlier stage went over its link to later stages.
    Link &link = stage < rank ? toLater : toEarlier;
    try {
      cudaEvent_t allocated = newEvent(), received = newEvent();
      check(cudaEventRecord(allocated, 0), "cudaEventRecord");
      check(cudaStreamWaitEvent(link.stream, allocated, 0),
            "cudaStreamWaitEvent");
      check(ncclRecv(pp_tensor_data(&tensor), bytes, ncclChar,
                     static_cast<int>(stage), link.comm, link.stream),
            "ncclRecv");
      check(cudaEventRecord(received, link.stream), "cudaEventRecord");
      check(cudaStreamWaitEvent(0, received, 0), "cudaStreamWaitEvent");
    } catch (const std::exception &error) {
      return "receiving '" + name + "' from stage " + std::to_string(stage) +
             ": " + error.what();
    }
    return "";
  }

  /// Waits for every message and frees the send buffers.
  void finish() {
    for (Link *link : {&toLater, &toEarlier})
      cudaStreamSynchronize(link->stream);
    cudaStreamSynchronize(copyStream);
    for (void *buffer : pending)
      cudaFree(buffer);
    pending.clear();
    for (cudaEvent_t event : events)
      cudaEventDestroy(event);
    events.clear();
  }

private:
  cudaEvent_t newEvent() {
    cudaEvent_t event;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
          "cudaEventCreate");
    events.push_back(event);
    return event;
  }

  int rank;
  Link &toLater, &toEarlier;
  cudaStream_t copyStream = nullptr;
  std::vector<void *> pending;
  std::vector<cudaEvent_t> events;
};

/// NCCL refuses a communicator with two ranks on one GPU ("Duplicate GPU
/// detected"). When the machine's ranks outnumber its GPUs, each rank gets
/// a host id of its own (NCCL_HOSTID: the machine's name and the local
/// rank) and loopback sockets (NCCL_SOCKET_IFNAME=lo), unless the
/// environment sets them: NCCL then connects the ranks as if on different
/// hosts, through host memory. Runs before the process's first NCCL call,
/// which reads them.
void separateRanksSharingGpus(int localRank, int localRanks, int devices) {
  if (localRanks <= devices)
    return;
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string host =
      std::string(name) + "/pp-rank-" + std::to_string(localRank);
  setenv("NCCL_HOSTID", host.c_str(), /*overwrite=*/0);
  setenv("NCCL_SOCKET_IFNAME", "lo", /*overwrite=*/0);
}

class CudaBackend : public Backend {
public:
  explicit CudaBackend(const CudaRank &rank) {
    int devices = 0;
    check(cudaGetDeviceCount(&devices), "--device cuda needs a usable GPU");
    if (devices == 0)
      throw std::runtime_error("--device cuda needs a GPU, found none");
    check(cudaSetDevice(rank.localRank % devices), "cudaSetDevice");
    separateRanksSharingGpus(rank.localRank, rank.localRanks, devices);
    for (Link *link : {&toLater, &toEarlier}) {
      link->comm = connectNccl(rank.pipeline, "the pipeline's messages");
      check(cudaStreamCreateWithFlags(&link->stream, cudaStreamNonBlocking),
            "cudaStreamCreate");
    }
    channel =
        std::make_unique<NcclChannel>(rank.pipeline.rank(), toLater, toEarlier);
    if (rank.tensorParallel.worldSize() > 1)
      collectives = std::make_unique<NcclCollectives>(rank.tensorParallel,
                                                      rank.hostCollectives);
  }

  ~CudaBackend() override {
    collectives.reset();
    channel.reset();
    for (Link *link : {&toLater, &toEarlier}) {
      ncclCommDestroy(link->comm);
      cudaStreamDestroy(link->stream);
    }
  }

  StageTarget stageTarget() const override { return StageTarget::Cuda; }

  pp_tensor *place(pp_tensor *host, TensorPtr &copy) override {
    pp_tensor *device = nullptr;
    const int64_t *shape = pp_tensor_shape(host);
    if (pp_tensor_create_in(pp_cuda_tensor_allocator(), pp_tensor_dtype(host),
                            pp_tensor_rank(host), shape, &device) != PP_OK)
      throw std::runtime_error(std::string("cannot allocate GPU memory: ") +
                               pp_last_error());
    copy.reset(device);
    refresh(device, host);
    return device;
  }

  void refresh(pp_tensor *placed, pp_tensor *host) override {
    check(cudaMemcpy(pp_tensor_data(placed), pp_tensor_data(host),
                     pp_tensor_nbytes(host), cudaMemcpyHostToDevice),
          "copying to the GPU");
  }

  void fetch(pp_tensor *result, pp_tensor *host) override {
    check(cudaMemcpy(pp_tensor_data(host), pp_tensor_data(result),
                     pp_tensor_nbytes(host), cudaMemcpyDeviceToHost),
          "copying from the GPU");
  }

  void accumulate(pp_tensor *sum, pp_tensor *addend) override {
    if (pp_cuda_accumulate_f32(sum, addend) != PP_OK)
      throw std::runtime_error(pp_last_error());
  }

  void zero(pp_tensor *placed) override {
    check(
        cudaMemsetAsync(pp_tensor_data(placed), 0, pp_tensor_nbytes(placed), 0),
        "cudaMemsetAsync");
  }

  void configure(pp_frame &frame, int64_t, int64_t) override {
    frame.channel = channel.get();
    frame.allocator = pp_cuda_tensor_allocator();
  }

  void finishStep() override {
    channel->finish();
    synchronize();
  }

  void synchronize() override {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

  CollectiveGroup *tensorCollectives() override { return collectives.get(); }

private:
  Link toLater, toEarlier;
  std::unique_ptr<NcclChannel> channel;
  /// Over the tensor-parallel group; null without one (tp 1).
  std::unique_ptr<NcclCollectives> collectives;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(const CudaRank &rank) {
  return std::make_unique<CudaBackend>(rank);
}

} // namespace pp::runtime
