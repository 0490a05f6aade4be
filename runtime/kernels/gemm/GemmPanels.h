//===- GemmPanels.h - a GEMM split into panels of C -------------*- C++ -*-===//
//
// pp_gemm_f32 computes C as a grid of panels, each one single-threaded
// engine call over the whole k, that the thread pool runs at once. The grid
// is a function of (m, n, k) only, so a GEMM gives the same bits at any
// thread count.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_GEMMPANELS_H
#define PP_RUNTIME_GEMM_GEMMPANELS_H

#include "runtime/kernels/gemm/GemmEngines.h"

namespace pp::runtime {

/// C split into `rowPanels x colPanels` panels of `rows x cols` (the last
/// row and column of panels may be smaller).
struct GemmPanels {
  int64_t rows, cols, rowPanels, colPanels;
  int64_t count() const { return rowPanels * colPanels; }
};

/// The panels of an m x n x k GEMM: one panel below about two million
/// multiply-adds (threads would cost more than they give), else panels of
/// at most 256 x 256.
GemmPanels planGemmPanels(int64_t m, int64_t n, int64_t k);

/// The arguments of panel `index` (row-major over the grid) of `args`,
/// whose A and B hold elements of `dtype` and C f32.
GemmArguments gemmPanel(pp_dtype dtype, const GemmArguments &args,
                        const GemmPanels &panels, int64_t index);

/// Runs `args` (checked, m, n, k > 0; A and B of `dtype`, C f32) with the
/// library `engine` panel by panel (pp's own engine: whole, split its own
/// way): on the thread pool when `parallel`, else on the calling thread.
pp_status runGemmPanels(GemmEngine engine, pp_dtype dtype,
                        const GemmArguments &args, float alpha, float beta,
                        bool parallel);

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_GEMMPANELS_H
