//===- Passes.h - code generation passes ------------------------*- C++ -*-===//

#ifndef PP_PASSES_CODEGEN_PASSES_H
#define PP_PASSES_CODEGEN_PASSES_H

#include "dialects/nn/IR/NNDialect.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace pp {
#define GEN_PASS_DECL
#include "passes/codegen/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/codegen/Passes.h.inc"

/// Lowers every stage function of `module` to EmitC calls of the runtime's
/// `target` ("cpu" or "cuda") kernels; see pp-lower-to-runtime.
mlir::LogicalResult lowerStagesToRuntime(mlir::ModuleOp module,
                                         llvm::StringRef target);

} // namespace pp

#endif // PP_PASSES_CODEGEN_PASSES_H
