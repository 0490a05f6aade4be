//===- Gemm.cpp - CPU GEMM through OpenBLAS ---------------------*- C++ -*-===//

#include "runtime/kernels/GemmArguments.h"

#include <cblas.h>
#include <limits>

using namespace pp::runtime;

extern "C" pp_status pp_gemm_f32(bool transA, bool transB, int64_t m, int64_t n,
                                 int64_t k, float alpha, const float *a,
                                 int64_t lda, const float *b, int64_t ldb,
                                 float beta, float *c, int64_t ldc) {
  GemmArguments args{transA, transB, m, n, k, a, lda, b, ldb, c, ldc};
  if (pp_status status = checkGemmArguments(
          "pp_gemm_f32", args, std::numeric_limits<blasint>::max()))
    return status;
  if (m == 0 || n == 0)
    return PP_OK;
  auto blasInt = [](int64_t value) { return static_cast<blasint>(value); };
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, blasInt(m), blasInt(n),
              blasInt(k), alpha, a, blasInt(blasStride(lda)), b,
              blasInt(blasStride(ldb)), beta, c, blasInt(blasStride(ldc)));
  return PP_OK;
}

extern "C" void pp_set_gemm_threads(int threads) {
  openblas_set_num_threads(threads < 1 ? 1 : threads);
}
