//===- PackedGemm.cpp - pp's own SGEMM ------------------------------------===//
//
// The loops, in the order of BLIS's with the roles of A and B swapped (the
// kernel's vectors run along C's rows, BLIS's along its columns): per block
// of mc rows and kc of op(A), packed once (it stays in the last level
// cache), each block of kc by nc columns of op(B) is packed (the second
// level cache) and the tiles run over it, one A sliver (the first level
// cache) against each B sliver in turn. Threads each take a part of C and
// run these loops on it alone, packing their own blocks: no thread waits
// for another until the end.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/gemm/PackedGemm.h"

#include "runtime/core/ThreadPool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

using namespace pp::runtime;

namespace {

/// Below this many multiply-adds a GEMM runs on the calling thread.
constexpr double kMinParallelWork = 2.0 * 1024 * 1024;

int64_t ceilDiv(int64_t value, int64_t divisor) {
  return (value + divisor - 1) / divisor;
}

/// A 64-byte aligned float buffer that keeps its largest size.
class PackBuffer {
public:
  float *reserve(int64_t count) {
    if (count > capacity) {
      size_t bytes = static_cast<size_t>(ceilDiv(count * 4, 64) * 64);
      values.reset(static_cast<float *>(std::aligned_alloc(64, bytes)));
      if (!values)
        throw std::bad_alloc();
      capacity = count;
    }
    return values.get();
  }

private:
  struct Free {
    void operator()(float *pointer) const { std::free(pointer); }
  };
  std::unique_ptr<float[], Free> values;
  int64_t capacity = 0;
};

/// A run of consecutive indices [begin, end).
struct Range {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};

/// Lines [lines.begin, lines.end) of an operand at k [ks.begin, ks.end)
/// packed into `out`: per sliver of `width` lines, kc rows of `width`
/// values (zero past the last line). Line l at k p is stored at
/// values[p * ld + l] when `kMajor`, else at values[l * ld + p]. The lines
/// of op(A) are its rows (k-major when A is transposed), those of op(B) its
/// columns (k-major unless B is transposed).
void packSlivers(const float *values, int64_t ld, bool kMajor, Range lines,
                 Range ks, int64_t width, float *out) {
  int64_t kc = ks.size();
  for (int64_t sliver = 0; sliver < ceilDiv(lines.size(), width); ++sliver) {
    float *dst = out + sliver * kc * width;
    int64_t first = lines.begin + sliver * width;
    int64_t count = std::min(width, lines.end - first);
    if (count < width)
      std::memset(dst, 0, sizeof(float) * kc * width);
    if (kMajor) {
      // A sliver's values at one k are adjacent.
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(dst + p * width, values + (ks.begin + p) * ld + first,
                    sizeof(float) * count);
    } else {
      for (int64_t line = 0; line < count; ++line) {
        const float *source = values + (first + line) * ld + ks.begin;
        for (int64_t p = 0; p < kc; ++p)
          dst[p * width + line] = source[p];
      }
    }
  }
}

/// Run `index` of `total` split into `parts` runs of whole `unit`s (but
/// the last unit) whose unit counts differ by at most one.
Range splitRange(int64_t total, int64_t parts, int64_t unit, int64_t index) {
  int64_t units = ceilDiv(total, unit);
  return {std::min(total, units * index / parts * unit),
          std::min(total, units * (index + 1) / parts * unit)};
}

/// The GEMM `args` on the calling thread, block by block.
void runBlocks(const PackedGemmKernel &kernel, const GemmArguments &args,
               float alpha, float beta) {
  thread_local PackBuffer aBuffer, bBuffer;
  int64_t mr = kernel.mr, nr = kernel.nr;
  int64_t rowBlocks = ceilDiv(args.m, kernel.mc);
  int64_t colBlocks = ceilDiv(args.n, kernel.nc);
  float *c = static_cast<float *>(args.c);
  for (int64_t rowBlock = 0; rowBlock < rowBlocks; ++rowBlock) {
    Range rows = splitRange(args.m, rowBlocks, mr, rowBlock);
    int64_t slivers = ceilDiv(rows.size(), mr);
    for (int64_t kBegin = 0; kBegin < args.k; kBegin += kernel.kc) {
      Range ks{kBegin, std::min(args.k, kBegin + kernel.kc)};
      int64_t kc = ks.size();
      float *packedA = aBuffer.reserve(slivers * mr * kc);
      packSlivers(static_cast<const float *>(args.a), args.lda, args.transA,
                  rows, ks, mr, packedA);
      for (int64_t colBlock = 0; colBlock < colBlocks; ++colBlock) {
        Range cols = splitRange(args.n, colBlocks, nr, colBlock);
        float *packedB = bBuffer.reserve(ceilDiv(cols.size(), nr) * nr * kc);
        packSlivers(static_cast<const float *>(args.b), args.ldb, !args.transB,
                    cols, ks, nr, packedB);
        // One A sliver (in the first level cache) against each B sliver.
        for (int64_t row = rows.begin; row < rows.end; row += mr)
          for (int64_t col = cols.begin; col < cols.end; col += nr)
            kernel.tile(
                kc, packedA + (row - rows.begin) * kc,
                packedB + (col - cols.begin) * kc, c + row * args.ldc + col,
                args.ldc, std::min(mr, rows.end - row),
                std::min(nr, cols.end - col), alpha, beta, ks.begin == 0);
      }
    }
  }
}

/// The part of the GEMM `args` that computes C's rows `rows` and columns
/// `cols`: the same GEMM over offsets into A, B and C.
GemmArguments subGemm(const GemmArguments &args, Range rows, Range cols) {
  GemmArguments part = args;
  part.m = rows.size();
  part.n = cols.size();
  part.a = static_cast<const float *>(args.a) +
           (args.transA ? rows.begin : rows.begin * args.lda);
  part.b = static_cast<const float *>(args.b) +
           (args.transB ? cols.begin * args.ldb : cols.begin);
  part.c = static_cast<float *>(args.c) + rows.begin * args.ldc + cols.begin;
  return part;
}

} // namespace

const std::vector<const PackedGemmKernel *> &pp::runtime::packedGemmKernels() {
  static const std::vector<const PackedGemmKernel *> kernels = [] {
    std::vector<const PackedGemmKernel *> available;
    for (const PackedGemmKernel *kernel :
         {avx512GemmKernel(), avx2GemmKernel()})
      if (kernel)
        available.push_back(kernel);
    available.push_back(&portableGemmKernel());
    return available;
  }();
  return kernels;
}

void pp::runtime::runPackedGemm(const PackedGemmKernel &kernel,
                                const GemmArguments &args, float alpha,
                                float beta, bool parallel) {
  int64_t threads = parallel ? threadCount() : 1;
  double work = static_cast<double>(args.m) * static_cast<double>(args.n) *
                static_cast<double>(args.k);
  if (threads == 1 || work < kMinParallelWork) {
    runBlocks(kernel, args, alpha, beta);
    return;
  }
  // One part of C per thread. A part of C's rows packs all of op(B) and
  // a part of its columns all of op(A): split the rows when op(B) is the
  // smaller (n <= m), unless only the columns have a tile per thread.
  int64_t rowTiles = ceilDiv(args.m, kernel.mr);
  int64_t colTiles = ceilDiv(args.n, kernel.nr);
  bool rowsSplit = rowTiles >= threads, colsSplit = colTiles >= threads;
  bool byRows = rowsSplit && colsSplit ? args.n <= args.m
                                       : rowsSplit || rowTiles >= colTiles;
  int64_t parts = std::min(threads, byRows ? rowTiles : colTiles);
  parallelFor(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      Range part = byRows ? splitRange(args.m, parts, kernel.mr, index)
                          : splitRange(args.n, parts, kernel.nr, index);
      runBlocks(kernel,
                byRows ? subGemm(args, part, {0, args.n})
                       : subGemm(args, {0, args.m}, part),
                alpha, beta);
    }
  });
}
