//===- OnnxImporter.h - ONNX models into the nn dialect ---------*- C++ -*-===//
//
// Imports an ONNX model (opsets 13 to 21) into a module holding one
// `func.func @main` in the nn dialect. Graph inputs become arguments with
// role "input", the floating-point initializers that train become
// arguments with role "parameter" whose initial values travel as
// `dense_resource` blobs. What trains: with torch.export's records (dynamo
// exports) exactly the PARAMETER initializers, under their module names,
// a weight stored transposed in its module layout behind a Transpose;
// otherwise every non-empty float initializer from which a differentiable
// path reaches a node computing on the graph inputs (ParameterRule.cpp and
// docs/tools/pp-opt.md state the rule; `--freeze` holds what it trains).
// Graph outputs become results; all keep their ONNX names (`pp.name`), and every
// op records the ONNX node it came from (`pp.node`). Other initializers are
// constants, and nodes over constants (shape computations) fold into
// constants at import.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_ONNX_ONNXIMPORTER_H
#define PP_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>

namespace pp::onnx_frontend {

/// Options of the import. pp compiles static shapes, so every symbolic
/// dimension of a graph input gets a size: the one `dimSizes` gives its
/// name, or else, at position 0, the batch size. Any other symbolic input
/// dimension is an error that says how to size it.
struct ImportOptions {
  /// Size of the batch dimension: a symbolic dimension at position 0 of a
  /// graph input that `dimSizes` does not name. 0: such a dimension is an
  /// error that says to set it.
  int64_t batchSize = 0;
  /// Sizes of symbolic dimensions by their ONNX name (`dim_param`), as
  /// `pp-opt --dim NAME=SIZE` gives them; all positive. A name that no graph
  /// input or output of the model has is an error (it catches typos).
  std::map<std::string, int64_t> dimSizes;
  /// Every node that reads a floating-point initializer read by several
  /// nodes gets its own copy, a parameter of its own: the first reader (in
  /// node order) keeps the name, the later ones get `NAME.1`, `NAME.2`, ...
  /// (skipping names the model uses). torch.onnx.export merges initializers
  /// with equal values (a fresh model's LayerNorm weights, zero biases) into
  /// one, which pp would otherwise train as one tied parameter. The import
  /// always unties those whose elements all have the same bits; with this
  /// option, all of them, weights tied on purpose (tied embeddings) too.
  bool untieSharedWeights = false;
  /// Ties each floating-point initializer whose elements are bitwise those
  /// of an earlier one, or of its 2-D transpose, to that one (through a
  /// Transpose node): torch.onnx.export's constant folding unties a tied LM
  /// head that way. Without it, the import warns naming both.
  bool tieEqualWeights = false;
};

/// Adds the size that `option`, the value of one `--dim NAME=SIZE` option,
/// gives to `sizes`. Returns what is wrong with it (bad syntax, a size that
/// is not positive, a second size for a name), or "" when it fits.
std::string addDimSize(llvm::StringRef option,
                       std::map<std::string, int64_t> &sizes);

/// True when `path` names an ONNX model: `.onnx` (binary protobuf) or
/// `.onnxtxt` (ONNX's text syntax).
bool isOnnxModelPath(llvm::StringRef path);

/// Imports the model in `contents` (binary protobuf, or the text syntax when
/// `path` ends in `.onnxtxt`). `path` only names the model in diagnostics.
/// Returns null after emitting diagnostics when the model cannot be imported.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxModel(llvm::StringRef contents, llvm::StringRef path,
                mlir::MLIRContext *context, const ImportOptions &options = {});

/// Imports the model file open as `fd` from its current offset (`path`
/// names it and says its syntax, as for importOnnxModel): the first `size`
/// bytes, or all to the end when `size` is negative. A binary model is
/// parsed as it is read, so the file's bytes are never all in memory beside
/// the model's.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(int fd, llvm::StringRef path, mlir::MLIRContext *context,
               const ImportOptions &options = {}, int64_t size = -1);

/// The ONNX op types the importer supports, sorted, comma-separated.
std::string supportedOnnxOps();

} // namespace pp::onnx_frontend

#endif // PP_FRONTENDS_ONNX_ONNXIMPORTER_H
