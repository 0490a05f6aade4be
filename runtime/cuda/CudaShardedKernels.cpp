//===- CudaShardedKernels.cpp - device twins of the collective kernels ----===//
//
// The pp_cuda_ kernels of tensor parallelism. all_reduce, all_gather and
// reduce_scatter gather every device's tensor on the device when the
// frame's group reaches the GPU (CollectiveGroup::reaches: NCCL), then
// combine it as the host kernels do (CollectivePlans.h: the same layouts,
// sums in group order in double): every device gets the same bits, which
// are the host kernels' bits. shard_slice needs no exchange and copies on
// the device. The sharded gather and cross-entropy kernels, and the three
// collectives where the group gathers host memory only, stage through host
// memory: they copy their device tensors to the host, run the host kernel
// (runtime/kernels/CpuShardedKernels.cpp) over the same group, and copy its
// result back.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/pp_kernels_cuda.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/CudaCollectiveKernels.h"
#include "runtime/cuda/CudaFrame.h"
#include "runtime/kernels/CollectivePlans.h"
#include "runtime/kernels/Frame.h"

#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <stdexcept>
#include <string>

using namespace pp::runtime;
using namespace pp::runtime::cuda;

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using OwnedTensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A copy of device tensor `tensor` in host memory (`toHost`), or of host
/// tensor `tensor` on the device of the frame's kernel queue, copied in that
/// queue's order; null with the error recorded in `frame`.
OwnedTensor copyTensor(pp_frame *frame, const char *kernel, pp_tensor *tensor,
                       bool toHost) {
  Shape shape = shapeOf(tensor);
  pp_dtype dtype = pp_tensor_dtype(tensor);
  pp_tensor *copy = nullptr;
  if (!toHost) {
    copy = newDeviceTensor(frame, dtype, shape);
  } else if (pp_tensor_create(dtype, pp_tensor_rank(tensor), shape.data(),
                              &copy) != PP_OK) {
    failFrame(frame, std::string(kernel) + ": " + pp_last_error());
  }
  if (!copy)
    return nullptr;
  OwnedTensor owned(copy);
  size_t bytes = pp_tensor_nbytes(tensor);
  cudaStream_t stream = kernelStream(frame);
  if (bytes > 0 &&
      (cudaMemcpyAsync(pp_tensor_data(copy), pp_tensor_data(tensor), bytes,
                       cudaMemcpyDefault, stream) != cudaSuccess ||
       (toHost && cudaStreamSynchronize(stream) != cudaSuccess))) {
    failFrame(frame, std::string(kernel) + ": cudaMemcpyAsync failed");
    return nullptr;
  }
  return owned;
}

/// `host(hostFrame, hostInputs)` on host copies of the device tensors
/// `inputs`, with a frame over `frame`'s groups, and its result copied to the
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
    owned[i] = copyTensor(frame, kernel, inputs[i], /*toHost=*/true);
    if (!owned[i])
      return nullptr;
    hostInputs[i] = owned[i].get();
  }
  pp_frame hostFrame;
  hostFrame.collectiveGroups = frame->collectiveGroups;
  hostFrame.collectives = frame->collectives;
  OwnedTensor result(host(&hostFrame, hostInputs));
  if (!hostFrame.error.empty())
    failFrame(frame, hostFrame.error);
  if (!result)
    return nullptr;
  return copyTensor(frame, kernel, result.get(), /*toHost=*/false).release();
}

/// Every device's `input` (a device tensor), stacked in group order as
/// [devices, input's shape], gathered over `group` on the device; null with
/// `hostOnly` set where the group gathers host memory only, or with the
/// error recorded.
OwnedTensor gatherOnDevice(pp_frame *frame, const char *kernel,
                           CollectiveGroup &group, pp_tensor *input,
                           bool &hostOnly) {
  Queue *queue = kernelQueue(frame);
  if (!queue)
    return nullptr;
  hostOnly = !group.reaches(queue->device());
  if (hostOnly)
    return nullptr;
  Shape stacked = shapeOf(input);
  stacked.insert(stacked.begin(), group.size());
  pp_tensor *all = newDeviceTensor(frame, pp_tensor_dtype(input), stacked);
  if (!all)
    return nullptr;
  OwnedTensor gathered(all);
  try {
    group.allGather(pp_tensor_data(input), pp_tensor_nbytes(input),
                    pp_tensor_data(all), *queue);
  } catch (const std::exception &error) {
    failFrame(frame, std::string(kernel) + ": " + error.what());
    return nullptr;
  }
  return gathered;
}

/// A collective of device tensor `input` over the frame's group of `axes`:
/// `plan(group)` checks the arguments (false, with the error recorded,
/// stops), then `combine(gathered, group)` makes the result from every
/// device's `input` gathered on the device (gatherOnDevice); where the
/// group gathers host memory only, `staged()` makes it through the host.
template <typename Plan, typename Combine, typename Staged>
pp_tensor *collective(pp_frame *frame, const char *kernel, pp_tensor *input,
                      const char *axes, Plan plan, Combine combine,
                      Staged staged) {
  CollectiveGroup *group =
      input ? collectiveGroup(frame, kernel, axes) : nullptr;
  if (!group || !plan(*group))
    return nullptr;
  bool hostOnly = false;
  OwnedTensor gathered = gatherOnDevice(frame, kernel, *group, input, hostOnly);
  if (hostOnly)
    return staged();
  return gathered ? combine(gathered.get(), *group) : nullptr;
}

/// all_reduce (without `scatter`) or reduce_scatter of `input`, as
/// pp_cpu_all_reduce and pp_cpu_reduce_scatter compute it.
pp_tensor *reduceCollective(pp_frame *frame, const char *kernel,
                            pp_tensor *input, const char *axes, int reduction,
                            bool scatter, int64_t blocks = 1,
                            int64_t dim = 0) {
  std::optional<ShardLayout> layout;
  Shape whole = input ? shapeOf(input) : Shape();
  auto plan = [&](CollectiveGroup &group) {
    if (!checkReduceInput(frame, kernel, input, reduction))
      return false;
    layout = scatter
                 ? shardLayout(frame, kernel, whole, dim, blocks, group.size())
                 : ShardLayout{1, 1, 1, pp_tensor_numel(input)};
    return layout.has_value();
  };
  auto combine = [&](pp_tensor *gathered, CollectiveGroup &group) {
    int64_t devices = scatter ? group.size() : 1;
    return reduceGathered(frame, kernel, gathered,
                          layout->piece(scatter ? group.rank() : 0),
                          scaledShape(whole, dim, 1, devices), reduction);
  };
  auto staged = [&] {
    return throughHost<1>(
        frame, kernel, {input}, [&](pp_frame *host, auto &in) {
          return scatter ? pp_cpu_reduce_scatter(host, in[0], axes, blocks,
                                                 dim, reduction)
                         : pp_cpu_all_reduce(host, in[0], axes, reduction);
        });
  };
  return collective(frame, kernel, input, axes, plan, combine, staged);
}

} // namespace

extern "C" {

pp_tensor *pp_cuda_all_reduce(pp_frame *frame, pp_tensor *input,
                              const char *axes, int reduction) {
  return reduceCollective(frame, "all_reduce", input, axes, reduction,
                          /*scatter=*/false);
}

pp_tensor *pp_cuda_all_gather(pp_frame *frame, pp_tensor *input,
                              const char *axes, int64_t blocks, int64_t dim) {
  const char *kernel = "all_gather";
  std::optional<ShardLayout> layout;
  Shape whole;
  auto plan = [&](CollectiveGroup &group) {
    whole = scaledShape(shapeOf(input), dim, group.size());
    layout = shardLayout(frame, kernel, whole, dim, blocks, group.size());
    return layout.has_value();
  };
  auto combine = [&](pp_tensor *gathered, CollectiveGroup &) {
    return copyOnDevice(frame, kernel, layout->assemble(), gathered, whole);
  };
  auto staged = [&] {
    return throughHost<1>(frame, kernel, {input},
                          [&](pp_frame *host, auto &in) {
                            return pp_cpu_all_gather(host, in[0], axes, blocks,
                                                     dim);
                          });
  };
  return collective(frame, kernel, input, axes, plan, combine, staged);
}

pp_tensor *pp_cuda_reduce_scatter(pp_frame *frame, pp_tensor *input,
                                  const char *axes, int64_t blocks, int64_t dim,
                                  int reduction) {
  return reduceCollective(frame, "reduce_scatter", input, axes, reduction,
                          /*scatter=*/true, blocks, dim);
}

pp_tensor *pp_cuda_shard_slice(pp_frame *frame, pp_tensor *input,
                               const char *axes, int64_t blocks, int64_t dim) {
  std::optional<ShardCopy> slice =
      shardSliceCopy(frame, input, axes, blocks, dim);
  return slice ? copyOnDevice(frame, "shard_slice", slice->copy, input,
                              slice->shape)
               : nullptr;
}

pp_tensor *pp_cuda_sharded_gather(pp_frame *frame, pp_tensor *data,
                                  pp_tensor *indices, const char *axes,
                                  int64_t axis) {
  return throughHost<2>(
      frame, "sharded_gather", {data, indices}, [&](pp_frame *host, auto &in) {
        return pp_cpu_sharded_gather(host, in[0], in[1], axes, axis);
      });
}

pp_tensor *pp_cuda_sharded_gather_grad(pp_frame *frame, pp_tensor *grad,
                                       pp_tensor *indices, const char *axes,
                                       int64_t axis, int64_t data_shape_count,
                                       const int64_t *data_shape) {
  return throughHost<2>(frame, "sharded_gather_grad", {grad, indices},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_sharded_gather_grad(
                              host, in[0], in[1], axes, axis,
                              data_shape_count, data_shape);
                        });
}

pp_tensor *pp_cuda_sharded_cross_entropy(pp_frame *frame, pp_tensor *logits,
                                         pp_tensor *labels, const char *axes,
                                         int64_t ignore_index) {
  return throughHost<2>(frame, "sharded_cross_entropy", {logits, labels},
                        [&](pp_frame *host, auto &in) {
                          return pp_cpu_sharded_cross_entropy(
                              host, in[0], in[1], axes, ignore_index);
                        });
}

pp_tensor *pp_cuda_sharded_cross_entropy_grad(pp_frame *frame, pp_tensor *grad,
                                              pp_tensor *logits,
                                              pp_tensor *labels,
                                              const char *axes,
                                              int64_t ignore_index) {
  return throughHost<3>(frame, "sharded_cross_entropy_grad",
                        {grad, logits, labels}, [&](pp_frame *host, auto &in) {
                          return pp_cpu_sharded_cross_entropy_grad(
                              host, in[0], in[1], in[2], axes, ignore_index);
                        });
}

} // extern "C"
