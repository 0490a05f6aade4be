//===- StageLibrary.h - generated code to a loadable library ----*- C++ -*-===//
//
// The two steps from lowered stage functions to code the runtime loads:
// print them as C++ (or CUDA) source, and compile that source into a shared
// library linked against the runtime. pp-emit-package uses both; tests use
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

/// Compiles the generated `source` for `target` into the shared library
/// `library`, linked against the runtime; the compiler's output goes to
/// `log`. Returns "" on success, else what went wrong.
std::string compileStageLibrary(llvm::StringRef target, llvm::StringRef source,
                                llvm::StringRef library, llvm::StringRef log);

/// True when this build can compile `target` code (the CUDA compiler was
/// found at configure time for "cuda").
bool canCompileStages(llvm::StringRef target);

} // namespace pp

#endif // PP_PASSES_CODEGEN_STAGELIBRARY_H
