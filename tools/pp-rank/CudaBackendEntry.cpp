//===- CudaBackendEntry.cpp - libPPRankCuda.so's entry point --------------===//

#include "tools/pp-rank/CudaBackendPlugin.h"

extern "C" pp::runtime::Backend *
ppRankCreateCudaBackend(const pp::runtime::CudaRank *rank) {
  return pp::runtime::createCudaBackend(*rank).release();
}
