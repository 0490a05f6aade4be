//===- CudaBackend.h - stage functions on a GPU, messages over NCCL -*- C++
//-*-===//

#ifndef PP_RUNTIME_CUDA_CUDABACKEND_H
#define PP_RUNTIME_CUDA_CUDABACKEND_H

#include "runtime/training/Backend.h"

namespace pp::runtime {

/// Runs the stage functions of libstages_cuda.so on GPU `localRank` modulo
/// the visible devices, with NCCL between the ranks' GPUs (two
/// communicators: messages to later stages and messages to earlier ones,
/// each in schedule order on its own stream, so that they never wait on
/// each other). `pipeline` is the rank's pipeline group (its ranks are the
/// stages): the NCCL communicators span it and its ids travel over it.
std::unique_ptr<Backend> createCudaBackend(Communicator &pipeline,
                                           int localRank);

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_CUDABACKEND_H
