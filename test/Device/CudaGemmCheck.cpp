//===- CudaGemmCheck.cpp - cuBLAS GEMM against OpenBLAS ---------*- C++ -*-===//
//
// Needs a GPU, so it is not part of the lit suites (CI has none): run
// build/test/Device/PPCudaGemmCheck on a GPU machine. Prints one line per
// case and exits non-zero on any mismatch or CUDA failure.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/pp_runtime_cuda.h"

#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <random>
#include <vector>

namespace {

/// Runs one row-major GEMM (no padding) on the GPU and on the CPU and returns
/// the largest absolute difference, or a negative value on failure.
double compare(bool transA, bool transB, int64_t m, int64_t n, int64_t k) {
  std::mt19937 rng(static_cast<unsigned>(m * 7 + n * 3 + k));
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> a(m * k), b(k * n), c(m * n), gpu(m * n);
  for (std::vector<float> *values : {&a, &b, &c})
    for (float &value : *values)
      value = dist(rng);
  int64_t lda = transA ? m : k, ldb = transB ? k : n;
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  size_t bytesA = a.size() * 4, bytesB = b.size() * 4, bytesC = c.size() * 4;
  if (cudaMalloc(&da, bytesA) != cudaSuccess ||
      cudaMalloc(&db, bytesB) != cudaSuccess ||
      cudaMalloc(&dc, bytesC) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed: no usable GPU?\n");
    cudaFree(da);
    cudaFree(db);
    return -1;
  }
  cudaMemcpy(da, a.data(), bytesA, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), bytesB, cudaMemcpyHostToDevice);
  cudaMemcpy(dc, c.data(), bytesC, cudaMemcpyHostToDevice);
  pp_status gpuStatus = pp_cuda_gemm_f32(transA, transB, m, n, k, 1.5f, da, lda,
                                         db, ldb, 0.5f, dc, n);
  cudaMemcpy(gpu.data(), dc, bytesC, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  if (gpuStatus != PP_OK ||
      pp_gemm_f32(transA, transB, m, n, k, 1.5f, a.data(), lda, b.data(), ldb,
                  0.5f, c.data(), n) != PP_OK) {
    std::fprintf(stderr, "%s\n", pp_last_error());
    return -1;
  }
  double worst = 0;
  for (size_t i = 0; i < c.size(); ++i)
    worst = std::fmax(worst, std::fabs(double(c[i]) - double(gpu[i])));
  return worst;
}

} // namespace

int main() {
  struct Case {
    bool transA, transB;
    int64_t m, n, k;
  };
  const Case cases[] = {{false, false, 7, 5, 3},
                        {true, false, 33, 17, 65},
                        {false, true, 64, 128, 256},
                        {true, true, 129, 31, 257},
                        {false, false, 1024, 1024, 1024}};
  int failures = 0;
  for (const Case &c : cases) {
    double worst = compare(c.transA, c.transB, c.m, c.n, c.k);
    // TF32 is off by default for cublasSgemm; allow float accumulation error.
    double tolerance = 8.0 * c.k * 1.2e-7;
    bool ok = worst >= 0 && worst <= tolerance;
    failures += !ok;
    std::printf("%s transA=%d transB=%d m=%ld n=%ld k=%ld max|diff|=%g\n",
                ok ? "PASS" : "FAIL", c.transA, c.transB, long(c.m), long(c.n),
                long(c.k), worst);
  }
  return failures == 0 ? 0 : 1;
}
