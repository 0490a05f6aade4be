//===- ComputeCopies.h - parameters converted once per step -----*- C++ -*-===//
//
// Under --precision bf16/fp16 the stage functions take each weight's
// compute-type copy as an argument (role compute_copy,
// pp-hoist-parameter-casts). A rank converts each master once and keeps the
// copy until the master changes (the optimizer step, a checkpoint load, a
// ZeRO-3 release), so a step converts every weight once rather than in
// each microbatch's forward and backward (docs/precision.md).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_COMPUTECOPIES_H
#define PP_RUNTIME_TRAINING_COMPUTECOPIES_H

#include "runtime/training/Backend.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace pp::runtime {

class ComputeCopies {
public:
  /// Copies made by `backend`'s cast kernel where its stage functions run.
  explicit ComputeCopies(Backend &backend) : backend(backend) {}

  /// The copy as `dtype` of `master`, the parameter named `name`: the one
  /// held, or converted now.
  pp_tensor *copyOf(const std::string &name, pp_tensor *master,
                    pp_dtype dtype);
  /// Drops every copy of parameter `name` (its master changed or was
  /// released).
  void drop(const std::string &name);
  /// Drops every copy (the masters changed).
  void clear() { held.clear(); }

  /// Bytes of the copies held now.
  int64_t heldBytes() const;
  /// Conversions made, and their bytes (of the copies), since
  /// construction.
  int64_t conversions() const { return converted; }
  int64_t convertedBytes() const { return bytesConverted; }

private:
  Backend &backend;
  std::map<std::pair<std::string, pp_dtype>, TensorPtr> held;
  int64_t converted = 0, bytesConverted = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_COMPUTECOPIES_H
