//===- CpuDropoutKernels.cpp - nn.dropout on the host ---------------------===//
//
// While training, each element is kept or zeroed as DropoutMask.h decides
// from the frame's RunPosition; the backward calls the same kernel on the
// gradient, so it recomputes the same mask. Forward-only calls copy.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/CpuKernelLoops.h"
#include "runtime/kernels/DropoutMask.h"

using namespace pp::runtime;
using namespace pp::runtime::cpu;

extern "C" {

pp_tensor *pp_cpu_dropout(pp_frame *frame, pp_tensor *input, int64_t key,
                          double ratio) {
  if (!checkInputs(frame, "dropout", {input}))
    return nullptr;
  if (!frame->position.training || ratio == 0.0)
    return pp_cpu_copy(frame, input);
  DropoutMask mask =
      dropoutMask(frame->position, key, ratio, shapeOf(input));
  pp_tensor *result = newTensor(frame, PP_DTYPE_F32, shapeOf(input));
  if (!result)
    return nullptr;
  const float *in = floats(input);
  float *out = floats(result);
  for (int64_t i = 0, n = pp_tensor_numel(input); i < n; ++i)
    out[i] = mask.apply(i, in[i]);
  return result;
}

} // extern "C"
