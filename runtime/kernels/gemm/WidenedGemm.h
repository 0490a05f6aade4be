//===- WidenedGemm.h - a bf16 or f16 GEMM's operands as f32 -----*- C++ -*-===//
//
// The widened engine of a bf16 or f16 GEMM: A and B converted (exactly) to
// dense f32 matrices, then multiplied by the SGEMM chosen for the shape.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_WIDENEDGEMM_H
#define PP_RUNTIME_GEMM_WIDENEDGEMM_H

#include "runtime/kernels/GemmArguments.h"

#include <vector>

namespace pp::runtime {

/// A and B of a GEMM widened to f32, and the GEMM's arguments over them.
struct WidenedGemm {
  std::vector<float> a, b;
  /// The GEMM with A and B replaced by the dense f32 copies; C unchanged.
  GemmArguments args;
};

/// Widens A and B of `args` (checked; elements of `dtype`, bf16 or f16).
WidenedGemm widenGemmOperands(pp_dtype dtype, const GemmArguments &args);

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_WIDENEDGEMM_H
