//===- CpuDataMovementKernels.cpp - host kernels that move elements -------===//
//
// transpose, slice, concat, broadcast_to and trilu on host tensors of any
// dtype (masks and index tensors flow through them too); their plans are
// shared with the CUDA twins (DataMovement.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/CpuKernelLoops.h"
#include "runtime/kernels/DataMovement.h"

using namespace pp::runtime;
using namespace pp::runtime::cpu;

namespace {

/// A new tensor of `input`'s dtype filled by `copy` from `input`; null
/// when `copy` is (the error is recorded).
pp_tensor *copied(pp_frame *frame, const std::optional<StridedCopy> &copy,
                  pp_tensor *input) {
  pp_tensor *result =
      copy ? newTensor(frame, pp_tensor_dtype(input), copy->shape) : nullptr;
  if (result)
    runStridedCopy(*copy, input, result);
  return result;
}

} // namespace

extern "C" {

pp_tensor *pp_cpu_transpose(pp_frame *frame, pp_tensor *input,
                            int64_t permutation_count,
                            const int64_t *permutation) {
  return copied(frame,
                transposeCopy(frame, input, permutation_count, permutation),
                input);
}

pp_tensor *pp_cpu_slice(pp_frame *frame, pp_tensor *input, int64_t limits_count,
                        const int64_t *limits, int64_t starts_count,
                        const int64_t *starts, int64_t strides_count,
                        const int64_t *strides) {
  return copied(frame,
                sliceCopy(frame, input, limits_count, limits, starts_count,
                          starts, strides_count, strides),
                input);
}

pp_tensor *pp_cpu_broadcast_to(pp_frame *frame, pp_tensor *input,
                               int64_t shape_count, const int64_t *shape) {
  return copied(frame, broadcastCopy(frame, input, shape_count, shape), input);
}

pp_tensor *pp_cpu_concat(pp_frame *frame, int64_t inputs_count,
                         pp_tensor *const *inputs, int64_t axis) {
  std::optional<ConcatPlan> plan =
      concatPlan(frame, inputs_count, inputs, axis);
  pp_tensor *result =
      plan ? newTensor(frame, plan->dtype, plan->shape) : nullptr;
  if (!result)
    return nullptr;
  for (int64_t i = 0; i < inputs_count; ++i)
    runStridedCopy(plan->copies[i], inputs[i], result);
  return result;
}

pp_tensor *pp_cpu_trilu(pp_frame *frame, pp_tensor *input, int64_t diagonal,
                        int upper) {
  std::optional<MatrixStack> stack = triluMatrices(frame, input);
  pp_tensor *result =
      stack ? newTensor(frame, pp_tensor_dtype(input), shapeOf(input))
            : nullptr;
  if (!result)
    return nullptr;
  // Zero has all bits clear in every dtype.
  visitBits(pp_dtype_size(pp_tensor_dtype(input)), [&](auto bits) {
    using T = decltype(bits);
    const T *in = static_cast<const T *>(pp_tensor_data(input));
    T *out = static_cast<T *>(pp_tensor_data(result));
    int64_t at = 0;
    for (int64_t m = 0; m < stack->matrices; ++m)
      for (int64_t i = 0; i < stack->rows; ++i)
        for (int64_t j = 0; j < stack->columns; ++j, ++at)
          out[at] = triluKeeps(i, j, diagonal, upper) ? in[at] : T(0);
  });
  return result;
}

} // extern "C"
