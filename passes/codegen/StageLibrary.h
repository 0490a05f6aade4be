//===- StageLibrary.h - generated code to a loadable library ----*- C++ -*-===//
//
// The first step from lowered stage functions to code the runtime loads:
// print them as C++ (or CUDA) source, which the runtime's StageCompiler.h
// compiles into a shared library. pp-emit-package uses both; tests use
// them to run a program through the real code generator.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_CODEGEN_STAGELIBRARY_H
#define PP_PASSES_CODEGEN_STAGELIBRARY_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

#include <string>

namespace pp {

/// Prints the stage functions of a copy of `module` lowered for `target`
/// ("cpu" or "cuda") as a C++ (CUDA) source with C linkage; with `plans`,
/// also records each function's memory plan (kMemoryPlanAttrName) by
/// symbol.
mlir::LogicalResult
writeStageSource(mlir::ModuleOp module, llvm::StringRef target,
                 llvm::raw_ostream &os,
                 llvm::StringMap<mlir::DictionaryAttr> *plans = nullptr);

} // namespace pp

#endif // PP_PASSES_CODEGEN_STAGELIBRARY_H
