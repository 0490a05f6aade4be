//===- ModuleImporter.h - a LibTorch module into the nn dialect -*- C++ -*-===//
//
// The importer proper's entry point inside the LibTorch plugin, shared by
// the TorchScript frontend (a module torch.jit.load read) and the
// torch.export frontend (a module it builds from an ExportedProgram): both
// import the same graphs of ATen ops with the same rules.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_TORCHSCRIPT_MODULEIMPORTER_H
#define PP_FRONTENDS_TORCHSCRIPT_MODULEIMPORTER_H

#include "frontends/torchscript/TorchScriptImporter.h"

#include <torch/script.h>

namespace pp::torchscript_frontend {

/// Imports the forward method of `module`, of schema `schema`, as
/// TorchScriptImporter.h describes; `path` locates the diagnostics that
/// have no node. Nodes outside any method call name their module by their
/// scope (`model.layers.0.self_attn`), when they have one. Returns null
/// after emitting diagnostics.
mlir::OwningOpRef<mlir::ModuleOp>
importModule(torch::jit::Module &module, const c10::FunctionSchema &schema,
             llvm::StringRef path, mlir::MLIRContext *context,
             const ImportOptions &options);

} // namespace pp::torchscript_frontend

#endif // PP_FRONTENDS_TORCHSCRIPT_MODULEIMPORTER_H
