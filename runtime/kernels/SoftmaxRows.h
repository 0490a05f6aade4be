//===- SoftmaxRows.h - the normalizer of softmax over a row ----*- C++ -*-===//
//
// softmax, log_softmax and cross-entropy (and their gradients) normalize a
// row of logits by its maximum and the sum of its exponentials. The
// exponentials are f32 (math::exp, within 1 ulp) and their sum double, added
// in an order fixed by the row's length alone, so that the loops vectorize
// and every run, stage count and thread count gives the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_SOFTMAXROWS_H
#define PP_RUNTIME_KERNELS_SOFTMAXROWS_H

#include <cstdint>
#include <type_traits>
#include <vector>

namespace pp::runtime::cpu {

/// A row's softmax normalizer: softmax[c] = exps[c] * (1 / total), in
/// double (a multiplication: a division per element made softmax 1.5x
/// slower), rounded once.
struct SoftmaxRow {
  /// The row's largest logit (NaNs left out: a NaN logit makes the total
  /// NaN).
  float max;
  /// The sum of the exponentials, in double.
  double total;
  /// e^(logit[c] - max) for each c, in f32.
  const float *exps;
};

/// Fills `exps[c]` = e^(logits[c] - max) for c in [0, classes) and returns
/// the SoftmaxRow, the sum added as LaneSums.h says.
SoftmaxRow softmaxExps(const float *logits, int64_t classes, float *exps);

/// softmax of `rows` rows of `classes` logits into `out`.
void softmaxRows(const float *logits, int64_t rows, int64_t classes,
                 float *out);

/// The gradient of cross-entropy over one row, for the normalizer `row` of
/// its logits, its `label` and the loss gradient's `scale`: (softmax[c] -
/// [c == label]) * scale in double, rounded once.
void crossEntropyGradRow(const SoftmaxRow &row, int64_t classes, int64_t label,
                         double scale, float *out);

/// The SoftmaxRow of `classes` logits `stride` apart read through `row` (a
/// FloatsIn of any float type); its exps live in a buffer of the calling
/// thread until that thread's next call.
template <typename Floats>
SoftmaxRow softmaxRow(Floats row, int64_t classes, int64_t stride = 1) {
  thread_local std::vector<float> logits, exps;
  exps.resize(classes);
  if constexpr (std::is_same_v<Floats, const float *>)
    if (stride == 1)
      return softmaxExps(row, classes, exps.data());
  logits.resize(classes);
  for (int64_t c = 0; c < classes; ++c)
    logits[c] = row[c * stride];
  return softmaxExps(logits.data(), classes, exps.data());
}

} // namespace pp::runtime::cpu

#endif // PP_RUNTIME_KERNELS_SOFTMAXROWS_H
