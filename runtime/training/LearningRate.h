//===- LearningRate.h - learning-rate schedules -----------------*- C++ -*-===//
//
// The learning rate of each training step: a linear warmup, then constant
// or a cosine or linear decay to a floor. A step's rate is a pure function
// of the step number and the schedule, so a resumed run continues exactly.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_LEARNINGRATE_H
#define PP_RUNTIME_LEARNINGRATE_H

#include <cstdint>
#include <optional>
#include <string>

namespace pp::runtime {

/// What the rate does after the warmup.
enum class LearningRateDecay { Constant, Cosine, Linear };

/// "constant", "cosine" or "linear".
std::optional<LearningRateDecay>
parseLearningRateDecay(const std::string &name);
/// The flag's spelling of `decay`.
const char *learningRateDecayName(LearningRateDecay decay);

struct LearningRateSchedule {
  /// The rate after the warmup (--lr).
  double peak = 0.01;
  LearningRateDecay decay = LearningRateDecay::Constant;
  /// Steps 1..W ramp linearly: step t runs at peak * t / W (Megatron's
  /// warmup; step W at the peak, no step at 0).
  int64_t warmupSteps = 0;
  /// Cosine and linear: the step that reaches `minimum`; the decay runs
  /// from step W (peak) to it, and later steps stay at `minimum` (with W
  /// equal to it, step W runs at the peak and later ones at `minimum`).
  int64_t decaySteps = 1;
  /// Cosine and linear: the rate at step `decaySteps` and after.
  double minimum = 0;
};

/// The rate of training step `step` (1 for the first) under `schedule`,
/// rounded once to the float the optimizer computes with.
float learningRateAt(const LearningRateSchedule &schedule, int64_t step);

/// Why `schedule` is not valid ("" when it is): the peak and minimum are
/// finite, 0 <= minimum <= peak, 0 <= warmupSteps <= decaySteps and
/// decaySteps >= 1. Messages name pp-run's flags.
std::string learningRateScheduleProblem(const LearningRateSchedule &schedule);

} // namespace pp::runtime

#endif // PP_RUNTIME_LEARNINGRATE_H
