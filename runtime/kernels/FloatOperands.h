//===- FloatOperands.h - a kernel's float operands --------------*- C++ -*-===//
//
// The one rule the CPU kernels (CpuKernelLoops.h) and the CUDA kernels
// (cuda/CudaKernels.cu) check their float operands by: all present, all of
// one float element type the kernels compute (f32, bf16 or f16:
// FloatElements.h). Host code only, so that nvcc and the host compiler
// read it alike; the error it records names the kernel and the types, and
// the step executor adds the stage and its stage function.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_FLOATOPERANDS_H
#define PP_RUNTIME_KERNELS_FLOATOPERANDS_H

#include "runtime/pp_kernels.h"

#include <initializer_list>
#include <optional>

namespace pp::runtime {

/// The float dtype (f32, bf16 or f16) that every one of `operands` and of
/// the present (non-null) `optionalOperands` holds. Nullopt when an
/// operand is null (an earlier call failed and said why), and, with the
/// error recorded in `frame` naming `kernel` and the dtypes, when an
/// operand is not of a float dtype or two operands' dtypes differ.
std::optional<pp_dtype>
floatOperandsType(pp_frame *frame, const char *kernel,
                  std::initializer_list<pp_tensor *> operands,
                  std::initializer_list<pp_tensor *> optionalOperands = {});

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_FLOATOPERANDS_H
