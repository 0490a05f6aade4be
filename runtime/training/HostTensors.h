//===- HostTensors.h - host tensors of the trainer's pieces -----*- C++ -*-===//

#ifndef PP_RUNTIME_TRAINING_HOSTTENSORS_H
#define PP_RUNTIME_TRAINING_HOSTTENSORS_H

#include "runtime/package/Package.h"
#include "runtime/training/Backend.h"

namespace pp::runtime {

/// A zero-filled host tensor like `info`; throws std::runtime_error naming
/// it when there is no memory.
TensorPtr makeTensor(const TensorInfo &info);

/// A host tensor like `info` over the floats at `data`, which outlive it.
TensorPtr borrowTensor(const TensorInfo &info, float *data);

/// A tensor like `info` over the floats at `data` on `device`, which
/// outlive it.
TensorPtr borrowTensorOn(const pp_device &device, const TensorInfo &info,
                         float *data);

/// The f32 elements of a tensor, where it lives (a device tensor's are
/// for kernels of its device only).
float *floatsOf(pp_tensor *tensor);

/// A host tensor as the stage functions see it: the tensor itself on the
/// CPU, or its device copy, which `copy` owns (Backend::place).
struct Placed {
  pp_tensor *tensor = nullptr;
  TensorPtr copy;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_HOSTTENSORS_H
