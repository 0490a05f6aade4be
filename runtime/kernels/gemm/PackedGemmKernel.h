//===- PackedGemmKernel.h - the microkernels of pp's own SGEMM --*- C++ -*-===//
//
// pp's own SGEMM (PackedGemm.h) packs blocks of A and B and multiplies them
// tile by tile with a microkernel written for one instruction set. Each
// kernel sums a tile's k terms in the same order at every position of C,
// edges included (a masked tile, not another kernel), so an element's bits
// depend on its row of A, its column of B and k only: never on m, n, the
// blocks or the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_PACKEDGEMMKERNEL_H
#define PP_RUNTIME_GEMM_PACKEDGEMMKERNEL_H

#include <cstdint>

namespace pp::runtime {

/// C[rows x cols] (row-major, row stride ldc; rows <= mr, cols <= nr) of a
/// tile updated with the product of a packed A sliver (kc rows of mr
/// values: A's tile rows at one k) and a packed B sliver (kc rows of nr
/// values). With acc the sum over k of A * B, one fused multiply-add per
/// term in order of k: on the first k block C = alpha * acc (beta 0,
/// whatever C held) or fma(alpha, acc, beta * C); on later blocks C =
/// fma(alpha, acc, C).
using PackedGemmTileFn = void (*)(int64_t kc, const float *a, const float *b,
                                  float *c, int64_t ldc, int64_t rows,
                                  int64_t cols, float alpha, float beta,
                                  bool firstBlock);

/// One instruction set's microkernel and the blocking chosen for it.
struct PackedGemmKernel {
  /// "avx512", "avx2" or "portable".
  const char *name;
  /// The tile: mr rows by nr columns of C.
  int64_t mr, nr;
  /// k per block (fixed: it sets the order of the sums), rows of A and
  /// columns of B per packed block.
  int64_t kc, mc, nc;
  PackedGemmTileFn tile;
};

/// The AVX-512F kernel, or null where the build is not for x86-64 or the
/// CPU lacks AVX-512F.
const PackedGemmKernel *avx512GemmKernel();

/// The AVX2 and FMA kernel, or null where the build is not for x86-64 or
/// the CPU lacks AVX2 or FMA.
const PackedGemmKernel *avx2GemmKernel();

/// The kernel in plain C++ that every CPU runs.
const PackedGemmKernel &portableGemmKernel();

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_PACKEDGEMMKERNEL_H
