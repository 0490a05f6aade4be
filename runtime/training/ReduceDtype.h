//===- ReduceDtype.h - the element type of gradient sums --------*- C++ -*-===//
//
// The element type in which the data-parallel gradient reduction carries
// and adds up a step's gradients (pp-run --grad-reduce-dtype,
// GradientReduction.h): f32, the gradients' own, as TorchTitan and
// Megatron reduce by default; or bf16, half the bytes on the wire.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_REDUCEDTYPE_H
#define PP_RUNTIME_TRAINING_REDUCEDTYPE_H

#include <optional>
#include <string>

namespace pp::runtime {

/// The element type of the data-parallel gradient sums.
enum class ReduceDtype {
  /// The f32 gradients travel and add up as they are.
  F32,
  /// Each f32 gradient is rounded to bf16 before it travels; an element's
  /// sum adds the members' bf16 values widened to f32 and is rounded to
  /// bf16 once, the value a bf16 all-reduce gives, then widened back.
  BF16
};

/// "f32" or "bf16".
std::optional<ReduceDtype> parseReduceDtype(const std::string &name);
/// The --grad-reduce-dtype spelling of `dtype`.
const char *reduceDtypeName(ReduceDtype dtype);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_REDUCEDTYPE_H
