//===- FlatParameters.h - a stage's trained parameters, flat ----*- C++ -*-===//
//
// A stage's trained parameters laid out one after another: their values in
// one contiguous buffer, their gradients in another of the same layout,
// both on the device where the stage runs.
// The trainer's parameter and gradient tensors view these buffers, the
// gradient reduction reads and writes them, and the optimizer steps them
// in one pass (ZeRO shares are contiguous ranges of them). The buffers
// can hand back the memory outside a range (ReleasableBuffer.h).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_FLATPARAMETERS_H
#define PP_RUNTIME_FLATPARAMETERS_H

#include "runtime/training/ReleasableBuffer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// One trained parameter's place in the flat buffers.
struct FlatParameter {
  std::string name;
  /// Its dimensions (for the weight-decay rule) and its element count.
  int64_t rank = 0, count = 0;
  /// Where its elements start in the flat buffers.
  int64_t offset = 0;
};

class FlatParameters {
public:
  /// Lays out `parameters` (their offsets are computed) one after another
  /// in the order given, with zero values and gradients on `queue`'s
  /// device. The buffers are padded to a multiple of `shares` elements, so
  /// that `shares` equal shares gather into them in place.
  FlatParameters(std::vector<FlatParameter> parameters, int64_t shares,
                 Queue &queue);

  /// The parameters in layout order.
  const std::vector<FlatParameter> &parameters() const { return laidOut; }
  /// The element count of all of them (without the padding).
  int64_t size() const { return elements; }
  float *values() { return valueBuffer->data(); }
  float *gradients() { return gradientBuffer->data(); }
  /// The parameter `name`; null when it is not laid out here.
  const FlatParameter *find(const std::string &name) const;

  /// Hands back the memory of the values (gradients) outside [begin, end),
  /// which read 0 until written again.
  void releaseValuesOutside(int64_t begin, int64_t end) {
    valueBuffer->releaseOutside(begin, end);
  }
  void releaseGradientsOutside(int64_t begin, int64_t end) {
    gradientBuffer->releaseOutside(begin, end);
  }
  /// The bytes of the values (gradients) in memory now.
  int64_t residentValueBytes() const { return valueBuffer->residentBytes(); }
  int64_t residentGradientBytes() const {
    return gradientBuffer->residentBytes();
  }

private:
  std::vector<FlatParameter> laidOut;
  int64_t elements = 0;
  std::unique_ptr<ReleasableBuffer> valueBuffer, gradientBuffer;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_FLATPARAMETERS_H
