//===- DropoutMask.h - which elements nn.dropout keeps ----------*- C++ -*-===//
//
// Shared by the CPU kernel and its CUDA twin, so that both drop the same
// elements. Element i of a tensor of `perSample` elements per sample
// (dimension 0) belongs to sample `firstSample + i / perSample`; its bits
// are counter-based (CounterRng.h), keyed by (seed, step, sample, key,
// index within the sample), so neither the stage count nor the schedule
// nor the microbatch split changes which elements drop.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_DROPOUTMASK_H
#define PP_RUNTIME_DROPOUTMASK_H

#include "runtime/core/CounterRng.h"
#include "runtime/kernels/Frame.h"

namespace pp::runtime {

struct DropoutMask {
  /// The stream of (seed, step, key).
  uint64_t stream;
  int64_t firstSample;
  int64_t perSample;
  double ratio;
  /// 1 / (1 - ratio), rounded to float once.
  float scale;

  /// Whether element `index` is kept.
  PP_HOST_DEVICE bool keeps(int64_t index) const {
    int64_t sample = firstSample + index / perSample;
    uint64_t bits =
        counterStream(counterStream(stream, static_cast<uint64_t>(sample)),
                      static_cast<uint64_t>(index % perSample));
    return unitInterval(bits) >= ratio;
  }

  /// Element `index` of the result for input value `value`.
  PP_HOST_DEVICE float apply(int64_t index, float value) const {
    return keeps(index) ? value * scale : 0.0f;
  }
};

/// The mask of nn.dropout `key` with `ratio` over a tensor of `shape` at
/// `position` (which must be training).
inline DropoutMask dropoutMask(const RunPosition &position, int64_t key,
                               double ratio, const Shape &shape) {
  int64_t count = numElements(shape);
  int64_t samples = shape.empty() ? 1 : shape[0];
  uint64_t stream = counterStream(
      counterStream(mix64(position.seed), static_cast<uint64_t>(position.step)),
      static_cast<uint64_t>(key));
  return {stream, position.firstSample,
          samples > 0 && count > 0 ? count / samples : 1, ratio,
          static_cast<float>(1.0 / (1.0 - ratio))};
}

} // namespace pp::runtime

#endif // PP_RUNTIME_DROPOUTMASK_H
