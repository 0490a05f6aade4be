//===- StepBreakdown.cpp - where a rank's training steps go ---------------===//

#include "runtime/training/StepBreakdown.h"

#include "runtime/core/EnumNames.h"

namespace pp::runtime {
namespace {

constexpr EnumNames<StepPart, kStepParts> kPartNames = {
    {StepPart::Gemm, "gemm"},
    {StepPart::Attention, "attention"},
    {StepPart::OtherKernels, "other_kernels"},
    {StepPart::Communication, "communication"},
    {StepPart::Waiting, "waiting"},
    {StepPart::Optimizer, "optimizer"},
    {StepPart::Rest, "rest"},
};

} // namespace

const char *stepPartName(StepPart part) {
  return enumName(kPartNames, part, "rest");
}

PartSeconds measuredParts(const OpProfile::CategorySeconds &categories,
                          const ActionSeconds &actions,
                          double reduceWaitSeconds) {
  PartSeconds parts{};
  auto at = [&](StepPart part) -> double & {
    return parts[static_cast<size_t>(part)];
  };
  at(StepPart::Gemm) = categories[PP_PROFILE_GEMM];
  at(StepPart::Attention) = categories[PP_PROFILE_ATTENTION];
  at(StepPart::OtherKernels) = categories[PP_PROFILE_OTHER];
  at(StepPart::Communication) =
      categories[PP_PROFILE_COMMUNICATION] + actions.communication;
  at(StepPart::Waiting) = actions.waiting + reduceWaitSeconds;
  at(StepPart::Optimizer) = actions.optimizer - reduceWaitSeconds;
  return parts;
}

void StepBreakdown::addStep(double seconds, const PartSeconds &before,
                            const PartSeconds &after) {
  steps += seconds;
  for (size_t p = 0; p < kStepParts; ++p)
    if (p != static_cast<size_t>(StepPart::Rest))
      measured[p] += after[p] - before[p];
}

PartSeconds StepBreakdown::seconds() const {
  PartSeconds parts = measured;
  double rest = steps;
  for (size_t p = 0; p < kStepParts; ++p)
    if (p != static_cast<size_t>(StepPart::Rest))
      rest -= parts[p];
  parts[static_cast<size_t>(StepPart::Rest)] = rest;
  return parts;
}

nlohmann::json StepBreakdown::toJson() const {
  PartSeconds parts = seconds();
  nlohmann::json bySeconds = nlohmann::json::object();
  nlohmann::json byShare = nlohmann::json::object();
  for (size_t p = 0; p < kStepParts; ++p) {
    const char *name = stepPartName(static_cast<StepPart>(p));
    bySeconds[name] = parts[p];
    byShare[name] = steps > 0 ? parts[p] / steps : 0.0;
  }
  return {{"step_seconds", steps}, {"seconds", bySeconds}, {"share", byShare}};
}

} // namespace pp::runtime
