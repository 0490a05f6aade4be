//===- TorchExportFrontend.cpp - loading of the torch.export importer -----===//
//
// What the tools link: the loader of the importer (ExportedProgramImporter.cpp),
// which lives in the LibTorch plugin next to the TorchScript importer.
//
//===----------------------------------------------------------------------===//

#include "frontends/torchexport/TorchExportImporter.h"
#include "frontends/torchscript/TorchScriptImporter.h"

#include "mlir/IR/Location.h"

using namespace mlir;

/// The plugin's entry point (ExportedProgramImporter.cpp): the imported
/// module, released, or null after diagnostics.
using ImportFunction =
    Operation *(*)(const char *path, size_t pathSize, MLIRContext *context,
                   const pp::torchexport_frontend::ImportOptions *options);

namespace pp::torchexport_frontend {

bool isTorchExportModelPath(StringRef path) { return path.ends_with(".pt2"); }

OwningOpRef<ModuleOp> importTorchExportFile(StringRef path,
                                            MLIRContext *context,
                                            const ImportOptions &options) {
  auto import = reinterpret_cast<ImportFunction>(
      torchscript_frontend::lookUpImporterEntry(
          "ppImportTorchExport", FileLineColLoc::get(context, path, 0, 0)));
  if (!import)
    return nullptr;
  return OwningOpRef<ModuleOp>(cast_or_null<ModuleOp>(
      import(path.data(), path.size(), context, &options)));
}

} // namespace pp::torchexport_frontend
