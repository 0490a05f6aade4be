//===- GivenMicrobatches.cpp - microbatches of tensors given whole --------===//

#include "runtime/data/GivenMicrobatches.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace pp::runtime {

void GivenMicrobatches::fillInput(const TensorInfo &input, int64_t,
                                  int64_t microbatch, pp_tensor *tensor) {
  auto it = std::find_if(
      package.inputs.begin(), package.inputs.end(),
      [&](const TensorInfo &listed) { return listed.name == input.name; });
  if (it == package.inputs.end())
    throw std::logic_error("the package has no input '" + input.name + "'");
  pp_tensor *all = inputs.at(it - package.inputs.begin());
  size_t bytes = pp_tensor_nbytes(tensor);
  std::memcpy(pp_tensor_data(tensor),
              static_cast<const char *>(pp_tensor_data(all)) +
                  microbatch * bytes,
              bytes);
  elements += pp_tensor_numel(tensor);
}

void GivenMicrobatches::fillLabels(int64_t, int64_t, pp_tensor *) {
  throw std::logic_error("a forward-only run reads no labels");
}

} // namespace pp::runtime
