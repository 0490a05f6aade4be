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
  GemmArguments args{transA, transB, m, n, k, a, lda, b, ldb, c, ldc};
  if (pp_status status = checkGemmArguments("pp_cuda_gemm_f32", args,
                                            std::numeric_limits<int>::max()))
    return status;
  if (m == 0 || n == 0)
    return PP_OK;
  cublasHandle_t handle;
  if (cublasStatus_t status = threadHandle(handle);
      status != CUBLAS_STATUS_SUCCESS)
    return failWith(PP_ERROR_INTERNAL,
                    "pp_cuda_gemm_f32: cannot create a "
                    "cuBLAS handle: ",
                    cublasGetStatusString(status));
  if (cublasStatus_t status = cublasSetStream(handle, gemmStream);
      status != CUBLAS_STATUS_SUCCESS)
    return failWith(PP_ERROR_INTERNAL,
                    "pp_cuda_gemm_f32: cublasSetStream "
                    "failed: ",
                    cublasGetStatusString(status));
  auto toInt = [](int64_t value) { return static_cast<int>(value); };
  cublasStatus_t status =
      cublasSgemm(handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                  transA ? CUBLAS_OP_T : CUBLAS_OP_N, toInt(n), toInt(m),
                  toInt(k), &alpha, b, toInt(blasStride(ldb)), a,
                  toInt(blasStride(lda)), &beta, c, toInt(blasStride(ldc)));
  if (status != CUBLAS_STATUS_SUCCESS)
    return failWith(PP_ERROR_INTERNAL, "pp_cuda_gemm_f32: cublasSgemm failed: ",
                    cublasGetStatusString(status));
  return PP_OK;
}

pp_status pp::runtime::deviceGemm(pp_dtype dtype, bool transA, bool transB,
                                  int64_t m, int64_t n, int64_t k,
                                  const void *a, int64_t lda, const void *b,
                                  int64_t ldb, void *c, int64_t ldc) {
  if (dtype != PP_DTYPE_F32)
    return failWith(PP_ERROR_INVALID_ARGUMENT,
                    "the GPU matmul takes f32 only, got ",
                    pp_dtype_name(dtype));
  return pp_cuda_gemm_f32(
      transA, transB, m, n, k, 1.0f, static_cast<const float *>(a), lda,
      static_cast<const float *>(b), ldb, 0.0f, static_cast<float *>(c), ldc);
}
