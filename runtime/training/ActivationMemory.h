//===- ActivationMemory.h - what a stage holds ------------------*- C++ -*-===//
//
// A stage keeps each microbatch's saved values (the forward's `saved`
// results) from its forward until its backward; the schedule decides how
// many microbatches are in flight at once. Its stage functions' scratch
// tensors live in their arenas (MemoryArena.h), which persist across calls.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_ACTIVATIONMEMORY_H
#define PP_RUNTIME_TRAINING_ACTIVATIONMEMORY_H

#include "runtime/package/Package.h"
#include "runtime/schedules/Schedule.h"

#include <cstdint>
#include <optional>

namespace pp::runtime {

/// A stage's activation memory in a training step.
struct StageMemory {
  /// Bytes of the saved results of the stage's forward, per microbatch.
  uint64_t savedBytesPerMicrobatch = 0;
  /// The most microbatches whose forward ran and whose backward (its
  /// weight half, when split) did not, less those offloaded, at any point
  /// of the stage's schedule (without offload 1F1B: min(m, stages -
  /// stage); GPipe: m).
  int64_t inFlightMicrobatches = 0;
  /// The most microbatches offloaded to host memory at once
  /// (offloadedMicrobatches): for several stages of a rank, the most of
  /// theirs (mostOffloadedBytes gives the rank's bytes).
  int64_t offloadedMicrobatches = 0;
  /// The saved values held at the peak: savedBytesPerMicrobatch x
  /// inFlightMicrobatches for a stage; for several stages of a rank, the
  /// sum of theirs.
  uint64_t heldBytes = 0;
  /// The buffer the arenas of the stage's functions share (they run one at
  /// a time): the largest of them; for several stages of a rank, the
  /// largest of theirs.
  uint64_t arenaBytes = 0;
  /// pp-partition's estimate of savedBytesPerMicrobatch, where the
  /// manifest has one.
  std::optional<double> estimatedSavedBytes;

  /// The saved values the stage (or stages) hold at the peak.
  uint64_t activationBytes() const { return heldBytes; }

  /// Adds another stage of the same rank.
  StageMemory &operator+=(const StageMemory &other);
};

/// What a stage's training functions hold between them per microbatch, by
/// the shapes the manifest gives (not an estimate).
struct SavedBytes {
  /// The values its forward saves for the backward.
  uint64_t forward = 0;
  /// Of those, the ones a split backward's input half takes last (it frees
  /// them); 0 for an unsplit backward.
  uint64_t freedByInputHalf = 0;
  /// The values the input half saves for the weight half.
  uint64_t inputToWeight = 0;
};

/// The SavedBytes of `stage` of `package`.
SavedBytes savedBytesOf(const Package &package, int64_t stage);

/// The most bytes of saved values the stages of a rank of `package` hold
/// offloaded at once when it runs `rankActions` (its row of an action
/// table): over its stages together, at each point of the row.
uint64_t mostOffloadedBytes(const Package &package,
                            const std::vector<Action> &rankActions);

/// The activation memory of `stage` of `package` when its rank runs
/// `rankActions` (its row of the action table).
StageMemory stageMemory(const Package &package, int64_t stage,
                        const std::vector<Action> &rankActions);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_ACTIVATIONMEMORY_H
