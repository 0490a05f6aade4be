//===- Bf16GemmTest.cpp - bf16 and f16 GEMM engines and their choice -*- C++ -*-===//

#include "runtime/core/ElementTypes.h"
#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/kernels/gemm/GemmEngineChoice.h"

#include "TemporaryFiles.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <gtest/gtest.h>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

using namespace pp::runtime;

namespace {

/// Row-major GEMM operands of element type T and their products.
template <typename T> struct Operands {
  int64_t m, n, k;
  bool transA, transB;
  std::vector<T> a, b;
  int64_t lda() const { return transA ? m : k; }
  int64_t ldb() const { return transB ? k : n; }
  GemmArguments args(std::vector<float> &c) const {
    return {transA, transB, m, n, k, a.data(), lda(), b.data(), ldb(),
            c.data(), n};
  }
};

template <typename T>
Operands<T> randomOperands(int64_t m, int64_t n, int64_t k, bool transA,
                           bool transB) {
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 17 + k));
  std::uniform_real_distribution<float> values(-1.0f, 1.0f);
  Operands<T> operands{m, n, k, transA, transB, {}, {}};
  operands.a.resize(m * k);
  operands.b.resize(k * n);
  for (std::vector<T> *matrix : {&operands.a, &operands.b})
    for (T &value : *matrix)
      value = storeFloat<T>(values(rng));
  return operands;
}

/// op(A) x op(B) in double precision from the elements' exact values.
template <typename T> std::vector<double> referenceProduct(const Operands<T> &x) {
  std::vector<double> c(x.m * x.n);
  for (int64_t i = 0; i < x.m; ++i)
    for (int64_t j = 0; j < x.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < x.k; ++p)
        sum += double(loadFloat(x.transA ? x.a[p * x.lda() + i]
                                         : x.a[i * x.lda() + p])) *
               double(loadFloat(x.transB ? x.b[j * x.ldb() + p]
                                         : x.b[p * x.ldb() + j]));
      c[i * x.n + j] = sum;
    }
  return c;
}

/// Half a unit in the last place of T, relative: C's one rounding.
template <typename T> double roundingError() {
  return std::is_same_v<T, BFloat16> ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

/// hostGemm over T on `operands` matches the double-precision product
/// within f32 accumulation (k products of values in [-1, 1]) and one
/// rounding to T. Accumulating in T would miss it by about k ulps of T.
template <typename T> void expectMatchesReference(const Operands<T> &operands) {
  std::vector<T> c(operands.m * operands.n);
  ASSERT_EQ(hostGemm(floatDtype<T>(), operands.transA, operands.transB,
                     operands.m, operands.n, operands.k, operands.a.data(),
                     operands.lda(), operands.b.data(), operands.ldb(),
                     c.data(), operands.n),
            PP_OK)
      << pp_last_error();
  std::vector<double> expected = referenceProduct(operands);
  double accumulation =
      4.0 * operands.k * std::numeric_limits<float>::epsilon();
  for (size_t index = 0; index < c.size(); ++index)
    ASSERT_NEAR(loadFloat(c[index]), expected[index],
                accumulation + std::abs(expected[index]) * roundingError<T>())
        << "element " << index << " of " << operands.m << " x " << operands.n
        << " x " << operands.k;
}

/// Runs each test with one library forced, and auto again afterwards.
class ForcedBf16GemmEngine : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override { ASSERT_EQ(pp_set_gemm_engine(GetParam()), PP_OK); }
  void TearDown() override {
    pp_set_gemm_engine("auto");
    pp_set_threads(1);
  }
};

TEST_P(ForcedBf16GemmEngine, MatchesDoublePrecisionWithinF32Accumulation) {
  pp_set_threads(2);
  // Small shapes (one panel) and one split into panels, every transpose.
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 257},
                               {300, 260, 40}};
  for (auto [m, n, k] : shapes)
    for (int transposes = 0; transposes < 4; ++transposes) {
      bool transA = transposes & 1, transB = transposes & 2;
      expectMatchesReference(randomOperands<BFloat16>(m, n, k, transA, transB));
      expectMatchesReference(randomOperands<Half>(m, n, k, transA, transB));
    }
}

TEST_P(ForcedBf16GemmEngine, OneDnnRunsItsBf16KernelOthersWiden) {
  std::vector<float> c(12);
  Operands<BFloat16> operands = randomOperands<BFloat16>(3, 4, 5, false, true);
  GemmArguments args = operands.args(c);
  bool oneDnn = std::string(GetParam()) == "onednn";
  const std::vector<GemmEngine> &bf16 = gemmEnginesFor(PP_DTYPE_BF16);
  bool native = std::find(bf16.begin(), bf16.end(), GemmEngine::OneDnn) !=
                bf16.end();
  EXPECT_EQ(gemmEngineFor(PP_DTYPE_BF16, args),
            oneDnn && native ? GemmEngine::OneDnn : GemmEngine::Widened);
  // oneDNN has no f16 GEMM on CPUs: f16 always widens.
  EXPECT_EQ(gemmEngineFor(PP_DTYPE_F16, args), GemmEngine::Widened);
  EXPECT_EQ(gemmEngineFor(PP_DTYPE_F32, args), *parseGemmEngine(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Engines, ForcedBf16GemmEngine,
                         ::testing::Values("onednn", "openblas", "blis", "pp"));

TEST(Bf16Gemm, EnginesOfEachTypeAreListed) {
  const std::vector<GemmEngine> &bf16 = gemmEnginesFor(PP_DTYPE_BF16);
  ASSERT_FALSE(bf16.empty());
  EXPECT_EQ(bf16.front(), GemmEngine::Widened);
  // oneDNN runs bf16 GEMMs on AVX-512 (avx512_core), emulated without BF16.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    EXPECT_NE(std::find(bf16.begin(), bf16.end(), GemmEngine::OneDnn),
              bf16.end());
  }
  EXPECT_EQ(gemmEnginesFor(PP_DTYPE_F16),
            std::vector<GemmEngine>{GemmEngine::Widened});
  EXPECT_EQ(gemmEnginesFor(PP_DTYPE_F32).size(), std::size(kGemmEngines));
  EXPECT_TRUE(gemmEnginesFor(PP_DTYPE_I64).empty());
  EXPECT_EQ(parseGemmEngine("widen"), GemmEngine::Widened);
}

TEST(Bf16Gemm, ShapeKeysNameTheElementType) {
  std::vector<float> c(12);
  Operands<BFloat16> operands = randomOperands<BFloat16>(3, 4, 5, true, false);
  GemmArguments args = operands.args(c);
  EXPECT_EQ(gemmShapeKey(PP_DTYPE_F32, args), "TN 3x4x5");
  EXPECT_EQ(gemmShapeKey(PP_DTYPE_BF16, args), "bf16 TN 3x4x5");
}

TEST(Bf16Gemm, MeasuresEveryBf16EngineAndCachesTheChoicePerTypeAndShape) {
  std::string path = freshDirectory("pp-bf16-gemm") + "/cache.json";
  std::vector<float> c(64 * 48);
  Operands<BFloat16> operands = randomOperands<BFloat16>(64, 48, 32, false, true);
  GemmArguments args = operands.args(c);
  std::atomic<int> measured{0};
  auto choose = [&](pp_dtype dtype) {
    return GemmEngineCache(path, "machine A")
        .choose(gemmShapeKey(dtype, args), gemmEnginesFor(dtype), [&] {
          ++measured;
          return measureGemmEngines(dtype, args, GemmEngine::OneDnn);
        });
  };
  GemmEngine bf16 = choose(PP_DTYPE_BF16);
  // A later process reads the bf16 choice; f32 is a shape of its own.
  EXPECT_EQ(choose(PP_DTYPE_BF16), bf16);
  EXPECT_EQ(measured, 1);
  choose(PP_DTYPE_F32);
  EXPECT_EQ(measured, 2);
  nlohmann::json shapes = nlohmann::json::parse(readBytes(path))["shapes"];
  const nlohmann::json &entry = shapes["bf16 NT 64x48x32"];
  EXPECT_EQ(entry["engine"], gemmEngineName(bf16));
  for (GemmEngine engine : gemmEnginesFor(PP_DTYPE_BF16))
    EXPECT_GT(entry["gflops"][gemmEngineName(engine)].get<double>(), 0.0)
        << gemmEngineName(engine);
  EXPECT_EQ(shapes["NT 64x48x32"]["gflops"].size(), std::size(kGemmEngines));
}

TEST(Bf16Gemm, AProcessKeepsOneEnginePerTypeAndShape) {
  std::vector<float> c(16 * 8);
  Operands<BFloat16> operands = randomOperands<BFloat16>(16, 8, 24, false, false);
  GemmArguments args = operands.args(c);
  GemmEngine first = gemmEngineFor(PP_DTYPE_BF16, args);
  for (int call = 0; call < 3; ++call)
    EXPECT_EQ(gemmEngineFor(PP_DTYPE_BF16, args), first);
  // The bits are the same on every call.
  std::vector<BFloat16> once(16 * 8), again(16 * 8);
  for (std::vector<BFloat16> *out : {&once, &again})
    ASSERT_EQ(hostGemm(PP_DTYPE_BF16, false, false, 16, 8, 24,
                       operands.a.data(), 24, operands.b.data(), 8,
                       out->data(), 8),
              PP_OK);
  for (size_t index = 0; index < once.size(); ++index)
    EXPECT_EQ(once[index].bits, again[index].bits) << index;
}

TEST(Bf16Gemm, RejectsBadArgumentsAndOtherTypes) {
  std::vector<BFloat16> a(16), b(16), c(16);
  struct Case {
    pp_dtype dtype;
    int64_t lda;
    const char *message;
  } cases[] = {{PP_DTYPE_BF16, 3, "pp GEMM: lda = 3 is smaller"},
               {PP_DTYPE_I64, 4, "no kernel for i64"}};
  for (const Case &test : cases) {
    EXPECT_EQ(hostGemm(test.dtype, false, false, 2, 2, 4, a.data(), test.lda,
                       b.data(), 2, c.data(), 2),
              PP_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(pp_last_error()).find(test.message),
              std::string::npos)
        << pp_last_error();
  }
}

} // namespace
