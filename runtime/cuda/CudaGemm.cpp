//===- CudaGemm.cpp - GPU GEMM through cuBLAS -------------------*- C++ -*-===//
//
// cuBLAS is column-major: a row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T, so the operands swap places and keep their
// transposition flags.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/pp_runtime_cuda.h"

#include "runtime/core/Error.h"
#include "runtime/kernels/GemmArguments.h"

#include <cublas_v2.h>
#include <limits>

using namespace pp::runtime;

namespace {

/// The stream of the calling thread's GEMMs (ScopedGemmStream).
thread_local cudaStream_t gemmStream = nullptr;

/// The calling thread's cuBLAS handle, created on first use.
cublasStatus_t threadHandle(cublasHandle_t &handle) {
  thread_local cublasHandle_t cached = nullptr;
  thread_local cublasStatus_t status = cublasCreate(&cached);
  handle = cached;
  return status;
}

/// The column-major form of a row-major GEMM: C^T[n x m] = op(B)^T op(A)^T,
/// with cuBLAS's operations, sizes and strides.
struct ColumnMajorGemm {
  cublasOperation_t opB, opA;
  int rows, columns, depth;
  int ldb, lda, ldc;
};

/// Checks row-major GEMM `args`, then calls `gemm(handle, columnMajor)` on
/// the calling thread's handle and GEMM stream; `gemm` returns the status of
/// the cuBLAS function `library` it calls. `function` starts every error
/// message.
template <typename Gemm>
pp_status cublasRowMajor(const char *function, const char *library,
                         const GemmArguments &args, Gemm gemm) {
  if (pp_status status =
          checkGemmArguments(function, args, std::numeric_limits<int>::max()))
    return status;
  if (args.m == 0 || args.n == 0)
    return PP_OK;
  cublasHandle_t handle;
  if (cublasStatus_t status = threadHandle(handle);
      status != CUBLAS_STATUS_SUCCESS)
    return failWith(
        PP_ERROR_INTERNAL, function,
        ": cannot create a cuBLAS handle: ", cublasGetStatusString(status));
  if (cublasStatus_t status = cublasSetStream(handle, gemmStream);
      status != CUBLAS_STATUS_SUCCESS)
    return failWith(PP_ERROR_INTERNAL, function, ": cublasSetStream failed: ",
                    cublasGetStatusString(status));
  auto toInt = [](int64_t value) { return static_cast<int>(value); };
  cublasStatus_t status =
      gemm(handle, ColumnMajorGemm{args.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   args.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   toInt(args.n), toInt(args.m), toInt(args.k),
                                   toInt(blasStride(args.ldb)),
                                   toInt(blasStride(args.lda)),
                                   toInt(blasStride(args.ldc))});
  if (status != CUBLAS_STATUS_SUCCESS)
    return failWith(PP_ERROR_INTERNAL, function, ": ", library,
                    " failed: ", cublasGetStatusString(status));
  return PP_OK;
}

} // namespace

ScopedGemmStream::ScopedGemmStream(cudaStream_t stream) : previous(gemmStream) {
  gemmStream = stream;
}

ScopedGemmStream::~ScopedGemmStream() { gemmStream = previous; }

extern "C" pp_status pp_cuda_gemm_f32(bool transA, bool transB, int64_t m,
                                      int64_t n, int64_t k, float alpha,
                                      const float *a, int64_t lda,
                                      const float *b, int64_t ldb, float beta,
                                      float *c, int64_t ldc) {
  return cublasRowMajor(
      "pp_cuda_gemm_f32", "cublasSgemm",
      {transA, transB, m, n, k, a, lda, b, ldb, c, ldc},
      [&](cublasHandle_t handle, const ColumnMajorGemm &gemm) {
        return cublasSgemm(handle, gemm.opB, gemm.opA, gemm.rows, gemm.columns,
                           gemm.depth, &alpha, b, gemm.ldb, a, gemm.lda, &beta,
                           c, gemm.ldc);
      });
}

pp_status pp::runtime::deviceGemm(pp_dtype dtype, bool transA, bool transB,
                                  int64_t m, int64_t n, int64_t k,
                                  const void *a, int64_t lda, const void *b,
                                  int64_t ldb, void *c, int64_t ldc) {
  if (dtype == PP_DTYPE_F32)
    return pp_cuda_gemm_f32(
        transA, transB, m, n, k, 1.0f, static_cast<const float *>(a), lda,
        static_cast<const float *>(b), ldb, 0.0f, static_cast<float *>(c), ldc);
  if (dtype != PP_DTYPE_BF16 && dtype != PP_DTYPE_F16)
    return failWith(PP_ERROR_INVALID_ARGUMENT,
                    "the GPU matmul takes f32, bf16 or f16, got ",
                    pp_dtype_name(dtype));
  cudaDataType_t type = dtype == PP_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  float alpha = 1.0f, beta = 0.0f;
  return cublasRowMajor(
      "deviceGemm", "cublasGemmEx",
      {transA, transB, m, n, k, a, lda, b, ldb, c, ldc},
      [&](cublasHandle_t handle, const ColumnMajorGemm &gemm) {
        // Accumulates in f32 throughout: no split-K partial sums rounded to
        // the output type, which cuBLAS allows by default.
        cublasStatus_t status = cublasSetMathMode(
            handle, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
        if (status == CUBLAS_STATUS_SUCCESS)
          status = cublasGemmEx(
              handle, gemm.opB, gemm.opA, gemm.rows, gemm.columns, gemm.depth,
              &alpha, b, type, gemm.ldb, a, type, gemm.lda, &beta, c, type,
              gemm.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
        return status;
      });
}
