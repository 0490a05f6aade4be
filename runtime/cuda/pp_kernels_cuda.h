/*===- pp_kernels_cuda.h - device kernels for generated stage code -*- C -*-=*
 *
 * The pp_cuda_ twins of the host kernels in runtime/pp_kernels.h, on
 * device tensors: cuBLAS for matmul, one CUDA kernel per elementwise op,
 * deterministic reductions (no atomics). Each kernel runs on the frame's
 * queue (pp_frame_queue_handle: its stream), allocating its result in that
 * stream's order from the device's memory pool; a frame without a queue
 * uses the current GPU's default queue (runtime/cuda/CudaDevice.h).
 *
 *===----------------------------------------------------------------------===*/

#ifndef PP_RUNTIME_CUDA_PP_KERNELS_CUDA_H
#define PP_RUNTIME_CUDA_PP_KERNELS_CUDA_H

#include "runtime/pp_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device memory of the current GPU for pp_tensor_create_in, allocated and
 * freed in the order of its default queue (a stream the legacy default
 * stream synchronizes with); NULL, with pp_last_error set, without a GPU. */
const pp_allocator *pp_cuda_tensor_allocator(void);

/* 1 when the last kernel launch succeeded; else 0, with the error recorded
 * in `frame` under `kernel`. The kernels generated for an nn.fusion check
 * their launch with it. */
int pp_cuda_launched(pp_frame *frame, const char *kernel);

PP_DECLARE_KERNELS(pp_cuda_)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PP_RUNTIME_CUDA_PP_KERNELS_CUDA_H */
