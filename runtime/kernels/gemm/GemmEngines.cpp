//===- GemmEngines.cpp - oneDNN, OpenBLAS and BLIS SGEMM ------------------===//
//
// BLIS is linked statically with its symbols hidden (runtime/CMakeLists.txt):
// it also defines the BLAS and CBLAS functions, which must stay OpenBLAS's.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/gemm/GemmEngines.h"

#include "runtime/core/Error.h"

// OpenBLAS's cblas.h first: blis.h declares a CBLAS of its own under the
// same include guard.
#include <cblas.h>

#include <blis.h>
#include <mutex>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

using namespace pp::runtime;

namespace {

/// Keeps oneDNN and BLIS (OpenMP) and OpenBLAS (its own threads) on the
/// calling thread. OpenMP's thread count is a per-thread setting, so each
/// thread that runs an engine sets it once.
void runEnginesSingleThreaded() {
  static std::once_flag global;
  std::call_once(global, [] {
    openblas_set_num_threads(1);
    bli_thread_set_num_threads(1);
  });
  thread_local bool threadSet = false;
  if (!threadSet) {
    omp_set_num_threads(1);
    threadSet = true;
  }
}

pp_status runOneDnn(const GemmArguments &args, float alpha, float beta) {
  dnnl_status_t status = dnnl_sgemm(
      args.transA ? 'T' : 'N', args.transB ? 'T' : 'N', args.m, args.n, args.k,
      alpha, static_cast<const float *>(args.a), blasStride(args.lda),
      static_cast<const float *>(args.b), blasStride(args.ldb), beta,
      static_cast<float *>(args.c), blasStride(args.ldc));
  if (status != dnnl_success)
    return failWith(PP_ERROR_INTERNAL, "pp_gemm_f32: oneDNN's dnnl_sgemm failed "
                    "with status ", static_cast<int>(status), " on ",
                    args.m, " x ", args.n, " x ", args.k,
                    "; run with --gemm-engine openblas or blis instead");
  return PP_OK;
}

pp_status runOpenBlas(const GemmArguments &args, float alpha, float beta) {
  auto blasInt = [](int64_t value) { return static_cast<blasint>(value); };
  cblas_sgemm(CblasRowMajor, args.transA ? CblasTrans : CblasNoTrans,
              args.transB ? CblasTrans : CblasNoTrans, blasInt(args.m),
              blasInt(args.n), blasInt(args.k), alpha,
              static_cast<const float *>(args.a), blasInt(blasStride(args.lda)),
              static_cast<const float *>(args.b), blasInt(blasStride(args.ldb)),
              beta, static_cast<float *>(args.c),
              blasInt(blasStride(args.ldc)));
  return PP_OK;
}

pp_status runBlis(const GemmArguments &args, float alpha, float beta) {
  // Row-major operands: row stride ld, column stride 1; BLIS takes the
  // sizes after transposition and the strides of the stored matrices.
  rntm_t oneThread = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(1, &oneThread);
  bli_sgemm_ex(args.transA ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
               args.transB ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, args.m, args.n,
               args.k, &alpha,
               static_cast<float *>(const_cast<void *>(args.a)),
               blasStride(args.lda), 1,
               static_cast<float *>(const_cast<void *>(args.b)),
               blasStride(args.ldb), 1, &beta, static_cast<float *>(args.c),
               blasStride(args.ldc), 1, nullptr, &oneThread);
  return PP_OK;
}

} // namespace

const char *pp::runtime::gemmEngineName(GemmEngine engine) {
  switch (engine) {
  case GemmEngine::OneDnn:
    return "onednn";
  case GemmEngine::OpenBlas:
    return "openblas";
  case GemmEngine::Blis:
    return "blis";
  }
  return "unknown";
}

std::optional<GemmEngine> pp::runtime::parseGemmEngine(std::string_view name) {
  for (GemmEngine engine : kGemmEngines)
    if (name == gemmEngineName(engine))
      return engine;
  return std::nullopt;
}

pp_status pp::runtime::runGemmEngine(GemmEngine engine,
                                     const GemmArguments &args, float alpha,
                                     float beta) {
  runEnginesSingleThreaded();
  switch (engine) {
  case GemmEngine::OneDnn:
    return runOneDnn(args, alpha, beta);
  case GemmEngine::OpenBlas:
    return runOpenBlas(args, alpha, beta);
  case GemmEngine::Blis:
    return runBlis(args, alpha, beta);
  }
  return failWith(PP_ERROR_INTERNAL, "pp_gemm_f32: unknown engine ",
                  static_cast<int>(engine));
}

std::string pp::runtime::gemmEngineVersions() {
  const dnnl_version_t *dnnl = dnnl_version();
  return "oneDNN " + std::to_string(dnnl->major) + "." +
         std::to_string(dnnl->minor) + "." + std::to_string(dnnl->patch) +
         " " + dnnl->hash + "; " + openblas_get_config() + "; BLIS " +
         bli_info_get_version_str();
}
