//===- GemmEngineChoice.h - which engine runs a GEMM ------------*- C++ -*-===//
//
// A host GEMM's engine for an element type and a shape (dtype, transA,
// transB, m, n, k): the one pp_set_gemm_engine forces, else the fastest
// measured on this machine, the first time a process meets the type and
// shape, and kept in the GemmEngineCache file for every later process.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_GEMMENGINECHOICE_H
#define PP_RUNTIME_GEMM_GEMMENGINECHOICE_H

#include "runtime/kernels/gemm/GemmEngineCache.h"

namespace pp::runtime {

/// Makes every GEMM use the library `engine` (one of kGemmEngines); nothing
/// restores the measured choice. A bf16 or f16 GEMM uses it directly where
/// it has a kernel for the type (oneDNN for bf16), else widens its
/// operands to f32 and runs the library's SGEMM.
void forceGemmEngine(std::optional<GemmEngine> engine);

/// The engine for the shape of `args` (checked, m, n, k > 0), whose A and
/// B hold elements of `dtype` (f32, bf16 or f16).
GemmEngine gemmEngineFor(pp_dtype dtype, const GemmArguments &args);

/// "NT 64x1024x1024" for f32, "bf16 NT 64x1024x1024" for bf16: the element
/// type, transposes and sizes that key a choice.
std::string gemmShapeKey(pp_dtype dtype, const GemmArguments &args);

/// Times every engine of `dtype` (gemmEnginesFor) on the first panel of
/// `args` (its A and B, into scratch memory; C is left alone) on the
/// calling thread: a warm-up, then the best of three samples. The widened
/// engine's samples include widening the panel's operands, and run the
/// SGEMM library `sgemm`. An engine that fails is never the fastest.
GemmMeasurement measureGemmEngines(pp_dtype dtype, const GemmArguments &args,
                                   GemmEngine sgemm);

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_GEMMENGINECHOICE_H
