//===- RuntimeDtype.cpp - element types the runtime knows -----------------===//

#include "passes/codegen/RuntimeDtype.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace pp {

std::optional<RuntimeDtype> getRuntimeDtype(Type type) {
  if (type.isF32())
    return RuntimeDtype{"f32", "PP_DTYPE_F32"};
  if (type.isF16())
    return RuntimeDtype{"f16", "PP_DTYPE_F16"};
  if (type.isBF16())
    return RuntimeDtype{"bf16", "PP_DTYPE_BF16"};
  if (type.isF64())
    return RuntimeDtype{"f64", "PP_DTYPE_F64"};
  if (type.isSignlessInteger(64))
    return RuntimeDtype{"i64", "PP_DTYPE_I64"};
  if (type.isSignlessInteger(32))
    return RuntimeDtype{"i32", "PP_DTYPE_I32"};
  if (type.isSignlessInteger(1))
    return RuntimeDtype{"i1", "PP_DTYPE_BOOL"};
  return std::nullopt;
}

StringRef runtimeDtypeNames() { return "f32, f16, bf16, f64, i64, i32, i1"; }

} // namespace pp
