//===- Matmul.h - batched matrix products over a GEMM -----------*- C++ -*-===//

#ifndef PP_RUNTIME_MATMUL_H
#define PP_RUNTIME_MATMUL_H

#include "runtime/kernels/Frame.h"
#include "runtime/core/Shapes.h"

namespace pp::runtime {

/// A row-major GEMM with pp_gemm_f32's contract (host or device pointers).
using GemmFunction = pp_status (*)(bool, bool, int64_t, int64_t, int64_t, float,
                                   const float *, int64_t, const float *,
                                   int64_t, float, float *, int64_t);
/// Allocates a kernel's result (host or device memory).
using TensorFactory = pp_tensor *(*)(pp_frame *, pp_dtype, const Shape &);

/// `op(lhs) x op(rhs)` over broadcast batch dimensions: one GEMM per batch
/// into a tensor from `create`. Null (with the error in `frame`) on failure.
pp_tensor *batchedMatmul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs,
                         bool transposeLhs, bool transposeRhs,
                         TensorFactory create, GemmFunction gemm);

} // namespace pp::runtime

#endif // PP_RUNTIME_MATMUL_H
