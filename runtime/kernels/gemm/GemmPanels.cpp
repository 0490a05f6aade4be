//===- GemmPanels.cpp - a GEMM split into panels of C ---------------------===//

#include "runtime/kernels/gemm/GemmPanels.h"

#include "runtime/core/Error.h"
#include "runtime/core/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <string>

using namespace pp::runtime;

namespace {

/// Below this many multiply-adds a GEMM is one panel.
constexpr double kMinParallelWork = 2.0 * 1024 * 1024;
/// The largest panel side.
constexpr int64_t kPanelSide = 256;

int64_t ceilDiv(int64_t value, int64_t divisor) {
  return (value + divisor - 1) / divisor;
}

} // namespace

GemmPanels pp::runtime::planGemmPanels(int64_t m, int64_t n, int64_t k) {
  double work = static_cast<double>(m) * static_cast<double>(n) *
                static_cast<double>(k);
  if (work < kMinParallelWork)
    return {m, n, 1, 1};
  int64_t rows = std::min(m, kPanelSide), cols = std::min(n, kPanelSide);
  return {rows, cols, ceilDiv(m, rows), ceilDiv(n, cols)};
}

GemmArguments pp::runtime::gemmPanel(pp_dtype dtype, const GemmArguments &args,
                                     const GemmPanels &panels, int64_t index) {
  int64_t row = index / panels.colPanels * panels.rows;
  int64_t col = index % panels.colPanels * panels.cols;
  GemmArguments panel = args;
  panel.m = std::min(panels.rows, args.m - row);
  panel.n = std::min(panels.cols, args.n - col);
  // Rows of op(A) are rows of A, or columns of A when transposed; columns
  // of op(B) likewise.
  int64_t element = static_cast<int64_t>(pp_dtype_size(dtype));
  panel.a = static_cast<const char *>(args.a) +
            (args.transA ? row : row * args.lda) * element;
  panel.b = static_cast<const char *>(args.b) +
            (args.transB ? col * args.ldb : col) * element;
  panel.c = static_cast<float *>(args.c) + row * args.ldc + col;
  return panel;
}

pp_status pp::runtime::runGemmPanels(GemmEngine engine, pp_dtype dtype,
                                     const GemmArguments &args, float alpha,
                                     float beta, bool parallel) {
  GemmPanels panels = planGemmPanels(args.m, args.n, args.k);
  // pp's own engine splits the work itself.
  if (engine == GemmEngine::Packed)
    return runGemmEngine(engine, dtype, args, alpha, beta, parallel);
  if (panels.count() == 1)
    return runGemmEngine(engine, dtype, args, alpha, beta);
  // Errors are recorded per thread: the first failing panel passes its
  // message to the caller's thread.
  std::atomic<bool> failed{false};
  std::string message;
  pp_status failure = PP_OK;
  auto runPanel = [&](int64_t index) {
    pp_status status = runGemmEngine(
        engine, dtype, gemmPanel(dtype, args, panels, index), alpha, beta);
    if (status != PP_OK && !failed.exchange(true)) {
      failure = status;
      message = pp_last_error();
    }
  };
  if (parallel)
    parallelFor(panels.count(), 1,
                [&](int64_t index, int64_t) { runPanel(index); });
  else
    for (int64_t index = 0; index < panels.count(); ++index)
      runPanel(index);
  return failed ? fail(failure, message) : PP_OK;
}
