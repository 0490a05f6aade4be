//===- Backend.h - where a rank's stage functions run -----------*- C++ -*-===//
//
// A backend says where the stage functions run and how their messages
// travel: host memory and the pipeline communicator (CpuBackend), or a GPU
// and NCCL (runtime/cuda/CudaBackend). Both work through the device layer
// (runtime/device): a device's queue runs the stage functions (configure
// gives it to the frame). The rank's training state lives on that device
// too: the parameter store's flat buffers, the optimizer's state and the
// step's loss, worked on by the backend's StateKernels and reduced over
// its CollectiveGroup; only the data, the step's scalars and what a
// checkpoint saves cross to the host.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_BACKEND_H
#define PP_RUNTIME_BACKEND_H

#include "runtime/communication/Communicator.h"
#include "runtime/communication/CollectiveGroup.h"
#include "runtime/kernels/Frame.h"
#include "runtime/package/StageCompiler.h"
#include "runtime/pp_kernels.h"
#include "runtime/training/StateKernels.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace pp::runtime {

/// Owns a runtime tensor (host or device).
struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using TensorPtr = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A target's cast kernel (pp_cpu_cast, pp_cuda_cast).
using CastKernel = pp_tensor *(*)(pp_frame *, pp_tensor *, int);

/// What `cast` makes of `input` as `to` in `frame` (a backend's), owned;
/// throws std::runtime_error with the kernel's error when it fails.
inline TensorPtr convertedBy(CastKernel cast, pp_frame &frame,
                             pp_tensor *input, pp_dtype to) {
  TensorPtr result(cast(&frame, input, to));
  if (!result || !frame.error.empty())
    throw std::runtime_error("cannot convert a parameter to its compute "
                             "type: " +
                             frame.error);
  return result;
}

/// The messages one stage's compute actions of a message class (forwards
/// and evals, or backwards) send to one stage on another rank: one
/// message of these tensors per microbatch, sent and taken in the order
/// the two stages' actions run (messageOrderProblem proves that a table
/// takes each stream's messages in the order they are sent).
struct MessageStream {
  int64_t fromRank = 0, toRank = 0;
  /// The names of its tensors (unique in a package).
  std::vector<std::string> names;
};

class Backend {
public:
  virtual ~Backend() = default;

  /// What this backend's stage functions are compiled for.
  virtual StageTarget stageTarget() const = 0;
  /// Where the stage functions see host tensor `host`: `host` itself on the
  /// CPU; on a GPU a device copy, returned and owned by `copy`.
  virtual pp_tensor *place(pp_tensor *host, TensorPtr &copy) = 0;
  /// Copies `host` into `placed` again, after `host` changed (a gradient
  /// summed on the host); nothing to do where they are the same tensor.
  virtual void refresh(pp_tensor *placed, pp_tensor *host) = 0;
  /// A new tensor where the stage functions run holding `input` (a tensor
  /// there) converted to `to` by the stage kernels' own cast (the bits an
  /// nn.cast in a stage function gives): a parameter's compute copy.
  virtual TensorPtr convert(pp_tensor *input, pp_dtype to) = 0;
  /// Copies a stage function's result (or any tensor where they run) into
  /// the host tensor `host`, and waits until it is there; nothing to do
  /// where they are the same tensor.
  virtual void fetch(pp_tensor *result, pp_tensor *host) = 0;
  /// Where the rank's training state lives and its work runs: the queue
  /// the stage functions run on and its device's kernels.
  virtual StateDevice stateDevice() = 0;
  /// Collectives on the stage functions' device memory over `ranks`, for
  /// `purpose` (in messages): over the communicator itself on the host; a
  /// GPU's NCCL communicator over the same ranks. Every member calls it.
  virtual std::unique_ptr<CollectiveGroup>
  connectCollectives(Communicator &ranks, const std::string &purpose) = 0;
  /// Prepares a frame for the stage functions of microbatch `microbatch` of
  /// step `step`: its messages and where it allocates.
  virtual void configure(pp_frame &frame, int64_t step, int64_t microbatch) = 0;
  /// Whether the transport pairs the messages of a stream in the order
  /// they are sent (NCCL's, which carry no name), so that a table must
  /// take them in that order (messageOrderProblem); the host's pairs them
  /// by name.
  virtual bool pairsMessagesInOrder() const { return false; }
  /// Connects the transport for `streams`, the pipeline's messages between
  /// ranks (crossRankStreams), before the first step. Every rank of the
  /// pipeline group calls it with the same streams. The host's transport
  /// needs no connection.
  virtual void connectMessages(const std::vector<MessageStream> & /*streams*/) {
  }
  /// Waits until every message of the step has been delivered.
  virtual void finishStep() = 0;
  /// Waits until the work queued where the stage functions run is done (a
  /// GPU's kernels), so that a profile times kernels rather than launches;
  /// nothing to wait for where kernels finish before they return.
  virtual void synchronize() {}
  /// Whether the kernels allocate through the frame (newTensor), so that a
  /// memory plan's arena can serve them; CUDA kernels allocate device
  /// memory themselves, in stream order.
  virtual bool servesMemoryPlans() const { return false; }
  /// Bytes copied between the host and the device so far, by place,
  /// refresh and fetch and by every other copy on the device's queues (0
  /// where the stage functions run on the host): in a step, the data the
  /// first and last stages read and the step's scalars.
  virtual int64_t hostDeviceBytes() const { return 0; }
  /// The group the stage functions' collectives run on when the backend
  /// has its own (a GPU's NCCL communicator over the tensor-parallel
  /// ranks); null where the trainer's host group serves.
  virtual CollectiveGroup *tensorCollectives() { return nullptr; }
};

/// Host memory, the CPU kernels (libstages.so) and messages over
/// `pipeline`, the rank's pipeline group (its ranks are the stages).
std::unique_ptr<Backend> createCpuBackend(Communicator &pipeline);

} // namespace pp::runtime

#endif // PP_RUNTIME_BACKEND_H
