//===- CudaGemm.h - GPU GEMMs and their stream ------------------*- C++ -*-===//

#ifndef PP_RUNTIME_CUDA_CUDAGEMM_H
#define PP_RUNTIME_CUDA_CUDAGEMM_H

#include "runtime/pp_kernels.h"

#include <cstdint>
#include <cuda_runtime.h>

namespace pp::runtime {

/// While it lives, the GPU GEMMs (pp_cuda_gemm_f32, deviceGemm) on the
/// calling thread queue on `stream` (a matmul kernel: its frame's queue's)
/// instead of the legacy default stream.
class ScopedGemmStream {
public:
  explicit ScopedGemmStream(cudaStream_t stream);
  ~ScopedGemmStream();
  ScopedGemmStream(const ScopedGemmStream &) = delete;
  ScopedGemmStream &operator=(const ScopedGemmStream &) = delete;

private:
  cudaStream_t previous;
};

/// The GPU's GemmFunction (Matmul.h) on the calling thread's GEMM stream:
/// pp_cuda_gemm_f32 for f32; for bf16 and f16 cublasGemmEx on operands and
/// a result of that type, accumulating in f32 and rounding each element of
/// C once. PP_ERROR_INVALID_ARGUMENT, the error recorded, for another dtype
/// or bad arguments (checkGemmArguments); PP_ERROR_INTERNAL when cuBLAS
/// fails.
pp_status deviceGemm(pp_dtype dtype, bool transA, bool transB, int64_t m,
                     int64_t n, int64_t k, const void *a, int64_t lda,
                     const void *b, int64_t ldb, void *c, int64_t ldc);

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_CUDAGEMM_H
