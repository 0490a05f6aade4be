//===- PackedGemm.h - pp's own SGEMM ----------------------------*- C++ -*-===//
//
// The GEMM engine "pp": blocks of op(A) and op(B) packed into the layouts
// the microkernel reads (PackedGemmKernel.h), transposes folded into the
// packing, the k blocks in order and the tiles of each block on the thread
// pool. Since a C element's bits depend on k alone, the engine splits the
// work however suits the shape and the threads: B is packed once per block
// for all of C's rows, not once per panel of C.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_PACKEDGEMM_H
#define PP_RUNTIME_GEMM_PACKEDGEMM_H

#include "runtime/kernels/GemmArguments.h"
#include "runtime/kernels/gemm/PackedGemmKernel.h"

#include <vector>

namespace pp::runtime {

/// The kernels this CPU runs, fastest first (the portable one last).
const std::vector<const PackedGemmKernel *> &packedGemmKernels();

/// C = alpha * op(A) * op(B) + beta * C over f32 `args` (checked, m, n,
/// k > 0) with `kernel`: on the thread pool when `parallel`, else on the
/// calling thread. beta 0 overwrites C whatever it held.
void runPackedGemm(const PackedGemmKernel &kernel, const GemmArguments &args,
                   float alpha, float beta, bool parallel);

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_PACKEDGEMM_H
