//===- GemmTest.cpp - every GEMM engine against a naive reference -*- C++ -*-===//

#include "runtime/core/ThreadPool.h"
#include "runtime/pp_runtime.h"

#include <cmath>
#include <cstring>
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

/// Runs pp_gemm_f32 on random operands of `shape` and checks it against
/// the double-precision reference.
void expectMatchesReference(const GemmCase &shape) {
  auto [m, n, k, transA, transB, alpha, beta, pad] = shape;
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
          << "at (" << i << ", " << j << ") of " << m << " x " << n << " x "
          << k << (transA ? " transA" : "") << (transB ? " transB" : "");
}

TEST_P(GemmAgainstReference, MatchesDoublePrecisionReference) {
  expectMatchesReference(GetParam());
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

TEST(Gemm, ThreadCountsAboveTheLimitAreRefusedAndKeepThePool) {
  ASSERT_EQ(pp_set_threads(2), PP_OK);
  expectInvalid(pp_set_threads(PP_MAX_THREADS + 1),
                "1025 threads are more than the 1024 the runtime starts");
  EXPECT_EQ(pp::runtime::threadCount(), 2);
  EXPECT_EQ(pp_set_threads(0), PP_OK);
  EXPECT_EQ(pp::runtime::threadCount(), 1);
}

/// Runs each test with one engine forced, and auto again afterwards.
class ForcedGemmEngine : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override { ASSERT_EQ(pp_set_gemm_engine(GetParam()), PP_OK); }
  void TearDown() override {
    pp_set_gemm_engine("auto");
    pp_set_threads(1);
  }
};

TEST_P(ForcedGemmEngine, MatchesReferenceOnOddShapesAndAllTransposes) {
  const int64_t sizes[] = {1, 3, 17, 64, 129};
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes)
        for (int transposes = 0; transposes < 4; ++transposes)
          expectMatchesReference(GemmCase{m, n, k, (transposes & 1) != 0,
                                          (transposes & 2) != 0, 1.0f, 0.0f,
                                          0});
}

TEST_P(ForcedGemmEngine, ScalesCWhenKIsZero) {
  expectMatchesReference(GemmCase{4, 6, 0, false, false, 1.0f, 0.5f, 0});
  expectMatchesReference(GemmCase{4, 6, 0, true, true, 1.0f, 0.0f, 1});
}

TEST_P(ForcedGemmEngine, MatchesReferenceAcrossPanels) {
  // Above the panel size: several panels, strided operands, alpha, beta.
  for (int transposes = 0; transposes < 4; ++transposes)
    expectMatchesReference(GemmCase{300, 520, 70, (transposes & 1) != 0,
                                    (transposes & 2) != 0, -0.5f, 1.5f, 3});
}

/// C of an m x n x k GEMM on fixed random operands at `threads` threads.
std::vector<float> productAtThreads(int threads, int64_t m, int64_t n,
                                    int64_t k) {
  pp_set_threads(threads);
  std::mt19937 rng(7);
  std::vector<float> a = randomMatrix(m * k, rng), b = randomMatrix(k * n, rng);
  std::vector<float> c(m * n);
  EXPECT_EQ(pp_gemm_f32(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k,
                        0.0f, c.data(), n),
            PP_OK)
      << pp_last_error();
  return c;
}

TEST_P(ForcedGemmEngine, ThreadsGiveIdenticalBits) {
  const int64_t shapes[][3] = {{512, 512, 256}, {257, 513, 33}, {64, 1024, 96}};
  for (auto [m, n, k] : shapes) {
    std::vector<float> one = productAtThreads(1, m, n, k);
    std::vector<float> two = productAtThreads(2, m, n, k);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)),
              0)
        << m << " x " << n << " x " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, ForcedGemmEngine,
                         ::testing::Values("onednn", "openblas", "blis", "pp"));

TEST(Gemm, RejectsUnknownEngine) {
  expectInvalid(pp_set_gemm_engine("mkl"),
                "unknown engine 'mkl'; use auto, onednn, openblas, blis or pp");
}

} // namespace
