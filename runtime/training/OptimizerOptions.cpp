//===- OptimizerOptions.cpp - which optimizer, with what settings ---------===//

#include "runtime/training/OptimizerOptions.h"

namespace pp::runtime {

std::vector<std::string> optimizerBufferNames(const OptimizerOptions &options) {
  if (options.kind == "adamw")
    return {"exp_avg", "exp_avg_sq"};
  if (options.momentum != 0.0f)
    return {"momentum"};
  return {};
}

} // namespace pp::runtime
