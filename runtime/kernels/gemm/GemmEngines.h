//===- GemmEngines.h - the CPU SGEMM libraries pp_gemm_f32 uses -*- C++ -*-===//
//
// oneDNN, OpenBLAS and BLIS behind one single-threaded call. pp_gemm_f32
// parallelizes over panels of C itself (GemmPanels.h), so every engine
// runs on one thread: its own threading would make results depend on the
// thread count.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_GEMMENGINES_H
#define PP_RUNTIME_GEMM_GEMMENGINES_H

#include "runtime/kernels/GemmArguments.h"

#include <optional>
#include <string>
#include <string_view>

namespace pp::runtime {

enum class GemmEngine { OneDnn, OpenBlas, Blis };

/// Every engine, in the order measurements try them (and break ties).
inline constexpr GemmEngine kGemmEngines[] = {
    GemmEngine::OneDnn, GemmEngine::OpenBlas, GemmEngine::Blis};

/// "onednn", "openblas" or "blis".
const char *gemmEngineName(GemmEngine engine);

/// The engine called `name`, or nothing.
std::optional<GemmEngine> parseGemmEngine(std::string_view name);

/// C = alpha * op(A) * op(B) + beta * C with `engine` on the calling thread.
/// `args` must have passed checkGemmArguments and have m, n, k > 0. Records
/// the error and returns its status when the library fails.
pp_status runGemmEngine(GemmEngine engine, const GemmArguments &args,
                        float alpha, float beta);

/// The engine libraries' versions ("oneDNN 2.6.3 ...; OpenBLAS ...; BLIS
/// ..."): part of the machine id under which choices are cached.
std::string gemmEngineVersions();

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_GEMMENGINES_H
