//===- FloatOperands.cpp - a kernel's float operands ----------------------===//

#include "runtime/kernels/FloatOperands.h"

#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/Frame.h"

#include <string>

namespace pp::runtime {

std::optional<pp_dtype>
floatOperandsType(pp_frame *frame, const char *kernel,
                  std::initializer_list<pp_tensor *> operands,
                  std::initializer_list<pp_tensor *> optionalOperands) {
  for (pp_tensor *operand : operands)
    if (!operand)
      return std::nullopt; // An earlier call failed and said why.
  std::optional<pp_dtype> dtype;
  for (auto list : {operands, optionalOperands})
    for (pp_tensor *operand : list) {
      if (!operand)
        continue;
      pp_dtype type = pp_tensor_dtype(operand);
      if (!visitFloatType(type, [](auto) {})) {
        failFrame(frame, std::string(kernel) +
                             " expects f32, bf16 or f16 tensors, got " +
                             pp_dtype_name(type));
        return std::nullopt;
      }
      if (dtype && *dtype != type) {
        failFrame(frame, std::string(kernel) +
                             " expects operands of one element type, got " +
                             pp_dtype_name(*dtype) + " and " +
                             pp_dtype_name(type) + " (cast one with nn.cast)");
        return std::nullopt;
      }
      dtype = type;
    }
  return dtype;
}

} // namespace pp::runtime
