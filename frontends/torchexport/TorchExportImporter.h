//===- TorchExportImporter.h - torch.export into the nn dialect -*- C++ -*-===//
//
// Imports a torch.export archive (`.pt2`, as torch.export.save writes it)
// into a module holding one `func.func @main` in the nn dialect, with the
// conventions of the TorchScript importer (TorchScriptImporter.h), whose
// op rules it reuses: the program's user inputs become arguments with role
// "input" named after them, its parameters arguments with role "parameter"
// named by their qualified names (`model.layers.0.mlp.up_proj.weight`; the
// names of one storage are one parameter, named after the first), its
// buffers and lifted constants constants of the program, and its user
// outputs results `output_0`, `output_1`, ... Every op records the
// exported node it came from (`pp.node`, `model.layers.0.mlp/linear`).
//
// The program's tensor metadata gives the inputs' shapes and element
// types; each symbolic size (`s72`, a torch.export.Dim) takes the size the
// options give it, or at dimension 0 the batch size.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_TORCHEXPORT_TORCHEXPORTIMPORTER_H
#define PP_FRONTENDS_TORCHEXPORT_TORCHEXPORTIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>

namespace pp::torchexport_frontend {

/// Options of the import. pp compiles static shapes, so every symbolic
/// size of a user input gets one.
struct ImportOptions {
  /// The size of a symbolic size at dimension 0 of a user input that
  /// `dimSizes` does not name (the batch size); 0: such a size is an error
  /// that says to set it.
  int64_t batchSize = 0;
  /// Sizes of symbolic sizes by their name in the program (`s72`: the
  /// error for an unsized one names it), as `--dim NAME=SIZE` gives them.
  /// A name the program's inputs do not have is an error (it catches
  /// typos); a size outside the program's range constraints too.
  std::map<std::string, int64_t> dimSizes;
};

/// True when `path` names a torch.export archive (`.pt2`).
bool isTorchExportModelPath(llvm::StringRef path);

/// Imports the torch.export archive at `path` with the LibTorch plugin
/// (loaded on the first call, as for TorchScript modules). Returns null
/// after emitting diagnostics when it cannot be imported.
mlir::OwningOpRef<mlir::ModuleOp>
importTorchExportFile(llvm::StringRef path, mlir::MLIRContext *context,
                      const ImportOptions &options = {});

} // namespace pp::torchexport_frontend

#endif // PP_FRONTENDS_TORCHEXPORT_TORCHEXPORTIMPORTER_H
