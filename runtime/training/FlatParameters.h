//===- FlatParameters.h - a stage's trained parameters, flat ----*- C++ -*-===//
//
// A stage's trained parameters laid out one after another: their values in
// one contiguous buffer, their gradients in another of the same layout.
// The trainer's parameter and gradient tensors view these buffers, the
// gradient reduction reads and writes them, and the optimizer steps them
// in one pass (ZeRO-1 shares are contiguous ranges of them).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_FLATPARAMETERS_H
#define PP_RUNTIME_FLATPARAMETERS_H

#include <cstdint>
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
  /// in the order given, with zero values and gradients.
  explicit FlatParameters(std::vector<FlatParameter> parameters);

  /// The parameters in layout order.
  const std::vector<FlatParameter> &parameters() const { return laidOut; }
  /// The element count of all of them.
  int64_t size() const { return static_cast<int64_t>(valueBuffer.size()); }
  float *values() { return valueBuffer.data(); }
  float *gradients() { return gradientBuffer.data(); }
  /// The parameter `name`; null when it is not laid out here.
  const FlatParameter *find(const std::string &name) const;

private:
  std::vector<FlatParameter> laidOut;
  std::vector<float> valueBuffer, gradientBuffer;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_FLATPARAMETERS_H
