//===- Avx512GemmKernel.cpp - pp's SGEMM tile in AVX-512F -----------------===//
//
// A 12 x 32 tile of C in 24 zmm accumulators: per k, two 16-float loads of
// B and twelve broadcasts of A. Compiled for AVX-512F by a target attribute
// (not a file-wide flag, which could leak AVX-512 into shared inline code),
// and offered only on CPUs that report it.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/gemm/PackedGemmKernel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace pp::runtime;

#if defined(__x86_64__)
namespace {

constexpr int kRows = 12;
constexpr int kLanes = 16;

__attribute__((target("avx512f"))) void
avx512Tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
           int64_t rows, int64_t cols, float alpha, float beta,
           bool firstBlock) {
  __m512 acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m512 low = _mm512_load_ps(b), high = _mm512_load_ps(b + kLanes);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      __m512 value = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(value, low, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(value, high, acc[r][1]);
    }
    a += kRows;
    b += 2 * kLanes;
  }
  // Bit i of a half's mask is set when column i of the half is in C.
  __mmask16 masks[2] = {
      static_cast<__mmask16>(cols >= kLanes ? 0xFFFF : (1u << cols) - 1),
      static_cast<__mmask16>(cols >= 2 * kLanes ? 0xFFFF
                             : cols > kLanes    ? (1u << (cols - kLanes)) - 1
                                                : 0)};
  __m512 alphas = _mm512_set1_ps(alpha), betas = _mm512_set1_ps(beta);
  bool overwrite = firstBlock && beta == 0.0f;
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows)
      break;
    for (int half = 0; half < 2; ++half) {
      float *out = c + r * ldc + half * kLanes;
      __m512 result;
      if (overwrite) {
        result = _mm512_mul_ps(alphas, acc[r][half]);
      } else {
        __m512 old = _mm512_maskz_loadu_ps(masks[half], out);
        result = _mm512_fmadd_ps(alphas, acc[r][half],
                                 firstBlock ? _mm512_mul_ps(betas, old) : old);
      }
      _mm512_mask_storeu_ps(out, masks[half], result);
    }
  }
}

} // namespace
#endif

const PackedGemmKernel *pp::runtime::avx512GemmKernel() {
#if defined(__x86_64__)
  static const PackedGemmKernel kernel{"avx512",   kRows,       2 * kLanes,
                                       /*kc=*/384, /*mc=*/3072,
                                       /*nc=*/240, avx512Tile};
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported ? &kernel : nullptr;
#else
  return nullptr;
#endif
}
