//===- CollectivePlans.h - layouts and arithmetic of collectives -*- C++
//-*-===//
//
// How the collective kernels (pp.all_reduce, pp.all_gather,
// pp.reduce_scatter, pp.shard_slice) lay a sharded dimension out over a
// group and combine the group's values, shared by the CPU kernels
// (CpuShardedKernels.cpp) and their CUDA twins so that both compute the
// same bits. A sharded dimension of global size n with b blocks over T
// devices is [b, n / b]; device r holds elements [r n / (b T), (r + 1) n /
// (b T)) of every block, in block order (the layout of #pp.sharding).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_COLLECTIVEPLANS_H
#define PP_RUNTIME_KERNELS_COLLECTIVEPLANS_H

#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/Frame.h"

namespace pp::runtime {

/// The frame's group over the mesh axes `axes` (a key as the generated
/// call passes it: collectiveAxesKey), or null with the error recorded,
/// naming `kernel` and the axes: a collective needs one.
CollectiveGroup *collectiveGroup(pp_frame *frame, const char *kernel,
                                 const char *axes);

/// The pieces of one device along a sharded dimension: `outer` x `blocks`
/// runs of `run` contiguous elements, the run (o, k) at `local(o, k)` in the
/// device's tensor and at `global(o, k, rank)` in the whole one.
struct ShardLayout {
  int64_t outer = 1, blocks = 1, devices = 1, run = 0;

  int64_t local(int64_t o, int64_t k) const { return (o * blocks + k) * run; }
  int64_t global(int64_t o, int64_t k, int64_t rank) const {
    return ((o * blocks + k) * devices + rank) * run;
  }
  /// Calls `copy(localOffset, globalOffset, count)` (in elements) for every
  /// run of device `rank`, in order.
  template <typename Copy> void forEachRun(int64_t rank, Copy copy) const {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < blocks; ++k)
        copy(local(o, k), global(o, k, rank), run);
  }
  /// The copy of device `rank`'s piece out of the whole tensor (its
  /// destination is the piece, row-major).
  StridedCopy piece(int64_t rank) const;
  /// The copy of every device's piece, stacked in group order ([devices,
  /// piece]), into the whole tensor.
  StridedCopy assemble() const;
};

/// The layout of dimension `dim` of the whole tensor `global` split into
/// `blocks` blocks over `devices` devices, or nullopt with the error
/// recorded, naming `kernel`.
std::optional<ShardLayout> shardLayout(pp_frame *frame, const char *kernel,
                                       const Shape &global, int64_t dim,
                                       int64_t blocks, int64_t devices);

/// What shard_slice copies: this device's shard of a tensor and its shape.
struct ShardCopy {
  StridedCopy copy;
  Shape shape;
};

/// The ShardCopy of shard_slice on `input` along `dim` split into `blocks`
/// blocks over the frame's group of `axes`, or nullopt with the error recorded
/// (no group, a dimension that does not split), or after an earlier failure
/// when `input` is null.
std::optional<ShardCopy> shardSliceCopy(pp_frame *frame, pp_tensor *input,
                                        const char *axes, int64_t blocks,
                                        int64_t dim);

/// `shape` with dimension `dim` (when in range) times `grow` divided by
/// `shrink`: a shard's shape from the whole one's, or back.
Shape scaledShape(Shape shape, int64_t dim, int64_t grow, int64_t shrink = 1);

/// Checks the input of a reducing collective: present (else an earlier call
/// failed and said why), f32, bf16 or f16, and a reduction kind
/// (pp.ReductionKind) of 0 (sum), 1 (max) or 2 (min); else false with the error
/// recorded.
bool checkReduceInput(pp_frame *frame, const char *kernel, pp_tensor *input,
                      int reduction);

/// Combines `count` values of a float type (FloatElements.h), one per
/// device at `values[q * stride]`, as `reduction` (0 sum, 1 max, 2 min) in
/// group order: a sum in double, rounded once to float (and by the caller
/// to its type); max and min as std::max and std::min fold them.
template <typename T>
PP_HOST_DEVICE inline float reduceInOrder(const T *values, int64_t count,
                                          int64_t stride, int reduction) {
  if (reduction == 0) {
    double sum = 0;
    for (int64_t q = 0; q < count; ++q)
      sum += loadFloat(values[q * stride]);
    return static_cast<float>(sum);
  }
  float result = loadFloat(values[0]);
  for (int64_t q = 1; q < count; ++q) {
    float value = loadFloat(values[q * stride]);
    if (reduction == 1 ? result < value : value < result)
      result = value;
  }
  return result;
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_COLLECTIVEPLANS_H
