//===- CounterRng.h - random bits as a pure function of counters -*- C++ -*-===//
//
// A counter-based generator: the bits drawn for a tuple of counters (a
// seed, a step, a sample index, ...) depend on that tuple alone, never on
// what was drawn before, so any rank, stage or GPU thread that knows the
// tuple draws the same bits. Synthetic data and dropout masks draw from it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COUNTERRNG_H
#define PP_RUNTIME_COUNTERRNG_H

#include "runtime/core/HostDevice.h"

#include <cstdint>

namespace pp::runtime {

/// A well-mixed 64-bit hash of `value` (SplitMix64's finalizer).
PP_HOST_DEVICE inline uint64_t mix64(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

/// The stream of `counter` under `stream`: chaining it keys bits by a
/// tuple, `counterStream(counterStream(mix64(seed), step), sample)`.
PP_HOST_DEVICE inline uint64_t counterStream(uint64_t stream,
                                             uint64_t counter) {
  return mix64(stream ^ mix64(counter));
}

/// A double uniform in [0, 1) from the top 53 of `bits`.
PP_HOST_DEVICE inline double unitInterval(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

} // namespace pp::runtime

#endif // PP_RUNTIME_COUNTERRNG_H
