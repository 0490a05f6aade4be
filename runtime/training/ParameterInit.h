//===- ParameterInit.h - first values of parameters -------------*- C++ -*-===//
//
// The values a stage's parameters start from when the model file does not
// give them (or --init random overrides it). Each depends only on the
// parameter's global name, its shape and the seed, never on the stage,
// rank or layout, so every partition of a model starts from the same
// weights.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PARAMETERINIT_H
#define PP_RUNTIME_PARAMETERINIT_H

#include "runtime/pp_runtime.h"

#include <optional>
#include <string>

namespace pp::runtime {

/// Where the trainable parameters' first values come from (--init).
enum class ParameterInit {
  /// The model file (fillMissingParameter for those it lacks).
  Model,
  /// fillRandomParameter for every trainable parameter.
  Random
};

/// "model" or "random".
std::optional<ParameterInit> parseParameterInit(const std::string &name);
/// The --init spelling of `init`.
const char *parameterInitName(ParameterInit init);

/// Fills the f32 parameter `name` that the model file holds no value for:
/// uniform in [-b, b) with b = 1/sqrt(its last dimension), drawn from
/// seed 0 and the name.
void fillMissingParameter(pp_tensor *tensor, const std::string &name);

/// Fills the f32 trainable parameter `name` as PyTorch's modules
/// initialize theirs, drawn from (`seed`, name):
///   - rank >= 2: uniform in [-b, b) with b = 1/sqrt(fan_in), fan_in =
///     numel / shape[0] (dimension 1 times any kernel dimensions), the
///     bound nn.Linear's and nn.ConvNd's kaiming_uniform_(a=sqrt(5)) gives
///     for an [out, in, ...] weight;
///   - rank 0 or 1: ones when the name's last dot- or slash-separated
///     component is "weight", "scale" or "gamma" (norm scales), else zeros
///     (biases, norm shifts).
void fillRandomParameter(pp_tensor *tensor, const std::string &name,
                         uint64_t seed);

} // namespace pp::runtime

#endif // PP_RUNTIME_PARAMETERINIT_H
