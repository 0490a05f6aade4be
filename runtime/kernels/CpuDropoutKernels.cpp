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
  if (!floatOperandsType(frame, "dropout", {input}))
    return nullptr;
  if (!frame->position.training || ratio == 0.0)
    return pp_cpu_copy(frame, input);
  DropoutMask mask = dropoutMask(frame->position, key, ratio, shapeOf(input));
  return unaryIndexed(frame, "dropout", input,
                      [&](int64_t i, float x) { return mask.apply(i, x); });
}

} // extern "C"
