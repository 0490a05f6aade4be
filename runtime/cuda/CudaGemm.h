//===- CudaGemm.h - the stream of the GPU GEMM ------------------*- C++ -*-===//

#ifndef PP_RUNTIME_CUDA_CUDAGEMM_H
#define PP_RUNTIME_CUDA_CUDAGEMM_H

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

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_CUDAGEMM_H
