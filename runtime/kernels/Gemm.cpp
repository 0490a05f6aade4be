//===- Gemm.cpp - CPU GEMM over the measured engine, in panels --*- C++ -*-===//
//
// pp_gemm_f32 picks an engine per shape (gemm/GemmEngineChoice.h) and runs
// C's panels (gemm/GemmPanels.h) on the runtime's thread pool.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/kernels/gemm/GemmEngineChoice.h"
#include "runtime/kernels/gemm/GemmPanels.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <vector>

using namespace pp::runtime;

namespace {

/// C = beta * C, the whole GEMM when k is 0 (which oneDNN refuses); beta 0
/// overwrites whatever C held.
void scaleC(const GemmArguments &args, float beta) {
  for (int64_t row = 0; row < args.m; ++row) {
    float *values = static_cast<float *>(args.c) + row * args.ldc;
    for (int64_t col = 0; col < args.n; ++col)
      values[col] = beta == 0.0f ? 0.0f : beta * values[col];
  }
}

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

pp_status pp::runtime::hostGemm(pp_dtype dtype, bool transA, bool transB,
                                int64_t m, int64_t n, int64_t k, const void *a,
                                int64_t lda, const void *b, int64_t ldb,
                                void *c, int64_t ldc) {
  if (dtype == PP_DTYPE_F32)
    return pp_gemm_f32(
        transA, transB, m, n, k, 1.0f, static_cast<const float *>(a), lda,
        static_cast<const float *>(b), ldb, 0.0f, static_cast<float *>(c), ldc);
  pp_status status = PP_OK;
  bool typed = visitFloatType(dtype, [&](auto element) {
    using T = decltype(element);
    int64_t aCols = transA ? m : k, bCols = transB ? k : n;
    std::vector<float> wideA =
        widenMatrix(static_cast<const T *>(a), transA ? k : m, aCols, lda);
    std::vector<float> wideB =
        widenMatrix(static_cast<const T *>(b), transB ? n : k, bCols, ldb);
    std::vector<float> wideC(m * n);
    // A dense matrix with no columns still has a leading dimension of 1.
    status = pp_gemm_f32(transA, transB, m, n, k, 1.0f, wideA.data(),
                         std::max<int64_t>(aCols, 1), wideB.data(),
                         std::max<int64_t>(bCols, 1), 0.0f, wideC.data(), n);
    T *out = static_cast<T *>(c);
    for (int64_t r = 0; r < m && status == PP_OK; ++r)
      for (int64_t j = 0; j < n; ++j)
        out[r * ldc + j] = storeFloat<T>(wideC[r * n + j]);
  });
  if (!typed)
    return failWith(PP_ERROR_INVALID_ARGUMENT, "pp GEMM: no kernel for ",
                    pp_dtype_name(dtype), " elements; use f32, bf16 or f16");
  return status;
}

extern "C" pp_status pp_gemm_f32(bool transA, bool transB, int64_t m, int64_t n,
                                 int64_t k, float alpha, const float *a,
                                 int64_t lda, const float *b, int64_t ldb,
                                 float beta, float *c, int64_t ldc) {
  GemmArguments args{transA, transB, m, n, k, a, lda, b, ldb, c, ldc};
  // OpenBLAS takes 32-bit sizes; every engine must accept every call.
  if (pp_status status = checkGemmArguments(
          "pp_gemm_f32", args, std::numeric_limits<int32_t>::max()))
    return status;
  if (m == 0 || n == 0)
    return PP_OK;
  if (k == 0) {
    scaleC(args, beta);
    return PP_OK;
  }
  GemmEngine engine;
  try {
    engine = gemmEngineFor(args);
  } catch (const std::exception &failure) {
    return failWith(PP_ERROR_INTERNAL, "pp_gemm_f32: ", failure.what());
  }
  return runGemmPanels(engine, args, alpha, beta, /*parallel=*/true);
}

extern "C" pp_status pp_set_gemm_engine(const char *name) {
  std::string_view engine = name ? name : "";
  if (engine == "auto") {
    forceGemmEngine(std::nullopt);
    return PP_OK;
  }
  if (std::optional<GemmEngine> forced = parseGemmEngine(engine)) {
    forceGemmEngine(forced);
    return PP_OK;
  }
  return failWith(PP_ERROR_INVALID_ARGUMENT,
                  "pp_set_gemm_engine: unknown "
                  "engine '",
                  engine, "'; use auto, onednn, openblas or blis");
}

extern "C" pp_status pp_set_threads(int threads) {
  if (threads > PP_MAX_THREADS)
    return failWith(PP_ERROR_INVALID_ARGUMENT, "pp_set_threads: ", threads,
                    " threads are more than the ", PP_MAX_THREADS,
                    " the runtime starts; use at most the machine's cores");
  try {
    setThreadCount(threads);
    return PP_OK;
  } catch (const std::exception &failure) {
    return failWith(PP_ERROR_INTERNAL, "pp_set_threads: cannot start ", threads,
                    " threads (", failure.what(), "); the runtime runs on ",
                    threadCount());
  }
}
