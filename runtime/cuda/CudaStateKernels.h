//===- CudaStateKernels.h - a GPU's work on training state ------*- C++ -*-===//

#ifndef PP_RUNTIME_CUDA_CUDASTATEKERNELS_H
#define PP_RUNTIME_CUDA_CUDASTATEKERNELS_H

#include "runtime/training/StateKernels.h"

namespace pp::runtime {

/// The StateKernels of GPUs: CUDA kernels on the stream of the queue they
/// are given (a CUDA queue's), over device memory.
StateKernels &cudaStateKernels();

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_CUDASTATEKERNELS_H
