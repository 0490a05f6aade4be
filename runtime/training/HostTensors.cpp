//===- HostTensors.cpp - host tensors of the trainer's pieces -------------===//

#include "runtime/training/HostTensors.h"

#include <stdexcept>
#include <string>

namespace pp::runtime {

TensorPtr makeTensor(const TensorInfo &info) {
  pp_tensor *tensor = nullptr;
  if (pp_tensor_create(info.dtype, static_cast<int64_t>(info.shape.size()),
                       info.shape.data(), &tensor) != PP_OK)
    throw std::runtime_error(std::string("cannot allocate '") + info.name +
                             "': " + pp_last_error());
  return TensorPtr(tensor);
}

TensorPtr borrowTensor(const TensorInfo &info, float *data) {
  return borrowTensorOn(*pp_host_device(), info, data);
}

TensorPtr borrowTensorOn(const pp_device &device, const TensorInfo &info,
                         float *data) {
  pp_tensor *tensor = nullptr;
  if (pp_tensor_borrow_on(&device, data, info.dtype,
                          static_cast<int64_t>(info.shape.size()),
                          info.shape.data(), &tensor) != PP_OK)
    throw std::runtime_error(std::string("cannot view '") + info.name +
                             "' on its device: " + pp_last_error());
  return TensorPtr(tensor);
}

float *floatsOf(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

} // namespace pp::runtime
