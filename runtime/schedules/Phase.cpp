//===- Phase.cpp - the phases of a stage's work ---------------------------===//

#include "runtime/schedules/Phase.h"

#include "runtime/core/EnumNames.h"

namespace pp::runtime {
namespace {

constexpr EnumNames<Phase, 5> kPhases = {
    {Phase::Forward, "forward"},
    {Phase::Backward, "backward"},
    {Phase::BackwardInput, "backward_input"},
    {Phase::BackwardWeight, "backward_weight"},
    {Phase::Eval, "eval"},
};

} // namespace

std::optional<Phase> parsePhase(const std::string &name) {
  return parseEnum(kPhases, name);
}

const char *phaseName(Phase phase) {
  return enumName(kPhases, phase, "unknown");
}

bool actionRuns(Phase action, Phase function) {
  return action == function ||
         (action == Phase::Backward && (function == Phase::BackwardInput ||
                                        function == Phase::BackwardWeight));
}

} // namespace pp::runtime
