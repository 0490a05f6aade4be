//===- OpProfile.cpp - time per op kind in the stage functions ------------===//

#include "runtime/kernels/OpProfile.h"

namespace pp::runtime {

void OpProfile::begin(const char *kind) {
  if (synchronize)
    synchronize();
  current = kind;
  started = std::chrono::steady_clock::now();
}

void OpProfile::end() {
  if (!current)
    return;
  if (synchronize)
    synchronize();
  Totals &totals = byLiteral[current];
  ++totals.calls;
  totals.seconds += std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - started)
                        .count();
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
