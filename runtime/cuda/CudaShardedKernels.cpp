//===- CudaShardedKernels.cpp - device twins of the collective kernels ----===//
//
// The pp_cuda_ kernels of tensor parallelism (all_reduce, all_gather,
// reduce_scatter, shard_slice, sharded gather and cross-entropy) stage
// through host memory: they copy their device tensors to the host, run the
// host kernel (runtime/kernels/CpuShardedKernels.cpp) over the same group
// (frame->collectives), and copy its result back, so that both targets
// compute the same bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/pp_kernels_cuda.h"

#include "runtime/core/Error.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <string>

using namespace pp::runtime;

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using OwnedTensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A copy of `tensor` in `allocator`'s memory (host memory for null),
/// copied as `direction` says; null with the error recorded in `frame`.
OwnedTensor copyTensor(pp_frame *frame, const char *kernel, pp_tensor *tensor,
                       const pp_allocator *allocator,
                       cudaMemcpyKind direction) {
  pp_tensor *copy = nullptr;
  Shape shape = shapeOf(tensor);
  pp_status status =
      allocator ? pp_tensor_create_in(allocator, pp_tensor_dtype(tensor),
                                      pp_tensor_rank(tensor), shape.data(),
                                      &copy)
                : pp_tensor_create(pp_tensor_dtype(tensor),
                                   pp_tensor_rank(tensor), shape.data(), &copy);
  if (status != PP_OK) {
    failFrame(frame, std::string(kernel) + ": " + pp_last_error());
    return nullptr;
  }
  OwnedTensor owned(copy);
  size_t bytes = pp_tensor_nbytes(tensor);
  if (bytes > 0 && cudaMemcpy(pp_tensor_data(copy), pp_tensor_data(tensor),
                              bytes, direction) != cudaSuccess) {
    failFrame(frame, std::string(kernel) + ": cudaMemcpy failed");
    return nullptr;
  }
  return owned;
}

/// `host(hostFrame, hostInputs)` on host copies of the device tensors
/// `inputs`, with a frame over `frame`'s group, and its result copied to the
/// device; null after an earlier failure or with the error recorded.
template <size_t N, typename HostKernel>
pp_tensor *throughHost(pp_frame *frame, const char *kernel,
                       const std::array<pp_tensor *, N> &inputs,
                       HostKernel host) {
  std::array<OwnedTensor, N> owned;
  std::array<pp_tensor *, N> hostInputs{};
  for (size_t i = 0; i < N; ++i) {
    if (!inputs[i])
      return nullptr; // An earlier call failed and said why.
    owned[i] = copyTensor(frame, kernel, inputs[i], nullptr,
                          cudaMemcpyDeviceToHost);
    if (!owned[i])
      return nullptr;
    hostInputs[i] = owned[i].get();
  }
  pp_frame hostFrame;
  hostFrame.collectives = frame->collectives;
  OwnedTensor result(host(&hostFrame, hostInputs));
  if (!hostFrame.error.empty())
    failFrame(frame, hostFrame.error);
  if (!result)
    return nullptr;
  return copyTensor(frame, kernel, result.get(), pp_cuda_tensor_allocator(),
                    cudaMemcpyHostToDevice)
      .release();
}

} // namespace

extern "C" {

pp_tensor *pp_cuda_all_reduce(pp_frame *frame, pp_tensor *input,
                              int reduction) {
  return throughHost<1>(frame, "all_reduce", {input},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_all_reduce(host, in[0], reduction);
                        });
}

pp_tensor *pp_cuda_all_gather(pp_frame *frame, pp_tensor *input,
                              int64_t blocks, int64_t dim) {
  return throughHost<1>(frame, "all_gather", {input},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_all_gather(host, in[0], blocks, dim);
                        });
}

pp_tensor *pp_cuda_reduce_scatter(pp_frame *frame, pp_tensor *input,
                                  int64_t blocks, int64_t dim,
                                  int reduction) {
  return throughHost<1>(frame, "reduce_scatter", {input},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_reduce_scatter(host, in[0], blocks,
                                                       dim, reduction);
                        });
}

pp_tensor *pp_cuda_shard_slice(pp_frame *frame, pp_tensor *input,
                               int64_t blocks, int64_t dim) {
  return throughHost<1>(frame, "shard_slice", {input},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_shard_slice(host, in[0], blocks, dim);
                        });
}

pp_tensor *pp_cuda_sharded_gather(pp_frame *frame, pp_tensor *data,
                                  pp_tensor *indices, int64_t axis) {
  return throughHost<2>(frame, "sharded_gather", {data, indices},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_sharded_gather(host, in[0], in[1],
                                                       axis);
                        });
}

pp_tensor *pp_cuda_sharded_gather_grad(pp_frame *frame, pp_tensor *grad,
                                       pp_tensor *indices, int64_t axis,
                                       int64_t data_shape_count,
                                       const int64_t *data_shape) {
  return throughHost<2>(
      frame, "sharded_gather_grad", {grad, indices},
      [&](pp_frame *host, auto &in) {
        return pp_cpu_sharded_gather_grad(host, in[0], in[1], axis,
                                          data_shape_count, data_shape);
      });
}

pp_tensor *pp_cuda_sharded_cross_entropy(pp_frame *frame, pp_tensor *logits,
                                         pp_tensor *labels,
                                         int64_t ignore_index) {
  return throughHost<2>(frame, "sharded_cross_entropy", {logits, labels},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_sharded_cross_entropy(
                              host, in[0], in[1], ignore_index);
                        });
}

pp_tensor *pp_cuda_sharded_cross_entropy_grad(pp_frame *frame,
                                              pp_tensor *grad,
                                              pp_tensor *logits,
                                              pp_tensor *labels,
                                              int64_t ignore_index) {
  return throughHost<3>(frame, "sharded_cross_entropy_grad",
                        {grad, logits, labels},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_sharded_cross_entropy_grad(
                              host, in[0], in[1], in[2], ignore_index);
                        });
}

} // extern "C"
