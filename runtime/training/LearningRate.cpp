//===- LearningRate.cpp - learning-rate schedules -------------------------===//

#include "runtime/training/LearningRate.h"

#include "runtime/core/EnumNames.h"

#include <cmath>
#include <sstream>

namespace pp::runtime {

namespace {

constexpr EnumNames<LearningRateDecay, 3> kDecays = {
    {LearningRateDecay::Constant, "constant"},
    {LearningRateDecay::Cosine, "cosine"},
    {LearningRateDecay::Linear, "linear"},
};

} // namespace

std::optional<LearningRateDecay>
parseLearningRateDecay(const std::string &name) {
  return parseEnum(kDecays, name);
}

const char *learningRateDecayName(LearningRateDecay decay) {
  return enumName(kDecays, decay, "unknown");
}

float learningRateAt(const LearningRateSchedule &schedule, int64_t step) {
  const double peak = schedule.peak;
  int64_t warmup = schedule.warmupSteps;
  if (step < warmup)
    return static_cast<float>(peak * static_cast<double>(step) /
                              static_cast<double>(warmup));
  if (schedule.decay == LearningRateDecay::Constant || step == warmup)
    return static_cast<float>(peak);
  if (step >= schedule.decaySteps)
    return static_cast<float>(schedule.minimum);
  // 0 at step W, 1 at step decaySteps.
  double progress = static_cast<double>(step - warmup) /
                    static_cast<double>(schedule.decaySteps - warmup);
  double remaining = schedule.decay == LearningRateDecay::Cosine
                         ? 0.5 * (1.0 + std::cos(M_PI * progress))
                         : 1.0 - progress;
  return static_cast<float>(schedule.minimum +
                            (peak - schedule.minimum) * remaining);
}

std::string learningRateScheduleProblem(const LearningRateSchedule &schedule) {
  auto show = [](double value) {
    std::ostringstream text;
    text << value;
    return text.str();
  };
  auto finiteFloat = [](double value) {
    return value >= 0 && std::isfinite(static_cast<float>(value));
  };
  if (!finiteFloat(schedule.peak))
    return "--lr must be a number in [0, 3.4e38], got " + show(schedule.peak);
  if (!finiteFloat(schedule.minimum) || schedule.minimum > schedule.peak)
    return "--min-lr must be a number in [0, --lr = " + show(schedule.peak) +
           "], got " + show(schedule.minimum);
  if (schedule.decaySteps < 1)
    return "--decay-steps must be at least 1, got " +
           std::to_string(schedule.decaySteps);
  if (schedule.warmupSteps < 0 || schedule.warmupSteps > schedule.decaySteps)
    return "--warmup-steps must be in [0, " +
           std::to_string(schedule.decaySteps) + "] (" +
           (schedule.decay == LearningRateDecay::Constant
                ? "--steps"
                : "--decay-steps, default --steps") +
           "), got " + std::to_string(schedule.warmupSteps);
  return "";
}

} // namespace pp::runtime
