//===- ComputeCopies.cpp - parameters converted once per step -------------===//

#include "runtime/training/ComputeCopies.h"

namespace pp::runtime {

pp_tensor *ComputeCopies::copyOf(const std::string &name, pp_tensor *master,
                                 pp_dtype dtype) {
  TensorPtr &copy = held[{name, dtype}];
  if (!copy) {
    copy = backend.convert(master, dtype);
    ++converted;
    bytesConverted += static_cast<int64_t>(pp_tensor_nbytes(copy.get()));
  }
  return copy.get();
}

void ComputeCopies::drop(const std::string &name) {
  // pp_dtype{} is the smallest dtype (0).
  for (auto it = held.lower_bound({name, pp_dtype{}});
       it != held.end() && it->first.first == name;)
    it = held.erase(it);
}

int64_t ComputeCopies::heldBytes() const {
  int64_t bytes = 0;
  for (const auto &[key, copy] : held)
    bytes += static_cast<int64_t>(pp_tensor_nbytes(copy.get()));
  return bytes;
}

} // namespace pp::runtime
