//===- CudaBackend.cpp - stage functions on a GPU, messages over NCCL -----===//
//
// The backend runs on the device layer (runtime/cuda/CudaDevice.h): kernels
// run on the GPU's default queue (the compute stream), which also places
// and fetches tensors and runs the work on the training state
// (CudaStateKernels), whose collectives are NCCL's
// (NcclDeviceCollectives). A send waits for the kernels
// before it (an event), copies the tensor on a copy queue into a buffer the
// channel owns (so the generated code may free the tensor at once) and
// sends that buffer on the queue of its communicator; a receive is ordered
// after the tensor's allocation and the kernels after it wait for the
// receive. The communication queues are non-blocking streams, so kernels
// never wait for a peer implicitly.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/NcclCollectives.h"
#include "runtime/cuda/CudaStateKernels.h"
#include "runtime/cuda/NcclConnect.h"
#include "runtime/cuda/NcclDeviceCollectives.h"
#include "runtime/device/Buffer.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace pp::runtime {
namespace {

/// One NCCL communicator over the pipeline group with its own queue.
struct Link {
  ncclComm_t comm = nullptr;
  std::unique_ptr<Queue> queue;
};

class NcclChannel : public MessageChannel {
public:
  NcclChannel(int rank, Queue &compute, Link &toLater, Link &toEarlier)
      : rank(rank), compute(compute), toLater(toLater), toEarlier(toEarlier),
        copyQueue(compute.device().createQueue()) {}

  ~NcclChannel() override {
    try {
      finish();
    } catch (const std::exception &) {
      // The step that failed reported it; the channel goes all the same.
    }
  }

  void send(int64_t stage, const std::string &name,
            const pp_tensor &tensor) override {
    size_t bytes = pp_tensor_nbytes(&tensor);
    if (bytes == 0)
      return;
    Link &link = stage > rank ? toLater : toEarlier;
    Buffer &buffer = pending.emplace_back(Buffer::allocate(*copyQueue, bytes));
    Event &computed = newEvent(), &copied = newEvent();
    compute.record(computed);
    copyQueue->wait(computed);
    copyQueue->copy(buffer.data(),
                    pp_tensor_data(const_cast<pp_tensor *>(&tensor)), bytes);
    copyQueue->record(copied);
    // The generated code may free the tensor after this call: later
    // kernels (and the free) wait for the copy, which waits for no peer.
    compute.wait(copied);
    link.queue->wait(copied);
    check(ncclSend(buffer.data(), bytes, ncclChar, static_cast<int>(stage),
                   link.comm, streamOf(*link.queue)),
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
      Event &allocated = newEvent(), &received = newEvent();
      compute.record(allocated);
      link.queue->wait(allocated);
      check(ncclRecv(pp_tensor_data(&tensor), bytes, ncclChar,
                     static_cast<int>(stage), link.comm, streamOf(*link.queue)),
            "ncclRecv");
      link.queue->record(received);
      compute.wait(received);
    } catch (const std::exception &error) {
      return "receiving '" + name + "' from stage " + std::to_string(stage) +
             ": " + error.what();
    }
    return "";
  }

  /// Waits for every message and frees the send buffers.
  void finish() {
    for (Link *link : {&toLater, &toEarlier})
      link->queue->synchronize();
    copyQueue->synchronize();
    pending.clear();
    events.clear();
  }

private:
  Event &newEvent() {
    return *events.emplace_back(compute.device().createEvent());
  }

  int rank;
  Queue &compute;
  Link &toLater, &toEarlier;
  std::unique_ptr<Queue> copyQueue;
  /// The send buffers of the step's messages.
  std::vector<Buffer> pending;
  std::vector<std::unique_ptr<Event>> events;
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

/// The GPU of rank `rank`: its local rank modulo the visible devices.
Device &rankDevice(const CudaRank &rank) {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "--device cuda needs a usable GPU");
  if (devices == 0)
    throw std::runtime_error("--device cuda needs a GPU, found none");
  Device &device = cudaDevice(rank.localRank % devices);
  separateRanksSharingGpus(rank.localRank, rank.localRanks, devices);
  return device;
}

class CudaBackend : public Backend {
public:
  explicit CudaBackend(const CudaRank &rank)
      : device(rankDevice(rank)), queue(device.defaultQueue()) {
    for (Link *link : {&toLater, &toEarlier}) {
      link->comm = connectNccl(rank.pipeline, "the pipeline's messages");
      link->queue = device.createQueue();
    }
    channel = std::make_unique<NcclChannel>(rank.pipeline.rank(), queue,
                                            toLater, toEarlier);
    if (rank.tensorParallel.worldSize() > 1)
      collectives = std::make_unique<NcclCollectives>(rank.tensorParallel,
                                                      rank.hostCollectives);
  }

  ~CudaBackend() override {
    collectives.reset();
    channel.reset();
    for (Link *link : {&toLater, &toEarlier}) {
      ncclCommDestroy(link->comm);
      link->queue.reset();
    }
  }

  StageTarget stageTarget() const override { return StageTarget::Cuda; }

  pp_tensor *place(pp_tensor *host, TensorPtr &copy) override {
    pp_tensor *placed = nullptr;
    if (pp_tensor_create_in(&queue.tensorAllocator(), pp_tensor_dtype(host),
                            pp_tensor_rank(host), pp_tensor_shape(host),
                            &placed) != PP_OK)
      throw std::runtime_error("cannot allocate memory on " + device.name() +
                               ": " + pp_last_error());
    copy.reset(placed);
    refresh(placed, host);
    return placed;
  }

  void refresh(pp_tensor *placed, pp_tensor *host) override {
    if (placed == host)
      return;
    queue.copy(pp_tensor_data(placed), pp_tensor_data(host),
               pp_tensor_nbytes(host));
    copiedBytes += static_cast<int64_t>(pp_tensor_nbytes(host));
  }

  void fetch(pp_tensor *result, pp_tensor *host) override {
    if (result == host)
      return;
    queue.copy(pp_tensor_data(host), pp_tensor_data(result),
               pp_tensor_nbytes(host));
    queue.synchronize();
    copiedBytes += static_cast<int64_t>(pp_tensor_nbytes(host));
  }

  int64_t hostDeviceBytes() const override { return copiedBytes; }

  StateDevice stateDevice() override { return {queue, cudaStateKernels()}; }

  std::unique_ptr<DeviceCollectives>
  connectCollectives(Communicator &ranks,
                     const std::string &purpose) override {
    return std::make_unique<NcclDeviceCollectives>(ranks, purpose);
  }

  void configure(pp_frame &frame, int64_t, int64_t) override {
    frame.channel = channel.get();
    frame.queue = &queue;
  }

  void finishStep() override {
    channel->finish();
    synchronize();
  }

  void synchronize() override { queue.synchronize(); }

  CollectiveGroup *tensorCollectives() override { return collectives.get(); }

private:
  Device &device;
  /// Where the stage functions run: the GPU's default queue.
  Queue &queue;
  Link toLater, toEarlier;
  std::unique_ptr<NcclChannel> channel;
  /// Over the tensor-parallel group; null without one (tp 1).
  std::unique_ptr<NcclCollectives> collectives;
  /// Bytes refresh and fetch copied between the host and the GPU.
  int64_t copiedBytes = 0;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(const CudaRank &rank) {
  return std::make_unique<CudaBackend>(rank);
}

} // namespace pp::runtime
