//===- Avx2GemmKernel.cpp - pp's SGEMM tile in AVX2 and FMA ---------------===//
//
// A 6 x 16 tile of C in 12 ymm accumulators: per k, two 8-float loads of B
// and six broadcasts of A. Compiled for AVX2 and FMA by a target attribute
// and offered only on CPUs that report both.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/gemm/PackedGemmKernel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace pp::runtime;

#if defined(__x86_64__)
namespace {

constexpr int kRows = 6;
constexpr int kLanes = 8;

__attribute__((target("avx2,fma"))) void
avx2Tile(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
         int64_t rows, int64_t cols, float alpha, float beta, bool firstBlock) {
  __m256 acc[kRows][2];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m256 low = _mm256_load_ps(b), high = _mm256_load_ps(b + kLanes);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      __m256 value = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(value, low, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(value, high, acc[r][1]);
    }
    a += kRows;
    b += 2 * kLanes;
  }
  // Lane i of a half's mask is on when column i of the half is in C.
  __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i masks[2] = {
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(cols)), lanes),
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(cols - kLanes)),
                         lanes)};
  __m256 alphas = _mm256_set1_ps(alpha), betas = _mm256_set1_ps(beta);
  bool overwrite = firstBlock && beta == 0.0f;
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows)
      break;
    for (int half = 0; half < 2; ++half) {
      float *out = c + r * ldc + half * kLanes;
      __m256 result;
      if (overwrite) {
        result = _mm256_mul_ps(alphas, acc[r][half]);
      } else {
        __m256 old = _mm256_maskload_ps(out, masks[half]);
        result = _mm256_fmadd_ps(alphas, acc[r][half],
                                 firstBlock ? _mm256_mul_ps(betas, old) : old);
      }
      _mm256_maskstore_ps(out, masks[half], result);
    }
  }
}

} // namespace
#endif

const PackedGemmKernel *pp::runtime::avx2GemmKernel() {
#if defined(__x86_64__)
  static const PackedGemmKernel kernel{"avx2",     kRows,       2 * kLanes,
                                       /*kc=*/384, /*mc=*/3072,
                                       /*nc=*/240, avx2Tile};
  static const bool supported =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported ? &kernel : nullptr;
#else
  return nullptr;
#endif
}
