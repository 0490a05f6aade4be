//===- ActivationOffload.h - saved values held outside ----------*- C++ -*-===//
//
// What a rank's OffloadActivations and ReloadActivations actions do: an
// offload moves a microbatch's saved values out of the stage functions'
// memory into host memory, a reload starts moving them back, and the
// backward takes them once they are there. The copies run on a queue of
// their own (made at the first offload), ordered against the stage
// functions' queue by events. On a GPU the host memory is pageable so far,
// which makes a copy out wait on the host for the compute queued before it
// (a pinned pool would let it overlap). On the CPU the stage functions'
// memory is host memory: the values move to other host memory, counted
// apart, and the process holds as much as before; the CPU path exercises
// the schedule, the ordering and the accounting.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_ACTIVATIONOFFLOAD_H
#define PP_RUNTIME_TRAINING_ACTIVATIONOFFLOAD_H

#include "runtime/device/Queue.h"
#include "runtime/training/Backend.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pp::runtime {

/// A microbatch's saved values by name.
using SavedValues = std::map<std::string, TensorPtr>;

class ActivationOffload {
public:
  /// Offloads the values of the stage functions that run on `compute`.
  explicit ActivationOffload(Queue &compute);
  ~ActivationOffload();

  /// Moves `values`, the saved values of microbatch `microbatch` of stage
  /// `stage` (where the stage functions run), into host memory once the
  /// work queued on the stage functions' queue so far is done; `values` is
  /// empty after. Throws std::runtime_error when they are offloaded already
  /// or host memory runs out.
  void offload(int64_t stage, int64_t microbatch, SavedValues &values);
  /// Starts moving the values offloaded for (`stage`, `microbatch`) back to
  /// where the stage functions run. Throws when none are offloaded.
  void reload(int64_t stage, int64_t microbatch);
  /// Hands the reloaded values of (`stage`, `microbatch`) to `values`,
  /// ordering the stage functions' work queued from now on after their
  /// copies; nothing when none were offloaded. Throws when they were
  /// offloaded and not reloaded.
  void take(int64_t stage, int64_t microbatch, SavedValues &values);

  /// Bytes of the values this holds where the stage functions run: those
  /// reloaded and not yet taken, and those whose copy out has not ended.
  int64_t residentBytes() const;
  /// Bytes of saved values in host memory now, and the most at once so far.
  int64_t heldBytes() const { return held; }
  int64_t mostHeldBytes() const { return mostHeld; }
  /// Bytes copied out and back so far.
  int64_t copiedBytes() const { return copied; }

private:
  /// The values of one offloaded microbatch.
  struct Offloaded {
    /// Host copies while offloaded; the values where the stage functions
    /// run once reloaded, valid after `copiedBack`.
    SavedValues host, back;
    std::unique_ptr<Event> copiedBack;
    int64_t bytes = 0;
  };

  /// Makes the copy queue's work from now on wait for the stage functions'
  /// work queued so far.
  void copiesAfterCompute();
  /// Frees the offloaded values whose copy out has ended.
  void freeCopiedOut();

  Queue &compute;
  std::unique_ptr<Queue> copies;
  std::unique_ptr<Event> computeMark;
  /// By (stage, microbatch).
  std::map<std::pair<int64_t, int64_t>, Offloaded> offloaded;
  /// Values copied out whose memory the copy may still read, each with the
  /// event after its copy.
  std::vector<std::pair<SavedValues, std::unique_ptr<Event>>> copyingOut;
  int64_t held = 0, mostHeld = 0, copied = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_ACTIVATIONOFFLOAD_H
