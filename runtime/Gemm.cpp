//===- Gemm.cpp - CPU GEMM through OpenBLAS ---------------------*- C++ -*-===//

#include "runtime/Error.h"

#include <cblas.h>
#include <limits>

using pp::runtime::failWith;

namespace {

/// Checks that a row-major operand stored `rows x cols` with row stride `ld`
/// is addressable. An empty operand accepts any stride.
pp_status checkOperand(const char *name, const void *data, int64_t rows,
                       int64_t cols, int64_t ld) {
  bool empty = rows == 0 || cols == 0;
  if (ld < 0 || (!empty && ld < cols))
    return failWith(PP_ERROR_INVALID_ARGUMENT, "pp_gemm_f32: ld", name, " = ",
                    ld, " is smaller than the ", cols,
                    " columns of the stored ", name, " (", rows, " x ", cols,
                    ")");
  if (!data && !empty)
    return failWith(PP_ERROR_INVALID_ARGUMENT, "pp_gemm_f32: ", name,
                    " is NULL");
  return PP_OK;
}

/// BLAS wants every stride at least 1, even for an empty operand.
blasint blasStride(int64_t ld) { return static_cast<blasint>(ld > 1 ? ld : 1); }

} // namespace

extern "C" pp_status pp_gemm_f32(bool transA, bool transB, int64_t m,
                                 int64_t n, int64_t k, float alpha,
                                 const float *a, int64_t lda, const float *b,
                                 int64_t ldb, float beta, float *c,
                                 int64_t ldc) {
  constexpr int64_t kBlasMax = std::numeric_limits<blasint>::max();
  if (m < 0 || n < 0 || k < 0)
    return failWith(PP_ERROR_INVALID_ARGUMENT, "pp_gemm_f32: sizes m = ", m,
                    ", n = ", n, ", k = ", k, " must not be negative");
  if (m > kBlasMax || n > kBlasMax || k > kBlasMax || lda > kBlasMax ||
      ldb > kBlasMax || ldc > kBlasMax)
    return failWith(PP_ERROR_INVALID_ARGUMENT,
                    "pp_gemm_f32: a size or stride exceeds the BLAS integer "
                    "range ", kBlasMax);
  if (pp_status status = checkOperand("a", a, transA ? k : m, transA ? m : k,
                                      lda))
    return status;
  if (pp_status status = checkOperand("b", b, transB ? n : k, transB ? k : n,
                                      ldb))
    return status;
  if (pp_status status = checkOperand("c", c, m, n, ldc))
    return status;
  if (m == 0 || n == 0)
    return PP_OK;
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              blasStride(lda), b, blasStride(ldb), beta, c, blasStride(ldc));
  return PP_OK;
}
