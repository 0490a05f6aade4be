//===- GemmEngineChoice.h - which engine runs a GEMM ------------*- C++ -*-===//
//
// pp_gemm_f32's engine for a shape (transA, transB, m, n, k): the one
// pp_set_gemm_engine forces, else the fastest measured on this machine, the
// first time a process meets the shape, and kept in the GemmEngineCache
// file for every later process.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_GEMMENGINECHOICE_H
#define PP_RUNTIME_GEMM_GEMMENGINECHOICE_H

#include "runtime/kernels/gemm/GemmEngineCache.h"

namespace pp::runtime {

/// Makes every GEMM use `engine`; nothing restores the measured choice.
void forceGemmEngine(std::optional<GemmEngine> engine);

/// The engine for the shape of `args` (checked, m, n, k > 0).
GemmEngine gemmEngineFor(const GemmArguments &args);

/// "NT 64x1024x1024": the transposes and sizes that key a choice.
std::string gemmShapeKey(const GemmArguments &args);

/// Times every engine on the first panel of `args` (its A and B, into
/// scratch memory; C is left alone) on the calling thread: a warm-up, then
/// the best of three samples.
GemmMeasurement measureGemmEngines(const GemmArguments &args);

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_GEMMENGINECHOICE_H
