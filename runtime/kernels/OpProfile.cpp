//===- OpProfile.cpp - time per op kind in the stage functions ------------===//

#include "runtime/kernels/OpProfile.h"

namespace pp::runtime {

void OpProfile::begin(const char *kind, pp_profile_category category) {
  if (synchronize)
    synchronize();
  current = kind;
  // A category the runtime does not know (a newer compiler's) is other.
  currentCategory = category >= 0 && category < PP_PROFILE_CATEGORIES
                        ? category
                        : PP_PROFILE_OTHER;
  started = std::chrono::steady_clock::now();
}

void OpProfile::end() {
  if (!current)
    return;
  if (synchronize)
    synchronize();
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  Totals &totals = byLiteral[current];
  ++totals.calls;
  totals.seconds += seconds;
  categorySeconds[currentCategory] += seconds;
  current = nullptr;
}

std::map<std::string, OpProfile::Totals> OpProfile::byKind() const {
  // Stage functions of several libraries may hold equal literals.
  std::map<std::string, Totals> result;
  for (const auto &[kind, totals] : byLiteral) {
    Totals &merged = result[kind];
    merged.calls += totals.calls;
    merged.seconds += totals.seconds;
  }
  return result;
}

} // namespace pp::runtime
