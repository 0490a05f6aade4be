//===- Backend.h - where a rank's stage functions run -----------*- C++ -*-===//
//
// The trainer keeps parameters, optimizer state and metrics on the host. A
// backend says where the stage functions run and how their messages
// travel: host memory and the pipeline communicator (CpuBackend), or a GPU
// and NCCL (runtime/cuda/CudaBackend). Both work through the device layer
// (runtime/device): a device's queue runs the stage functions (configure
// gives it to the frame) and places, fetches, accumulates and zeroes.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_BACKEND_H
#define PP_RUNTIME_BACKEND_H

#include "runtime/communication/Communicator.h"
#include "runtime/kernels/Frame.h"
#include "runtime/package/StageCompiler.h"

#include <memory>
#include <string>

namespace pp::runtime {

/// Owns a runtime tensor (host or device).
struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using TensorPtr = std::unique_ptr<pp_tensor, TensorDeleter>;

class Backend {
public:
  virtual ~Backend() = default;

  /// What this backend's stage functions are compiled for.
  virtual StageTarget stageTarget() const = 0;
  /// Where the stage functions see host tensor `host`: `host` itself on the
  /// CPU; on a GPU a device copy, returned and owned by `copy`.
  virtual pp_tensor *place(pp_tensor *host, TensorPtr &copy) = 0;
  /// Copies `host` into `placed` again, after `host` changed (the optimizer
  /// step); nothing to do where they are the same tensor.
  virtual void refresh(pp_tensor *placed, pp_tensor *host) = 0;
  /// Copies a stage function's result into the host tensor `host`.
  virtual void fetch(pp_tensor *result, pp_tensor *host) = 0;
  /// `sum += addend`, element by element, where the stage functions run.
  virtual void accumulate(pp_tensor *sum, pp_tensor *addend) = 0;
  /// Sets all bytes of a placed tensor to zero.
  virtual void zero(pp_tensor *placed) = 0;
  /// Prepares a frame for the stage functions of microbatch `microbatch` of
  /// step `step`: its messages and where it allocates.
  virtual void configure(pp_frame &frame, int64_t step, int64_t microbatch) = 0;
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
  /// Bytes place, refresh and fetch have copied between the host and the
  /// device so far (0 where the stage functions run on the host): what a
  /// step moves across, which device-resident state brings down to the
  /// data and the step's scalars.
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
