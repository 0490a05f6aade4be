//===- PackedGemmTest.cpp - pp's own SGEMM, every kernel this CPU runs ----===//

#include "runtime/kernels/gemm/PackedGemm.h"
#include "runtime/core/ThreadPool.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace pp::runtime;

namespace {

/// Row-major operands of an m x n x k GEMM whose rows are `pad` longer
/// than they need be, filled with values in [-1, 1].
struct Operands {
  bool transA, transB;
  int64_t m, n, k, lda, ldb, ldc;
  std::vector<float> a, b, c;

  Operands(int64_t m, int64_t n, int64_t k, bool transA, bool transB,
           int64_t pad, unsigned seed)
      : transA(transA), transB(transB), m(m), n(n), k(k),
        lda((transA ? m : k) + pad), ldb((transB ? k : n) + pad), ldc(n + pad) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> values(-1.0f, 1.0f);
    auto fill = [&](std::vector<float> &matrix, int64_t size) {
      matrix.resize(size);
      for (float &value : matrix)
        value = values(rng);
    };
    fill(a, (transA ? k : m) * lda);
    fill(b, (transB ? n : k) * ldb);
    fill(c, m * ldc);
  }

  float opA(int64_t i, int64_t p) const {
    return transA ? a[p * lda + i] : a[i * lda + p];
  }
  float opB(int64_t p, int64_t j) const {
    return transB ? b[j * ldb + p] : b[p * ldb + j];
  }

  /// The arguments of C's rows [row, row + rows) and columns [col, col +
  /// cols): the same GEMM on a sub-block, by offsets into the operands.
  GemmArguments block(int64_t row, int64_t rows, int64_t col, int64_t cols) {
    return {transA, transB,
            rows,   cols,
            k,      a.data() + (transA ? row : row * lda),
            lda,    b.data() + (transB ? col * ldb : col),
            ldb,    c.data() + row * ldc + col,
            ldc};
  }
  GemmArguments whole() { return block(0, m, 0, n); }
};

std::string describe(const PackedGemmKernel &kernel, const Operands &operands) {
  return std::string(kernel.name) + " kernel, " + std::to_string(operands.m) +
         " x " + std::to_string(operands.n) + " x " +
         std::to_string(operands.k) + (operands.transA ? " transA" : "") +
         (operands.transB ? " transB" : "");
}

/// Runs `kernel` on `operands` and checks C against a double-precision
/// reference: each element sums k products of values in [-1, 1], so its
/// f32 error grows at most like k * epsilon.
void expectMatchesReference(const PackedGemmKernel &kernel, Operands operands,
                            float alpha, float beta) {
  std::vector<float> before = operands.c;
  runPackedGemm(kernel, operands.whole(), alpha, beta, /*parallel=*/true);
  double tolerance = 4.0 * static_cast<double>(operands.k) *
                     std::numeric_limits<float>::epsilon();
  for (int64_t i = 0; i < operands.m; ++i) {
    for (int64_t j = 0; j < operands.n; ++j) {
      int64_t at = i * operands.ldc + j;
      double sum = 0;
      for (int64_t p = 0; p < operands.k; ++p)
        sum += static_cast<double>(operands.opA(i, p)) * operands.opB(p, j);
      double expected = alpha * sum + (beta == 0 ? 0.0 : beta * before[at]);
      ASSERT_NEAR(operands.c[at], expected, tolerance)
          << "at (" << i << ", " << j << ") with the "
          << describe(kernel, operands);
    }
    // A row's padding past C's last column is left alone.
    for (int64_t j = operands.n; j < operands.ldc; ++j)
      ASSERT_EQ(operands.c[i * operands.ldc + j], before[i * operands.ldc + j])
          << "padding written at (" << i << ", " << j << ") with the "
          << describe(kernel, operands);
  }
}

class EveryPackedKernel
    : public ::testing::TestWithParam<const PackedGemmKernel *> {
protected:
  void TearDown() override { setThreadCount(1); }
};

TEST_P(EveryPackedKernel, MatchesReferenceOnEdgesTransposesAndKBlocks) {
  const PackedGemmKernel &kernel = *GetParam();
  setThreadCount(2);
  // Sizes below, at and past a tile, and k past one and two k blocks.
  const int64_t sides[] = {1, kernel.mr + 1, kernel.nr + 3, 61};
  const int64_t depths[] = {1, 7, kernel.kc, 2 * kernel.kc + 5};
  unsigned seed = 1;
  for (int64_t m : sides)
    for (int64_t n : sides)
      for (int64_t k : depths)
        for (int transposes = 0; transposes < 4; ++transposes)
          expectMatchesReference(
              kernel,
              Operands(m, n, k, transposes & 1, transposes & 2, 0, ++seed),
              1.0f, 0.0f);
}

TEST_P(EveryPackedKernel, MatchesReferenceWithAlphaBetaAndStrides) {
  const PackedGemmKernel &kernel = *GetParam();
  setThreadCount(2);
  for (int transposes = 0; transposes < 4; ++transposes) {
    expectMatchesReference(
        kernel,
        Operands(37, 45, kernel.kc + 9, transposes & 1, transposes & 2, 3, 11),
        -0.5f, 1.5f);
    expectMatchesReference(kernel,
                           Operands(kernel.mc + 5, 2 * kernel.nc / 3, 19,
                                    transposes & 1, transposes & 2, 1, 12),
                           2.0f, 0.0f);
  }
}

TEST_P(EveryPackedKernel, BetaZeroOverwritesNaN) {
  const PackedGemmKernel &kernel = *GetParam();
  Operands operands(kernel.mr + 2, kernel.nr + 2, 5, false, false, 0, 3);
  std::fill(operands.c.begin(), operands.c.end(),
            std::numeric_limits<float>::quiet_NaN());
  runPackedGemm(kernel, operands.whole(), 1.0f, 0.0f, /*parallel=*/false);
  for (float value : operands.c)
    ASSERT_FALSE(std::isnan(value)) << describe(kernel, operands);
}

/// An element's bits depend on its row of A, its column of B and k only:
/// sub-blocks of C at any offset, one thread or two, give the bits of the
/// whole product.
TEST_P(EveryPackedKernel, BitsDoNotDependOnBlocksOrThreads) {
  const PackedGemmKernel &kernel = *GetParam();
  for (int transposes = 0; transposes < 4; ++transposes) {
    Operands operands(kernel.mc + 2 * kernel.mr + 3, kernel.nc + kernel.nr + 5,
                      kernel.kc + 33, transposes & 1, transposes & 2, 2, 21);
    std::fill(operands.c.begin(), operands.c.end(), 0.0f);
    setThreadCount(1);
    runPackedGemm(kernel, operands.whole(), 1.0f, 0.0f, /*parallel=*/false);
    std::vector<float> whole = operands.c;
    std::fill(operands.c.begin(), operands.c.end(), 0.0f);
    setThreadCount(2);
    runPackedGemm(kernel, operands.whole(), 1.0f, 0.0f, /*parallel=*/true);
    ASSERT_EQ(std::memcmp(whole.data(), operands.c.data(),
                          whole.size() * sizeof(float)),
              0)
        << "two threads differ from one with the "
        << describe(kernel, operands);
    // Blocks that start off the tile grid, one of them a single element.
    std::fill(operands.c.begin(), operands.c.end(), 0.0f);
    int64_t rowCut = kernel.mr / 2 + 1, colCut = kernel.nr + 7;
    runPackedGemm(kernel, operands.block(0, rowCut, 0, operands.n), 1.0f, 0.0f,
                  true);
    runPackedGemm(kernel,
                  operands.block(rowCut, operands.m - rowCut, 0, colCut), 1.0f,
                  0.0f, true);
    runPackedGemm(kernel,
                  operands.block(rowCut, operands.m - rowCut, colCut,
                                 operands.n - colCut),
                  1.0f, 0.0f, true);
    ASSERT_EQ(std::memcmp(whole.data(), operands.c.data(),
                          whole.size() * sizeof(float)),
              0)
        << "blocks of C differ from the whole product with the "
        << describe(kernel, operands);
  }
  setThreadCount(1);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, EveryPackedKernel, ::testing::ValuesIn(packedGemmKernels()),
    [](const ::testing::TestParamInfo<const PackedGemmKernel *> &info) {
      return std::string(info.param->name);
    });

TEST(PackedGemm, EveryCpuRunsThePortableKernelLast) {
  const std::vector<const PackedGemmKernel *> &kernels = packedGemmKernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(kernels.back(), &portableGemmKernel());
}

} // namespace
