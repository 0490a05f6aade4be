//===- GemmArguments.cpp - GEMM argument checks -----------------*- C++ -*-===//

#include "runtime/kernels/GemmArguments.h"

#include "runtime/core/Error.h"

using namespace pp::runtime;

namespace {

/// Checks that a row-major operand stored `rows x cols` with row stride `ld`
/// is addressable. An empty operand accepts any non-negative stride.
pp_status checkOperand(const char *function, const char *name, const void *data,
                       int64_t rows, int64_t cols, int64_t ld) {
  bool empty = rows == 0 || cols == 0;
  if (ld < 0 || (!empty && ld < cols))
    return failWith(PP_ERROR_INVALID_ARGUMENT, function, ": ld", name, " = ",
                    ld, " is smaller than the ", cols,
                    " columns of the stored ", name, " (", rows, " x ", cols,
                    ")");
  if (!data && !empty)
    return failWith(PP_ERROR_INVALID_ARGUMENT, function, ": ", name,
                    " is NULL");
  return PP_OK;
}

} // namespace

pp_status pp::runtime::checkGemmArguments(const char *function,
                                          const GemmArguments &args,
                                          int64_t maxIndex) {
  if (args.m < 0 || args.n < 0 || args.k < 0)
    return failWith(PP_ERROR_INVALID_ARGUMENT, function, ": sizes m = ", args.m,
                    ", n = ", args.n, ", k = ", args.k,
                    " must not be negative");
  for (int64_t value : {args.m, args.n, args.k, args.lda, args.ldb, args.ldc})
    if (value > maxIndex)
      return failWith(PP_ERROR_INVALID_ARGUMENT, function,
                      ": size or "
                      "stride ",
                      value,
                      " exceeds the library's integer "
                      "range ",
                      maxIndex);
  if (pp_status status =
          checkOperand(function, "a", args.a, args.transA ? args.k : args.m,
                       args.transA ? args.m : args.k, args.lda))
    return status;
  if (pp_status status =
          checkOperand(function, "b", args.b, args.transB ? args.n : args.k,
                       args.transB ? args.k : args.n, args.ldb))
    return status;
  return checkOperand(function, "c", args.c, args.m, args.n, args.ldc);
}
