//===- PortableGemmKernel.cpp - pp's SGEMM tile in plain C++ --------------===//
//
// A 4 x 16 tile of C that any CPU runs. Its product and sum round apart
// (the runtime compiles without contraction), one term at a time in order
// of k at every position of the tile, so edges and full tiles agree here
// too.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/gemm/PackedGemmKernel.h"

using namespace pp::runtime;

namespace {

constexpr int kRows = 4;
constexpr int kCols = 16;

void portableTile(int64_t kc, const float *a, const float *b, float *c,
                  int64_t ldc, int64_t rows, int64_t cols, float alpha,
                  float beta, bool firstBlock) {
  float acc[kRows][kCols] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int r = 0; r < kRows; ++r)
      for (int j = 0; j < kCols; ++j)
        acc[r][j] += a[r] * b[j];
    a += kRows;
    b += kCols;
  }
  bool overwrite = firstBlock && beta == 0.0f;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float &out = c[r * ldc + j];
      float scaled = alpha * acc[r][j];
      out = overwrite ? scaled : scaled + (firstBlock ? beta * out : out);
    }
}

} // namespace

const PackedGemmKernel &pp::runtime::portableGemmKernel() {
  static const PackedGemmKernel kernel{"portable",  kRows,       kCols,
                                       /*kc=*/256,  /*mc=*/64,
                                       /*nc=*/2048, portableTile};
  return kernel;
}
