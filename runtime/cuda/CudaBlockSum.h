//===- CudaBlockSum.h - a block's deterministic sum -------------*- C++ -*-===//
//
// The reduction the CUDA kernels share: one block adds its threads' values
// in a fixed tree in shared memory, with no atomics, so a sum has the same
// bits every run.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CUDA_CUDABLOCKSUM_H
#define PP_RUNTIME_CUDA_CUDABLOCKSUM_H

namespace pp::runtime::cuda {

/// The sum of every thread's `value` in a block of `Threads` threads (a
/// power of two), added in a fixed tree, so the same bits every run; every
/// thread gets it. Every thread of the block calls it.
template <int Threads> __device__ double blockSum(double value) {
  __shared__ double partial[Threads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int stride = Threads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  double sum = partial[0];
  // No thread refills the array before every thread has read the sum.
  __syncthreads();
  return sum;
}

} // namespace pp::runtime::cuda

#endif // PP_RUNTIME_CUDA_CUDABLOCKSUM_H
