//===- CudaBackendPlugin.h - the CUDA backend, loaded on demand -*- C++ -*-===//
//
// The CUDA libraries cost a rank about 150 MB of resident memory as soon as
// they are loaded (cuBLASLt's own initialization), so pp-rank does not link
// them: a rank with --device cuda loads libPPRankCuda.so, which does.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RANK_CUDABACKENDPLUGIN_H
#define PP_TOOLS_PP_RANK_CUDABACKENDPLUGIN_H

#include "runtime/cuda/CudaBackend.h"

/// The symbol libPPRankCuda.so exports: createCudaBackend(*rank), released
/// to the caller.
extern "C" pp::runtime::Backend *
ppRankCreateCudaBackend(const pp::runtime::CudaRank *rank);

/// The CUDA backend of `rank` from libPPRankCuda.so in the build's library
/// folder. Throws std::runtime_error saying how to get it when this build
/// has no CUDA or the library cannot be loaded.
std::unique_ptr<pp::runtime::Backend>
loadCudaBackend(const pp::runtime::CudaRank &rank);

#endif // PP_TOOLS_PP_RANK_CUDABACKENDPLUGIN_H
