//===- RuntimeDtype.h - element types the runtime knows --------*- C++ -*-===//
//
// One table from MLIR element types to the runtime's dtypes: the name the
// manifest uses and the `pp_dtype` enumerator generated code uses.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_CODEGEN_RUNTIMEDTYPE_H
#define PP_PASSES_CODEGEN_RUNTIMEDTYPE_H

#include "mlir/IR/Types.h"

#include <optional>

namespace pp {

/// A runtime dtype: `f32` in the manifest, `PP_DTYPE_F32` in C.
struct RuntimeDtype {
  llvm::StringLiteral manifestName;
  llvm::StringLiteral enumerator;
};

/// The runtime dtype of `elementType`, or nullopt when it has none.
std::optional<RuntimeDtype> getRuntimeDtype(mlir::Type elementType);

/// The names of all runtime dtypes, for error messages ("f32, f16, ...").
llvm::StringRef runtimeDtypeNames();

} // namespace pp

#endif // PP_PASSES_CODEGEN_RUNTIMEDTYPE_H
