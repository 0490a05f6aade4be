//===- CrossEntropyRows.h - cross-entropy over rows of logits ---*- C++ -*-===//
//
// The host arithmetic of cross-entropy and its gradient over a range of rows
// of logits, shared by pp_cpu_cross_entropy(_grad), which run it over all of
// their logits, and pp_cpu_linear_cross_entropy(_grad), which run it over
// one chunk of rows at a time: a row's loss or gradient depends on that row
// alone, and the losses are added in row order at the end, so the chunks
// give the whole loss's bits.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_CROSSENTROPYROWS_H
#define PP_RUNTIME_KERNELS_CROSSENTROPYROWS_H

#include "runtime/kernels/CpuKernelLoops.h"
#include "runtime/kernels/SoftmaxRows.h"

#include <vector>

namespace pp::runtime::cpu {

/// losses[r] = -log_softmax(logits row r)[labels[r]] for each of `rows` rows
/// of `classes` logits (FloatsIn of any float type), on the thread pool;
/// rows labelled `ignoreIndex` are left alone.
template <typename Floats>
void crossEntropyLosses(Floats logits, int64_t rows, int64_t classes,
                        const int64_t *labels, int64_t ignoreIndex,
                        double *losses) {
  forEachChunk(rows, classes, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (labels[r] == ignoreIndex)
        continue;
      Floats row = logits + r * classes;
      SoftmaxRow normalizer = softmaxRow(row, classes);
      losses[r] = std::log(normalizer.total) + normalizer.max -
                  static_cast<double>(row[labels[r]]);
    }
  });
}

/// cross_entropy's result of `dtype` from each row's loss (`losses`, one per
/// label, ignored rows' skipped): the losses themselves shaped `rowShape`
/// for reduction none (2), else their sum in row order, divided by the
/// counted rows for mean (0). Null, the error in `frame`, on failure.
pp_tensor *crossEntropyResult(pp_frame *frame,
                              const std::vector<double> &losses,
                              const int64_t *labels, int64_t ignoreIndex,
                              int reduction, pp_dtype dtype,
                              const Shape &rowShape);

/// The number of `labels` that are not `ignoreIndex`.
int64_t countedLabels(const std::vector<int64_t> &labels, int64_t ignoreIndex);

/// cross_entropy_grad over `rows` rows of `classes` logits into `out` (which
/// may be `logits`: each row is read whole into its normalizer before it is
/// written), on the thread pool: (softmax - onehot(label)) times the loss
/// gradient (`grad[r]` for reduction none, else `grad[0]`, divided by
/// `counted` for mean), zero on ignored rows.
template <typename T>
void crossEntropyGradRows(FloatsIn<T> logits, FloatsIn<T> grad,
                          FloatsOut<T> out, int64_t rows, int64_t classes,
                          const int64_t *labels, int64_t ignoreIndex,
                          int reduction, int64_t counted) {
  forEachChunk(rows, classes, [&](int64_t begin, int64_t end) {
    // A row's gradient in f32 before its conversion to T.
    std::vector<float> rowGrad(std::is_same_v<T, float> ? 0 : classes);
    for (int64_t r = begin; r < end; ++r) {
      if (labels[r] == ignoreIndex) {
        for (int64_t c = 0; c < classes; ++c)
          out[r * classes + c] = 0.0f;
        continue;
      }
      double scale = reduction == 2 ? grad[r] : grad[0];
      if (reduction == 0)
        scale /= counted;
      SoftmaxRow normalizer = softmaxRow(logits + r * classes, classes);
      if constexpr (std::is_same_v<T, float>) {
        crossEntropyGradRow(normalizer, classes, labels[r], scale,
                            out + r * classes);
      } else {
        crossEntropyGradRow(normalizer, classes, labels[r], scale,
                            rowGrad.data());
        for (int64_t c = 0; c < classes; ++c)
          out[r * classes + c] = rowGrad[c];
      }
    }
  });
}

} // namespace pp::runtime::cpu

#endif // PP_RUNTIME_KERNELS_CROSSENTROPYROWS_H
