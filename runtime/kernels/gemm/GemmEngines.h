//===- GemmEngines.h - the engines of the host's GEMMs ----------*- C++ -*-===//
//
// pp's own SGEMM (PackedGemm.h), oneDNN, OpenBLAS and BLIS behind one
// call. pp_gemm_f32 parallelizes the libraries over panels of C itself
// (GemmPanels.h), so each of them runs on one thread: its own threading
// would make results depend on the thread count. pp's own engine splits its
// work on the thread pool itself: its bits depend on k alone. A bf16 GEMM has
// two engines: oneDNN's bf16 kernel (dnnl_gemm_bf16bf16f32, f32 accumulation;
// emulated on CPUs without AVX-512 BF16), or its operands widened to f32
// (exactly) and the SGEMM measured for the shape. oneDNN has no f16 GEMM on
// CPUs: f16 is always widened.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_GEMMENGINES_H
#define PP_RUNTIME_GEMM_GEMMENGINES_H

#include "runtime/kernels/GemmArguments.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pp::runtime {

/// pp's own SGEMM, a GEMM library, or Widened: bf16 or f16 operands
/// widened to f32 and the SGEMM chosen for the shape.
enum class GemmEngine { OneDnn, OpenBlas, Blis, Packed, Widened };

/// The SGEMM engines (those of f32 GEMMs and those pp_set_gemm_engine
/// forces), in the order measurements try them (and break ties).
inline constexpr GemmEngine kGemmEngines[] = {
    GemmEngine::OneDnn, GemmEngine::OpenBlas, GemmEngine::Blis,
    GemmEngine::Packed};

/// The engines a GEMM over A and B of `dtype` may use, in the order
/// measurements try them (and break ties), the first one taken when
/// nothing is measured: f32 the libraries; bf16 widened, and oneDNN where
/// its bf16 kernel runs on this CPU; f16 widened. Empty for other dtypes.
const std::vector<GemmEngine> &gemmEnginesFor(pp_dtype dtype);

/// "onednn", "openblas", "blis", "pp" or "widen".
const char *gemmEngineName(GemmEngine engine);

/// The engine called `name`, or nothing.
std::optional<GemmEngine> parseGemmEngine(std::string_view name);

/// C = alpha * op(A) * op(B) + beta * C with `engine` on the calling
/// thread (pp's own on the thread pool too when `parallel`), A and B of
/// `dtype` (f32, or bf16 for oneDNN), C f32. `args` must have passed
/// checkGemmArguments and have m, n, k > 0. Records the error and returns
/// its status when the engine fails.
pp_status runGemmEngine(GemmEngine engine, pp_dtype dtype,
                        const GemmArguments &args, float alpha, float beta,
                        bool parallel = false);

/// The engines' versions ("oneDNN 2.6.3 ...; OpenBLAS ...; BLIS ...; pp
/// avx512"): part of the machine id under which choices are cached.
std::string gemmEngineVersions();

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_GEMMENGINES_H
