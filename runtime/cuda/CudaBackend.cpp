//===- CudaBackend.cpp - stage functions on a GPU, messages over NCCL -----===//
//
// The backend runs on the device layer (runtime/cuda/CudaDevice.h): kernels
// run on the GPU's default queue (the compute stream), which also places
// and fetches tensors and runs the work on the training state
// (CudaStateKernels), whose collectives are NCCL's (NcclCollectives).
//
// Pipeline messages. The trainer's StageRouter keeps the messages between
// two stages of this rank in memory and addresses the others to the rank
// of their stage, so with virtual stages (interleaved-1f1b, zb-v) a rank
// sends to any rank of the pipeline group, not only to its neighbours, in
// both directions. The messages between ranks form streams
// (crossRankStreams): those of one class (forward and eval, or backward)
// from one stage to one stage on another rank. Every stream has a link: a
// two-rank NCCL communicator that carries only that stream, with a queue
// (a non-blocking stream) of its own on each side, the sender's sends on
// one and the receiver's receives on the other. A send waits for the
// kernels before it (an event), copies the tensor on a copy queue into a
// buffer the channel owns (so the generated code may free the tensor at
// once) and sends that buffer on its link's queue; a receive is ordered
// after the tensor's allocation and the kernels after it wait for the
// receive.
//
// Matching. NCCL's point-to-point calls carry no tag: on a communicator
// the calls run in the order they are issued and the k-th receive takes
// the k-th send. A link carries one stream, so the k-th message of a
// stream meets the stream's k-th receive; the trainer proves before the
// first step that every table takes each stream's messages in the order
// they are sent (messageOrderProblem; the built-in schedules run a stage's
// actions of a class in microbatch order, which keeps it). One link per
// pair of ranks would not do: interleaved-1f1b and zb-v take a pair's
// forward and backward messages in another order than they are sent.
//
// No deadlock. checkSchedule proves that the rows finish when sends never
// block and receives wait for their sender. NCCL's calls block their
// stream until the peer's matching call runs, but here a blocked send
// holds up only the later sends of its stream and a blocked receive only
// the later receives of its stream, which wait for the same peer anyway.
// So the receive of message X, the k-th of its stream from A to B,
// completes once (1) B's compute reached X's consumer (the allocation
// event) and B's receives of the stream's first k-1 messages completed,
// and (2) A's producer of X ran and A's sends of those k-1 messages
// completed. Their producers ran before X's on A (a rank sends in the
// order its producers ran) and their consumers come before X's on B. By
// induction over the order in which the host model (non-blocking sends)
// completes the compute actions, every receive completes. The
// communication queues are non-blocking streams, so kernels never wait
// for a peer implicitly. The argument assumes what NCCL's documentation
// warns about for communicators used concurrently: that the GPU runs the
// links' NCCL kernels (a point-to-point kernel takes few blocks), the data
// -parallel collectives' and the compute kernels side by side, and that
// no CUDA call synchronizes the device while one waits (the device layer
// allocates in stream order, cudaMallocFromPoolAsync, which does not).
// test/Device/run-gpu-checks.sh runs every schedule to check it on a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/NcclCollectives.h"
#include "runtime/cuda/CudaStateKernels.h"
#include "runtime/cuda/NcclConnect.h"
#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/device/Buffer.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

namespace pp::runtime {
namespace {

/// A stream's messages from one rank to another: a two-rank NCCL
/// communicator (NCCL rank 0 the sender, 1 the receiver) and this side's
/// queue for its calls.
struct Link {
  Link(int64_t peer, ncclComm_t comm, std::unique_ptr<Queue> queue)
      : peer(peer), comm(comm), queue(std::move(queue)) {}
  ~Link() {
    queue.reset(); // Waits for the link's calls.
    ncclCommDestroy(comm);
  }
  Link(const Link &) = delete;
  Link &operator=(const Link &) = delete;

  /// The other rank.
  int64_t peer;
  ncclComm_t comm;
  std::unique_ptr<Queue> queue;
};

/// The links of a rank's streams, found by the other rank and tensor
/// name.
class MessageLinks {
public:
  /// Connects every stream of `streams` (each pair's id travels over
  /// `pipeline`, which keeps the ranks in step: all take the streams in
  /// the same order, and only a stream's two ranks join its communicator);
  /// the queues are `device`'s. Every member of `pipeline` calls it.
  MessageLinks(Communicator &pipeline, Device &device,
               const std::vector<MessageStream> &streams)
      : rank(pipeline.rank()) {
    // Every rank sees the same streams: all refuse them alike, before any
    // of them waits for another.
    checkNamesUnique(streams);
    for (const MessageStream &stream : streams) {
      std::string purpose = "the messages of '" + stream.names.front() +
                            "' from pipeline rank " +
                            std::to_string(stream.fromRank) + " to rank " +
                            std::to_string(stream.toRank);
      ncclComm_t comm =
          connectNcclPair(pipeline, static_cast<int>(stream.fromRank),
                          static_cast<int>(stream.toRank), purpose);
      if (!comm)
        continue;
      bool sends = stream.fromRank == rank;
      Link &link = *links.emplace_back(std::make_unique<Link>(
          sends ? stream.toRank : stream.fromRank, comm,
          device.createQueue()));
      for (const std::string &name : stream.names)
        (sends ? sending : receiving)[{link.peer, name}] = &link;
    }
  }

  /// The link that carries tensor `name` to rank `peer`.
  Link &to(int64_t peer, const std::string &name) {
    return linkOf(sending, peer, name, "to");
  }
  /// The link that carries tensor `name` from rank `peer`.
  Link &from(int64_t peer, const std::string &name) {
    return linkOf(receiving, peer, name, "from");
  }

  /// Waits for every link's calls.
  void synchronize() {
    for (std::unique_ptr<Link> &link : links)
      link->queue->synchronize();
  }

private:
  /// Throws when a tensor name travels in two streams between the same
  /// ranks, which could not tell them apart.
  static void checkNamesUnique(const std::vector<MessageStream> &streams) {
    std::set<std::tuple<int64_t, int64_t, std::string>> seen;
    for (const MessageStream &stream : streams)
      for (const std::string &name : stream.names)
        if (!seen.insert({stream.fromRank, stream.toRank, name}).second)
          throw std::runtime_error(
              "'" + name + "' travels in two streams from pipeline rank " +
              std::to_string(stream.fromRank) + " to rank " +
              std::to_string(stream.toRank) +
              ": the package's message names must be unique");
  }

  Link &linkOf(std::map<std::pair<int64_t, std::string>, Link *> &byName,
               int64_t peer, const std::string &name, const char *direction) {
    auto it = byName.find({peer, name});
    if (it == byName.end())
      throw std::runtime_error(
          "pipeline rank " + std::to_string(rank) + " has no link for '" +
          name + "' " + direction + " rank " + std::to_string(peer) +
          ": the package's stages exchange no such message between these "
          "ranks");
    return *it->second;
  }

  int64_t rank;
  std::vector<std::unique_ptr<Link>> links;
  /// By the other rank and tensor name.
  std::map<std::pair<int64_t, std::string>, Link *> sending, receiving;
};

class NcclChannel : public MessageChannel {
public:
  NcclChannel(Communicator &pipeline, Queue &compute)
      : pipeline(pipeline), compute(compute),
        copyQueue(compute.device().createQueue()) {}

  /// Connects the links of `streams` (MessageLinks), replacing any before.
  void connect(const std::vector<MessageStream> &streams) {
    finish();
    links = std::make_unique<MessageLinks>(pipeline, compute.device(),
                                           streams);
  }

  ~NcclChannel() override {
    try {
      finish();
    } catch (const std::exception &) {
      // The step that failed reported it; the channel goes all the same.
    }
  }

  /// Sends `tensor` to rank `peer` (the StageRouter addresses by rank).
  void send(int64_t peer, const std::string &name,
            const pp_tensor &tensor) override {
    size_t bytes = pp_tensor_nbytes(&tensor);
    if (bytes == 0)
      return;
    Link &link = connected().to(peer, name);
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
    check(ncclSend(buffer.data(), bytes, ncclChar, /*peer=*/1, link.comm,
                   streamOf(*link.queue)),
          "sending '" + name + "' to rank " + std::to_string(peer));
  }

  /// Receives `tensor` from rank `peer`.
  std::string recv(int64_t peer, const std::string &name,
                   pp_tensor &tensor) override {
    size_t bytes = pp_tensor_nbytes(&tensor);
    if (bytes == 0)
      return "";
    try {
      Link &link = connected().from(peer, name);
      Event &allocated = newEvent(), &received = newEvent();
      compute.record(allocated);
      link.queue->wait(allocated);
      check(ncclRecv(pp_tensor_data(&tensor), bytes, ncclChar, /*peer=*/0,
                     link.comm, streamOf(*link.queue)),
            "ncclRecv");
      link.queue->record(received);
      compute.wait(received);
    } catch (const std::exception &error) {
      return "receiving '" + name + "' from rank " + std::to_string(peer) +
             ": " + error.what();
    }
    return "";
  }

  /// Waits for every message and frees the send buffers.
  void finish() {
    if (links)
      links->synchronize();
    copyQueue->synchronize();
    pending.clear();
    events.clear();
  }

private:
  Event &newEvent() {
    return *events.emplace_back(compute.device().createEvent());
  }

  MessageLinks &connected() {
    if (!links)
      throw std::runtime_error("the pipeline's messages are not connected "
                               "yet (Backend::connectMessages)");
    return *links;
  }

  Communicator &pipeline;
  Queue &compute;
  /// Null until connect.
  std::unique_ptr<MessageLinks> links;
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
      : device(rankDevice(rank)), queue(device.defaultQueue()),
        channel(std::make_unique<NcclChannel>(rank.pipeline, queue)) {
    if (rank.tensorParallel.worldSize() > 1)
      collectives = std::make_unique<NcclCollectives>(
          rank.tensorParallel, rank.hostCollectives,
          "the tensor-parallel group");
  }

  ~CudaBackend() override {
    collectives.reset();
    channel.reset();
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
  }

  TensorPtr convert(pp_tensor *input, pp_dtype to) override {
    pp_frame frame;
    configure(frame, 0, 0);
    return convertedBy(pp_cuda_cast, frame, input, to);
  }

  void fetch(pp_tensor *result, pp_tensor *host) override {
    if (result == host)
      return;
    queue.copy(pp_tensor_data(host), pp_tensor_data(result),
               pp_tensor_nbytes(host));
    queue.synchronize();
  }

  /// Every copy between the host and the GPU: the device counts them all
  /// (place, refresh and fetch, and the state's tables, scalars and
  /// checkpoints, which copy on its queues directly).
  int64_t hostDeviceBytes() const override {
    return device.hostCopiedBytes();
  }

  StateDevice stateDevice() override { return {queue, cudaStateKernels()}; }

  std::unique_ptr<CollectiveGroup>
  connectCollectives(Communicator &ranks,
                     const std::string &purpose) override {
    return std::make_unique<NcclCollectives>(ranks, purpose);
  }

  void configure(pp_frame &frame, int64_t, int64_t) override {
    frame.channel = channel.get();
    frame.queue = &queue;
  }

  bool pairsMessagesInOrder() const override { return true; }

  void connectMessages(const std::vector<MessageStream> &streams) override {
    channel->connect(streams);
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
  std::unique_ptr<NcclChannel> channel;
  /// Over the tensor-parallel group; null without one (tp 1).
  std::unique_ptr<NcclCollectives> collectives;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(const CudaRank &rank) {
  return std::make_unique<CudaBackend>(rank);
}

} // namespace pp::runtime
