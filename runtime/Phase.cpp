//===- Phase.cpp - the phases of a stage's work ---------------------------===//

#include "runtime/Phase.h"

#include <utility>

namespace pp::runtime {
namespace {

constexpr std::pair<Phase, const char *> kPhases[] = {
    {Phase::Forward, "forward"},
    {Phase::Backward, "backward"},
    {Phase::BackwardInput, "backward_input"},
    {Phase::BackwardWeight, "backward_weight"},
};

} // namespace

std::optional<Phase> parsePhase(const std::string &name) {
  for (auto [phase, spelling] : kPhases)
    if (name == spelling)
      return phase;
  return std::nullopt;
}

const char *phaseName(Phase phase) {
  for (auto [candidate, spelling] : kPhases)
    if (candidate == phase)
      return spelling;
  return "unknown";
}

bool actionRuns(Phase action, Phase function) {
  return action == function ||
         (action == Phase::Backward && (function == Phase::BackwardInput ||
                                        function == Phase::BackwardWeight));
}

} // namespace pp::runtime
