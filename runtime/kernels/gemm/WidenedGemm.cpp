//===- WidenedGemm.cpp - a bf16 or f16 GEMM's operands as f32 -------------===//

#include "runtime/kernels/gemm/WidenedGemm.h"

#include "runtime/kernels/FloatElements.h"

#include <algorithm>

using namespace pp::runtime;

namespace {

/// The `rows` x `cols` matrix of T at `data` (leading dimension `ld`)
/// widened to a dense f32 one (leading dimension `cols`).
template <typename T>
std::vector<float> widenMatrix(const T *data, int64_t rows, int64_t cols,
                               int64_t ld) {
  std::vector<float> wide(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      wide[r * cols + j] = loadFloat(data[r * ld + j]);
  return wide;
}

} // namespace

WidenedGemm pp::runtime::widenGemmOperands(pp_dtype dtype,
                                           const GemmArguments &args) {
  WidenedGemm widened{{}, {}, args};
  visitFloatType(dtype, [&](auto element) {
    using T = decltype(element);
    int64_t aCols = args.transA ? args.m : args.k;
    int64_t bCols = args.transB ? args.k : args.n;
    widened.a = widenMatrix(static_cast<const T *>(args.a),
                            args.transA ? args.k : args.m, aCols, args.lda);
    widened.b = widenMatrix(static_cast<const T *>(args.b),
                            args.transB ? args.n : args.k, bCols, args.ldb);
    // A dense matrix with no columns still has a leading dimension of 1.
    widened.args.lda = std::max<int64_t>(aCols, 1);
    widened.args.ldb = std::max<int64_t>(bCols, 1);
  });
  widened.args.a = widened.a.data();
  widened.args.b = widened.b.data();
  return widened;
}
