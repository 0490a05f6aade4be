/*===- pp_runtime_cuda.h - the pp runtime's CUDA C ABI -------------*- C -*-===*
 *
 * GPU entry points, built when CMake finds a CUDA toolkit. Pointers are
 * device pointers; errors are reported like the rest of the runtime.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PP_RUNTIME_CUDA_PP_RUNTIME_CUDA_H
#define PP_RUNTIME_CUDA_PP_RUNTIME_CUDA_H

#include "runtime/pp_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Row-major single-precision GEMM through cuBLAS on the current device and
 * the legacy default stream (inside a CUDA matmul kernel: its frame's
 * queue's stream), with the contract of pp_gemm_f32 (runtime/pp_runtime.h).
 * Returns PP_ERROR_INTERNAL with the CUDA or cuBLAS error when the library
 * fails, for example when no GPU is present. */
pp_status pp_cuda_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n,
                           int64_t k, float alpha, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float beta, float *c,
                           int64_t ldc);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PP_RUNTIME_CUDA_PP_RUNTIME_CUDA_H */
