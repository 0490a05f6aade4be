//===- GemmArguments.h - GEMM argument checks -------------------*- C++ -*-===//
//
// The argument contract that every GEMM backend (OpenBLAS, cuBLAS) enforces
// before it calls its library.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMMARGUMENTS_H
#define PP_RUNTIME_GEMMARGUMENTS_H

#include "runtime/pp_runtime.h"

namespace pp::runtime {

/// A row-major GEMM call: C[m x n] = alpha * op(A) * op(B) + beta * C.
struct GemmArguments {
  bool transA, transB;
  int64_t m, n, k;
  const void *a;
  int64_t lda;
  const void *b;
  int64_t ldb;
  void *c;
  int64_t ldc;
};

/// Checks sizes, strides (each at least the stored column count unless the
/// operand is empty, and at most `maxIndex`) and non-null operands. On failure
/// records a message that starts with `function` and returns its status.
pp_status checkGemmArguments(const char *function, const GemmArguments &args,
                             int64_t maxIndex);

/// The stride to hand a BLAS library: at least 1, even for empty operands.
inline int64_t blasStride(int64_t ld) { return ld > 1 ? ld : 1; }

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMMARGUMENTS_H
