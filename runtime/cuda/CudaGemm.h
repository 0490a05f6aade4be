//===- CudaGemm.h - the stream of the GPU GEMM ------------------*- C++ -*-===//

#ifndef PP_RUNTIME_CUDA_CUDAGEMM_H
#define PP_RUNTIME_CUDA_CUDAGEMM_H

#include "runtime/pp_kernels.h"

#include <cstdint>
#include <cuda_runtime.h>

namespace pp::runtime {

/// While it lives, pp_cuda_gemm_f32 on the calling thread queues its GEMMs
/// on `stream` (a matmul kernel: its frame's queue's) instead of the legacy
/// default stream.
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
/// pp_cuda_gemm_f32 for f32.
pp_status deviceGemm(pp_dtype dtype, bool transA, bool transB, int64_t m,
                     int64_t n, int64_t k, const void *a, int64_t lda,
                     const void *b, int64_t ldb, void *c, int64_t ldc);

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_CUDAGEMM_H
