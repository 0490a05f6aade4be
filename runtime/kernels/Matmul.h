//===- Matmul.h - batched matrix products over a GEMM -----------*- C++ -*-===//

#ifndef PP_RUNTIME_MATMUL_H
#define PP_RUNTIME_MATMUL_H

#include "runtime/core/Shapes.h"
#include "runtime/kernels/Frame.h"

namespace pp::runtime {

/// A row-major GEMM C = op(A) x op(B) (C overwritten) over elements of
/// `dtype` (f32, bf16 or f16; host or device pointers), accumulating in f32
/// and rounding each element of C once to its type.
using GemmFunction = pp_status (*)(pp_dtype dtype, bool transA, bool transB,
                                   int64_t m, int64_t n, int64_t k,
                                   const void *a, int64_t lda, const void *b,
                                   int64_t ldb, void *c, int64_t ldc);

/// The host's GemmFunction: pp_gemm_f32 for f32; for bf16 and f16 an
/// f32-accumulated product on the engine chosen for the type and shape
/// (gemm/GemmEngineChoice.h: oneDNN's bf16 kernel, or the operands widened
/// to f32 exactly and pp_gemm_f32), C rounded once to nearest even.
pp_status hostGemm(pp_dtype dtype, bool transA, bool transB, int64_t m,
                   int64_t n, int64_t k, const void *a, int64_t lda,
                   const void *b, int64_t ldb, void *c, int64_t ldc);

/// Allocates a kernel's result (host or device memory).
using TensorFactory = pp_tensor *(*)(pp_frame *, pp_dtype, const Shape &);

/// `op(lhs) x op(rhs)` over broadcast batch dimensions, operands of one
/// float type (checked by the caller): one GEMM per batch into a tensor of
/// that type from `create`. Null (with the error in `frame`) on failure.
pp_tensor *batchedMatmul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs,
                         bool transposeLhs, bool transposeRhs,
                         TensorFactory create, GemmFunction gemm);

/// A row-major f32 GEMM C = alpha * op(A) x op(B) + beta * C, as
/// pp_gemm_f32 (host) and pp_cuda_gemm_f32 (device) compute it.
using F32GemmFunction = pp_status (*)(bool transA, bool transB, int64_t m,
                                      int64_t n, int64_t k, float alpha,
                                      const float *a, int64_t lda,
                                      const float *b, int64_t ldb, float beta,
                                      float *c, int64_t ldc);

/// Adds `op(lhs) x op(rhs)`, 2-D f32 operands, into `sum`, f32 of the
/// product's shape, with one `gemm` of beta 1 (a weight's gradient into
/// the step's sum). The error in `frame` when the types or shapes do not
/// fit.
void matmulAdd(pp_frame *frame, pp_tensor *sum, pp_tensor *lhs, pp_tensor *rhs,
               bool transposeLhs, bool transposeRhs, F32GemmFunction gemm);

} // namespace pp::runtime

#endif // PP_RUNTIME_MATMUL_H
