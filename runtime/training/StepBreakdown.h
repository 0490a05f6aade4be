//===- StepBreakdown.h - where a rank's training steps go -------*- C++ -*-===//
//
// pp-run --profile's breakdown: one rank's training step time split into
// disjoint parts (GEMM, attention, other kernels, communication, waiting
// for peers, the optimizer, and the rest) that add up to the step.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_STEPBREAKDOWN_H
#define PP_RUNTIME_TRAINING_STEPBREAKDOWN_H

#include "runtime/kernels/OpProfile.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>

namespace pp::runtime {

/// The disjoint parts of a training step.
enum class StepPart {
  /// Matrix products outside attention (PP_PROFILE_GEMM brackets).
  Gemm,
  /// Attention's kernels, forward and backward (PP_PROFILE_ATTENTION).
  Attention,
  /// Every other bracketed kernel and fused loop (PP_PROFILE_OTHER).
  OtherKernels,
  /// Moving data: message and collective brackets, send actions, starting
  /// the data-parallel reduction.
  Communication,
  /// Blocked on peers: recv actions waiting for messages to arrive, ZeRO-3
  /// gathers, the data-parallel reduction after the backward.
  Waiting,
  /// The optimizer action but its wait for the reduction: gradient sums,
  /// the global norm and clipping, the update.
  Optimizer,
  /// What the others leave of the step (the trainer's bookkeeping).
  Rest,
};
constexpr size_t kStepParts = static_cast<size_t>(StepPart::Rest) + 1;

/// Seconds per StepPart.
using PartSeconds = std::array<double, kStepParts>;

/// The part's name in --profile's breakdown ("gemm", "other_kernels").
const char *stepPartName(StepPart part);

/// The seconds a rank's step executor spent in actions outside stage
/// functions, summed over the run (with --profile).
struct ActionSeconds {
  /// In recv actions and ZeRO-3 gather waits.
  double waiting = 0;
  /// In send actions and starting data-parallel reductions.
  double communication = 0;
  /// In optimizer actions.
  double optimizer = 0;
};

/// The parts measured so far (Rest 0), from the op profile's categories,
/// the executor's actions and `reduceWaitSeconds`, the time the optimizer
/// actions spent waiting for the data-parallel reduction
/// (ParameterStore::reduceWaitSeconds): waiting, not optimizer.
PartSeconds measuredParts(const OpProfile::CategorySeconds &categories,
                          const ActionSeconds &actions,
                          double reduceWaitSeconds);

/// One rank's training steps, summed over the run, and their parts.
class StepBreakdown {
public:
  /// Adds a step that took `seconds`, during which the parts measured so
  /// far (measuredParts) went from `before` to `after` (Rest is ignored).
  void addStep(double seconds, const PartSeconds &before,
               const PartSeconds &after);
  /// The steps' seconds.
  double stepSeconds() const { return steps; }
  /// Each part's seconds; Rest is what the others leave of the steps.
  PartSeconds seconds() const;
  /// `{"step_seconds": s, "seconds": {part: s}, "share": {part: fraction
  /// of the step}}`.
  nlohmann::json toJson() const;

private:
  double steps = 0;
  PartSeconds measured{};
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_STEPBREAKDOWN_H
