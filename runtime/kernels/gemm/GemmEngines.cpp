//===- GemmEngines.cpp - oneDNN, OpenBLAS and BLIS SGEMM, oneDNN bf16 ----===//
//
// BLIS is linked statically with its symbols hidden (runtime/CMakeLists.txt):
// it also defines the BLAS and CBLAS functions, which must stay OpenBLAS's.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/gemm/GemmEngines.h"

#include "runtime/kernels/gemm/PackedGemm.h"

#include "runtime/core/ElementTypes.h"
#include "runtime/core/Error.h"

// OpenBLAS's cblas.h first: blis.h declares a CBLAS of its own under the
// same include guard.
#include <cblas.h>

#include <blis.h>
#include <exception>
#include <iterator>
#include <mutex>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

// oneDNN 2.x exports its row-major bf16 GEMM (bf16 A and B, f32 C and
// accumulation) without declaring it in its public headers; its own tests
// declare it so. A bf16 element is 16 bits of storage.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(
    char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,
    float alpha, const pp::runtime::BFloat16 *A, dnnl_dim_t lda,
    const pp::runtime::BFloat16 *B, dnnl_dim_t ldb, float beta, float *C,
    dnnl_dim_t ldc);

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

pp_status runOneDnn(pp_dtype dtype, const GemmArguments &args, float alpha,
                    float beta) {
  char transA = args.transA ? 'T' : 'N', transB = args.transB ? 'T' : 'N';
  dnnl_status_t status =
      dtype == PP_DTYPE_BF16
          ? dnnl_gemm_bf16bf16f32(
                transA, transB, args.m, args.n, args.k, alpha,
                static_cast<const BFloat16 *>(args.a), blasStride(args.lda),
                static_cast<const BFloat16 *>(args.b), blasStride(args.ldb),
                beta, static_cast<float *>(args.c), blasStride(args.ldc))
          : dnnl_sgemm(transA, transB, args.m, args.n, args.k, alpha,
                       static_cast<const float *>(args.a), blasStride(args.lda),
                       static_cast<const float *>(args.b), blasStride(args.ldb),
                       beta, static_cast<float *>(args.c),
                       blasStride(args.ldc));
  if (status != dnnl_success)
    return failWith(PP_ERROR_INTERNAL, "pp GEMM: oneDNN's ",
                    dtype == PP_DTYPE_BF16 ? "dnnl_gemm_bf16bf16f32"
                                           : "dnnl_sgemm",
                    " failed with status ", static_cast<int>(status), " on ",
                    args.m, " x ", args.n, " x ", args.k,
                    "; run with --gemm-engine openblas or blis instead");
  return PP_OK;
}

/// Whether oneDNN runs bf16 GEMMs on this CPU (it needs AVX-512 at least,
/// and answers dnnl_unimplemented without): one 1 x 1 x 1 product, once.
bool oneDnnRunsBf16Gemm() {
  static const bool runs = [] {
    runEnginesSingleThreaded();
    BFloat16 one = toBFloat16(1.0f), two = toBFloat16(2.0f);
    float product = 0;
    return dnnl_gemm_bf16bf16f32('N', 'N', 1, 1, 1, 1.0f, &one, 1, &two, 1,
                                 0.0f, &product, 1) == dnnl_success &&
           product == 2.0f;
  }();
  return runs;
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

pp_status runPacked(const GemmArguments &args, float alpha, float beta,
                    bool parallel) {
  const PackedGemmKernel &kernel = *packedGemmKernels().front();
  try {
    runPackedGemm(kernel, args, alpha, beta, parallel);
  } catch (const std::exception &failure) {
    return failWith(PP_ERROR_OUT_OF_MEMORY, "pp GEMM: the ", kernel.name,
                    " kernel could not pack ", args.m, " x ", args.n, " x ",
                    args.k, ": ", failure.what());
  }
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

const std::vector<GemmEngine> &pp::runtime::gemmEnginesFor(pp_dtype dtype) {
  static const std::vector<GemmEngine> f32(std::begin(kGemmEngines),
                                           std::end(kGemmEngines));
  static const std::vector<GemmEngine> bf16 =
      oneDnnRunsBf16Gemm()
          ? std::vector<GemmEngine>{GemmEngine::Widened, GemmEngine::OneDnn}
          : std::vector<GemmEngine>{GemmEngine::Widened};
  static const std::vector<GemmEngine> f16{GemmEngine::Widened}, none;
  switch (dtype) {
  case PP_DTYPE_F32:
    return f32;
  case PP_DTYPE_BF16:
    return bf16;
  case PP_DTYPE_F16:
    return f16;
  default:
    return none;
  }
}

const char *pp::runtime::gemmEngineName(GemmEngine engine) {
  switch (engine) {
  case GemmEngine::OneDnn:
    return "onednn";
  case GemmEngine::OpenBlas:
    return "openblas";
  case GemmEngine::Blis:
    return "blis";
  case GemmEngine::Packed:
    return "pp";
  case GemmEngine::Widened:
    return "widen";
  }
  return "unknown";
}

std::optional<GemmEngine> pp::runtime::parseGemmEngine(std::string_view name) {
  for (GemmEngine engine : kGemmEngines)
    if (name == gemmEngineName(engine))
      return engine;
  if (name == gemmEngineName(GemmEngine::Widened))
    return GemmEngine::Widened;
  return std::nullopt;
}

pp_status pp::runtime::runGemmEngine(GemmEngine engine, pp_dtype dtype,
                                     const GemmArguments &args, float alpha,
                                     float beta, bool parallel) {
  runEnginesSingleThreaded();
  if (dtype != PP_DTYPE_F32 &&
      !(dtype == PP_DTYPE_BF16 && engine == GemmEngine::OneDnn))
    return failWith(PP_ERROR_INTERNAL, "pp GEMM: ", gemmEngineName(engine),
                    " has no kernel for ", pp_dtype_name(dtype),
                    " operands (they are widened to f32 first)");
  switch (engine) {
  case GemmEngine::OneDnn:
    return runOneDnn(dtype, args, alpha, beta);
  case GemmEngine::OpenBlas:
    return runOpenBlas(args, alpha, beta);
  case GemmEngine::Blis:
    return runBlis(args, alpha, beta);
  case GemmEngine::Packed:
    return runPacked(args, alpha, beta, parallel);
  case GemmEngine::Widened:
    break;
  }
  return failWith(PP_ERROR_INTERNAL, "pp GEMM: ", gemmEngineName(engine),
                  " is no library to call");
}

std::string pp::runtime::gemmEngineVersions() {
  const dnnl_version_t *dnnl = dnnl_version();
  return "oneDNN " + std::to_string(dnnl->major) + "." +
         std::to_string(dnnl->minor) + "." + std::to_string(dnnl->patch) + " " +
         dnnl->hash + "; " + openblas_get_config() + "; BLIS " +
         bli_info_get_version_str() + "; pp " +
         packedGemmKernels().front()->name;
}
