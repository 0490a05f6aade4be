//===- Gemm.cpp - CPU GEMM over the measured engine, in panels --*- C++ -*-===//
//
// pp_gemm_f32 picks an engine per shape (gemm/GemmEngineChoice.h) and runs
// C's panels (gemm/GemmPanels.h) on the runtime's thread pool. A bf16 or
// f16 GEMM picks its engine per type and shape the same way (oneDNN's bf16
// kernel, or the operands widened to f32 and pp_gemm_f32), accumulates C
// in f32 and rounds it once.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/kernels/gemm/GemmEngineChoice.h"
#include "runtime/kernels/gemm/GemmPanels.h"
#include "runtime/kernels/gemm/WidenedGemm.h"

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

/// Checks `args` for every engine (OpenBLAS takes 32-bit sizes) and, when
/// m, n and k are positive, sets `engine` to the one for `dtype` and the
/// shape. `function` starts the error messages.
pp_status checkAndChooseEngine(const char *function, pp_dtype dtype,
                               const GemmArguments &args, GemmEngine &engine) {
  if (pp_status status = checkGemmArguments(
          function, args, std::numeric_limits<int32_t>::max()))
    return status;
  if (args.m == 0 || args.n == 0 || args.k == 0)
    return PP_OK;
  try {
    engine = gemmEngineFor(dtype, args);
  } catch (const std::exception &failure) {
    return failWith(PP_ERROR_INTERNAL, function, ": ", failure.what());
  }
  return PP_OK;
}

/// The dense f32 product `wide` (m x n, k > 0) of `args`, whose A and B
/// hold elements of `dtype` (bf16 or f16), computed with `engine`.
pp_status multiplyIntoF32(GemmEngine engine, pp_dtype dtype,
                          const GemmArguments &args, std::vector<float> &wide) {
  GemmArguments dense = args;
  dense.c = wide.data();
  dense.ldc = args.n;
  if (engine != GemmEngine::Widened)
    return runGemmPanels(engine, dtype, dense, 1.0f, 0.0f, /*parallel=*/true);
  WidenedGemm widened = widenGemmOperands(dtype, dense);
  const GemmArguments &f32 = widened.args;
  return pp_gemm_f32(f32.transA, f32.transB, f32.m, f32.n, f32.k, 1.0f,
                     static_cast<const float *>(f32.a), f32.lda,
                     static_cast<const float *>(f32.b), f32.ldb, 0.0f,
                     wide.data(), f32.ldc);
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
  if (dtype != PP_DTYPE_BF16 && dtype != PP_DTYPE_F16)
    return failWith(PP_ERROR_INVALID_ARGUMENT, "pp GEMM: no kernel for ",
                    pp_dtype_name(dtype), " elements; use f32, bf16 or f16");
  GemmArguments args{transA, transB, m, n, k, a, lda, b, ldb, c, ldc};
  GemmEngine engine = GemmEngine::Widened;
  if (pp_status status = checkAndChooseEngine("pp GEMM", dtype, args, engine))
    return status;
  if (m == 0 || n == 0)
    return PP_OK;
  // C accumulates in f32 and is rounded once; k = 0 leaves it zero.
  std::vector<float> wide(m * n);
  if (k > 0)
    if (pp_status status = multiplyIntoF32(engine, dtype, args, wide))
      return status;
  visitFloatType(dtype, [&](auto element) {
    using T = decltype(element);
    T *out = static_cast<T *>(c);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j)
        out[r * ldc + j] = storeFloat<T>(wide[r * n + j]);
  });
  return PP_OK;
}

extern "C" pp_status pp_gemm_f32(bool transA, bool transB, int64_t m, int64_t n,
                                 int64_t k, float alpha, const float *a,
                                 int64_t lda, const float *b, int64_t ldb,
                                 float beta, float *c, int64_t ldc) {
  GemmArguments args{transA, transB, m, n, k, a, lda, b, ldb, c, ldc};
  GemmEngine engine = kUncachedGemmEngine;
  if (pp_status status =
          checkAndChooseEngine("pp_gemm_f32", PP_DTYPE_F32, args, engine))
    return status;
  if (m == 0 || n == 0)
    return PP_OK;
  if (k == 0) {
    scaleC(args, beta);
    return PP_OK;
  }
  return runGemmPanels(engine, PP_DTYPE_F32, args, alpha, beta,
                       /*parallel=*/true);
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
                  engine, "'; use auto, onednn, openblas, blis or pp");
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
