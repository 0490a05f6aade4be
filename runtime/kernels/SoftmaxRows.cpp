//===- SoftmaxRows.cpp - the normalizer of softmax over a row -------------===//

#include "runtime/kernels/SoftmaxRows.h"

#include "runtime/kernels/LaneSums.h"
#include "runtime/kernels/MathFormulas.h"
#include "runtime/kernels/ParallelChunks.h"

#include <array>
#include <limits>

namespace pp::runtime::cpu {

namespace {

/// softmaxExps, inlined into each clone below.
inline SoftmaxRow normalizeRow(const float *logits, int64_t classes,
                               float *exps) {
  // Independent lanes, so that the maximum vectorizes (the maximum is the
  // same in any order).
  constexpr int64_t kMaxLanes = 16;
  std::array<float, kMaxLanes> maxima;
  maxima.fill(-std::numeric_limits<float>::infinity());
  int64_t whole = classes - classes % kMaxLanes;
  for (int64_t c = 0; c < whole; c += kMaxLanes)
    for (int64_t l = 0; l < kMaxLanes; ++l)
      maxima[l] = logits[c + l] > maxima[l] ? logits[c + l] : maxima[l];
  for (int64_t c = whole; c < classes; ++c)
    maxima[c - whole] =
        logits[c] > maxima[c - whole] ? logits[c] : maxima[c - whole];
  float max = maxima[0];
  for (int64_t l = 1; l < kMaxLanes; ++l)
    max = maxima[l] > max ? maxima[l] : max;
  for (int64_t c = 0; c < classes; ++c)
    exps[c] = math::exp(logits[c] - max);
  double total = laneSum(classes, [&](int64_t c) { return exps[c]; });
  return {max, total, exps};
}

/// softmaxRows over the rows [begin, end).
PP_CPU_CLONES void softmaxRowRange(const float *logits, int64_t begin,
                                   int64_t end, int64_t classes, float *out) {
  for (int64_t r = begin; r < end; ++r) {
    float *to = out + r * classes;
    double inverse =
        1.0 / normalizeRow(logits + r * classes, classes, to).total;
    for (int64_t c = 0; c < classes; ++c)
      to[c] = static_cast<float>(to[c] * inverse);
  }
}

} // namespace

PP_CPU_CLONES SoftmaxRow softmaxExps(const float *logits, int64_t classes,
                                     float *exps) {
  return normalizeRow(logits, classes, exps);
}

void softmaxRows(const float *logits, int64_t rows, int64_t classes,
                 float *out) {
  forEachChunk(rows, classes, [&](int64_t begin, int64_t end) {
    softmaxRowRange(logits, begin, end, classes, out);
  });
}

PP_CPU_CLONES void crossEntropyGradRow(const SoftmaxRow &row, int64_t classes,
                                       int64_t label, double scale,
                                       float *out) {
  double inverse = 1.0 / row.total;
  for (int64_t c = 0; c < classes; ++c)
    out[c] = static_cast<float>(
        (row.exps[c] * inverse - (c == label ? 1.0 : 0.0)) * scale);
}

} // namespace pp::runtime::cpu
