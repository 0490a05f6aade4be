//===- GemmTest.cpp - OpenBLAS GEMM against a naive reference ---*- C++ -*-===//

#include "runtime/pp_runtime.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

/// C = alpha * op(A) * op(B) + beta * C in double precision, row-major.
void referenceGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   float alpha, const std::vector<float> &a, int64_t lda,
                   const std::vector<float> &b, int64_t ldb, float beta,
                   std::vector<double> &c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        double lhs = transA ? a[p * lda + i] : a[i * lda + p];
        double rhs = transB ? b[j * ldb + p] : b[p * ldb + j];
        sum += lhs * rhs;
      }
      double old = beta == 0 ? 0.0 : beta * c[i * ldc + j];
      c[i * ldc + j] = alpha * sum + old;
    }
}

std::vector<float> randomMatrix(size_t size, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(size);
  for (float &value : values)
    value = dist(rng);
  return values;
}

/// (m, n, k, transA, transB, alpha, beta, padding of every row stride)
using GemmCase =
    std::tuple<int64_t, int64_t, int64_t, bool, bool, float, float, int64_t>;

class GemmAgainstReference : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmAgainstReference, MatchesDoublePrecisionReference) {
  auto [m, n, k, transA, transB, alpha, beta, pad] = GetParam();
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 17 + k));
  int64_t lda = (transA ? m : k) + pad, ldb = (transB ? k : n) + pad;
  int64_t ldc = n + pad;
  std::vector<float> a = randomMatrix((transA ? k : m) * lda, rng);
  std::vector<float> b = randomMatrix((transB ? n : k) * ldb, rng);
  std::vector<float> c = randomMatrix(m * ldc, rng);
  std::vector<double> expected(c.begin(), c.end());
  referenceGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, expected,
                ldc);
  ASSERT_EQ(pp_gemm_f32(transA, transB, m, n, k, alpha, a.data(), lda, b.data(),
                        ldb, beta, c.data(), ldc),
            PP_OK)
      << pp_last_error();
  // Each output sums k products of values in [-1, 1]; float accumulation
  // error grows at most like k * epsilon.
  double tolerance =
      4.0 * std::max<int64_t>(k, 1) * std::numeric_limits<float>::epsilon();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_NEAR(c[i * ldc + j], expected[i * ldc + j], tolerance)
          << "at (" << i << ", " << j << ")";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmAgainstReference,
    ::testing::Values(GemmCase{1, 1, 1, false, false, 1.0f, 0.0f, 0},
                      GemmCase{7, 5, 3, false, false, 1.0f, 0.0f, 0},
                      GemmCase{7, 5, 3, true, false, 1.0f, 0.0f, 0},
                      GemmCase{7, 5, 3, false, true, 1.0f, 0.0f, 0},
                      GemmCase{7, 5, 3, true, true, 1.0f, 0.0f, 0},
                      GemmCase{33, 17, 65, false, true, 0.5f, 2.0f, 0},
                      GemmCase{64, 64, 64, false, false, 1.0f, 1.0f, 3},
                      GemmCase{129, 31, 257, true, false, -1.5f, 0.25f, 5},
                      GemmCase{4, 6, 0, false, false, 1.0f, 0.5f, 0}));

TEST(Gemm, BetaZeroOverwritesGarbage) {
  std::vector<float> a = {1, 2, 3, 4}, b = {1, 0, 0, 1};
  std::vector<float> c(4, std::numeric_limits<float>::quiet_NaN());
  ASSERT_EQ(pp_gemm_f32(false, false, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2,
                        0.0f, c.data(), 2),
            PP_OK);
  EXPECT_EQ(c, a);
}

TEST(Gemm, EmptyOperandsNeedNoStorage) {
  std::vector<float> b(6, 1.0f);
  EXPECT_EQ(pp_gemm_f32(false, false, 0, 3, 2, 1.0f, nullptr, 0, b.data(), 3,
                        0.0f, nullptr, 0),
            PP_OK)
      << pp_last_error();
}

void expectInvalid(pp_status status, const char *fragment) {
  EXPECT_EQ(status, PP_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pp_last_error()).find(fragment), std::string::npos)
      << "message: " << pp_last_error();
}

TEST(Gemm, RejectsBadArguments) {
  std::vector<float> a(16), b(16), c(16);
  expectInvalid(pp_gemm_f32(false, false, -1, 2, 2, 1.0f, a.data(), 2, b.data(),
                            2, 0.0f, c.data(), 2),
                "m = -1");
  expectInvalid(pp_gemm_f32(false, false, 2, 2, 4, 1.0f, a.data(), 3, b.data(),
                            2, 0.0f, c.data(), 2),
                "lda = 3 is smaller than the 4 columns");
  expectInvalid(pp_gemm_f32(false, true, 2, 4, 3, 1.0f, a.data(), 3, b.data(),
                            2, 0.0f, c.data(), 4),
                "ldb = 2 is smaller than the 3 columns");
  expectInvalid(pp_gemm_f32(false, false, 2, 4, 2, 1.0f, a.data(), 2, b.data(),
                            4, 0.0f, c.data(), 3),
                "ldc = 3");
  expectInvalid(pp_gemm_f32(false, false, 2, 2, 2, 1.0f, nullptr, 2, b.data(),
                            2, 0.0f, c.data(), 2),
                "a is NULL");
}

} // namespace
