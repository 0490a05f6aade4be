//===- CrossEntropyRows.cpp - cross-entropy over rows of logits -----------===//

#include "runtime/kernels/CrossEntropyRows.h"

namespace pp::runtime::cpu {

int64_t countedLabels(const std::vector<int64_t> &labels, int64_t ignoreIndex) {
  int64_t counted = 0;
  for (int64_t label : labels)
    counted += label != ignoreIndex;
  return counted;
}

pp_tensor *crossEntropyResult(pp_frame *frame,
                              const std::vector<double> &losses,
                              const int64_t *labels, int64_t ignoreIndex,
                              int reduction, pp_dtype dtype,
                              const Shape &rowShape) {
  int64_t rows = static_cast<int64_t>(losses.size());
  if (reduction == 2) {
    pp_tensor *result = newTensor(frame, dtype, rowShape);
    if (result)
      forFloatType(dtype, [&](auto element) {
        using T = decltype(element);
        fillElements(elementsOf<T>(result), rows,
                     [&](int64_t r) { return static_cast<float>(losses[r]); });
      });
    return result;
  }
  double sum = 0;
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r)
    if (labels[r] != ignoreIndex) {
      sum += losses[r];
      ++counted;
    }
  if (reduction == 0)
    sum = counted ? sum / counted : 0.0;
  return scalar(frame, sum, dtype);
}

} // namespace pp::runtime::cpu
