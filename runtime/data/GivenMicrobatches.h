//===- GivenMicrobatches.h - microbatches of tensors given whole -*- C++ -*-===//

#ifndef PP_RUNTIME_DATA_GIVENMICROBATCHES_H
#define PP_RUNTIME_DATA_GIVENMICROBATCHES_H

#include "runtime/data/MicrobatchSource.h"

#include <vector>

namespace pp::runtime {

/// The inputs of a forward-only run (pp-run --infer): one host tensor per
/// package input, each holding every microbatch along dimension 0, which
/// outlive the source. It has no labels.
class GivenMicrobatches : public MicrobatchSource {
public:
  GivenMicrobatches(const Package &package,
                    const std::vector<pp_tensor *> &inputs)
      : package(package), inputs(inputs) {}

  void fillInput(const TensorInfo &input, int64_t batchStart,
                 int64_t microbatch, pp_tensor *tensor) override;
  /// Throws std::logic_error: a forward-only run reads no labels.
  void fillLabels(int64_t batchStart, int64_t microbatch,
                  pp_tensor *tensor) override;

private:
  const Package &package;
  const std::vector<pp_tensor *> &inputs;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_DATA_GIVENMICROBATCHES_H
