//===- CudaChecks.h - CUDA and NCCL failures as exceptions ------*- C++ -*-===//

#ifndef PP_RUNTIME_CUDA_CUDACHECKS_H
#define PP_RUNTIME_CUDA_CUDACHECKS_H

#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace pp::runtime {

/// Throws std::runtime_error naming `what` and the CUDA error unless
/// `error` is cudaSuccess.
inline void check(cudaError_t error, const std::string &what) {
  if (error != cudaSuccess)
    throw std::runtime_error(what + ": " + cudaGetErrorString(error));
}

/// Throws std::runtime_error naming `what` and the NCCL error unless
/// `result` is ncclSuccess.
inline void check(ncclResult_t result, const std::string &what) {
  if (result != ncclSuccess)
    throw std::runtime_error(what + ": " + ncclGetErrorString(result));
}

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_CUDACHECKS_H
