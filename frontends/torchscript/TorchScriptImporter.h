//===- TorchScriptImporter.h - TorchScript into the nn dialect --*- C++ -*-===//
//
// Imports a TorchScript module (`.pt`, traced or scripted, as
// torch.jit.save writes it) into a module holding one `func.func @main` in
// the nn dialect, with the conventions of the ONNX importer: forward's
// tensor arguments become arguments with role "input" named after them,
// the parameters forward reads become arguments with role "parameter" named
// by their qualified names (`blocks.0.attn.qkv.weight`) whose initial values
// travel as `dense_resource` blobs, and forward's tensors (a tensor, or the
// tensors of a tuple or list) become results named `output_0`, `output_1`,
// ...; every op records the TorchScript node it came from (`pp.node`,
// `blocks.0.attn.qkv/linear`: the module whose method holds it, the op).
//
// The importer follows forward into the methods and functions it calls;
// attributes other than parameters are read at import (`training` and other
// flags, buffers such as rotary tables, which become constants of the
// program). It evaluates the graph with static shapes:
// whatever does not depend on the inputs' values (sizes, integer
// arithmetic, `prim::If` and `prim::Loop` over such values, factories such
// as arange, ones, zeros, full, zeros_like and new_ones, and everything
// computed from constants alone) is computed at import by LibTorch itself,
// on the CPU, and the ops that depend on the inputs' values become nn ops.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_TORCHSCRIPT_TORCHSCRIPTIMPORTER_H
#define PP_FRONTENDS_TORCHSCRIPT_TORCHSCRIPTIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <optional>
#include <string>

namespace pp::torchscript_frontend {

/// Options of the import. TorchScript records no shapes, so every tensor
/// argument of forward needs a type: `inputTypes` gives it.
struct ImportOptions {
  /// The size `?` stands for in `inputTypes` (the batch size); 0: a `?` is
  /// an error that says to set it.
  int64_t batchSize = 0;
  /// The type of each tensor argument of forward by its name, as
  /// `--input-shape NAME=TYPE` gives it: dimensions, then the element type,
  /// separated by `x`, MLIR style (`?x8xi64`, `2x8x32xf32`, `f32` for a
  /// scalar); `?` is the batch size.
  std::map<std::string, std::string> inputTypes;
};

/// Adds the type that `option`, the value of one `--input-shape NAME=TYPE`
/// option, gives to `types`. Returns what is wrong with it (bad syntax, a
/// second type for a name), or "" when it fits.
std::string addInputType(llvm::StringRef option,
                         std::map<std::string, std::string> &types);

/// The dimensions of `--input-shape` type `text` (-1 for `?`) and its
/// element type's name; nullopt when it is not DIMSxTYPE.
std::optional<std::pair<llvm::SmallVector<int64_t>, std::string>>
splitInputType(llvm::StringRef text);

/// True when `path` names a TorchScript module (`.pt` or `.pth`).
bool isTorchScriptModelPath(llvm::StringRef path);

/// The entry point `symbol` of the LibTorch importer plugin
/// (`libPPTorchScriptImporter.so`, which imports TorchScript modules and
/// torch.export archives), loading the plugin on the first call; null after
/// an error at `loc` when the plugin or the symbol cannot be loaded.
void *lookUpImporterEntry(llvm::StringRef symbol, mlir::Location loc);

/// Imports the TorchScript module saved at `path`. The importer links
/// LibTorch, whose start-up takes close to a second, so it is a plugin
/// (`libPPTorchScriptImporter.so`) loaded on the first call: tools that
/// import no TorchScript never pay for it. Returns null after emitting
/// diagnostics when the module cannot be imported (or the plugin loaded).
mlir::OwningOpRef<mlir::ModuleOp>
importTorchScriptFile(llvm::StringRef path, mlir::MLIRContext *context,
                      const ImportOptions &options = {});

} // namespace pp::torchscript_frontend

#endif // PP_FRONTENDS_TORCHSCRIPT_TORCHSCRIPTIMPORTER_H
