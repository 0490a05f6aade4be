//===- TorchScriptFrontend.cpp - options and loading of the importer -----===//
//
// What the tools link: the `--input-shape` syntax, and the loader of the
// importer plugin (TorchScriptImporter.cpp), which links LibTorch.
//
//===----------------------------------------------------------------------===//

#include "frontends/torchscript/TorchScriptImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/DynamicLibrary.h"

using namespace mlir;

/// The plugin's entry point (TorchScriptImporter.cpp): the imported module,
/// released, or null after diagnostics.
using ImportFunction =
    Operation *(*)(const char *path, size_t pathSize, MLIRContext *context,
                   const pp::torchscript_frontend::ImportOptions *options);

namespace pp::torchscript_frontend {

/// The dimensions of `--input-shape` type `text`, -1 for `?`, and its
/// element type name; nullopt when it is not of that form.
std::optional<std::pair<SmallVector<int64_t>, std::string>>
splitInputType(StringRef text) {
  SmallVector<StringRef> parts;
  text.split(parts, 'x');
  std::pair<SmallVector<int64_t>, std::string> result;
  result.second = parts.pop_back_val().str();
  for (StringRef part : parts) {
    int64_t size = 0;
    if (part == "?")
      size = -1;
    else if (part.getAsInteger(10, size) || size < 0)
      return std::nullopt;
    result.first.push_back(size);
  }
  return result;
}

std::string addInputType(StringRef option,
                         std::map<std::string, std::string> &types) {
  auto [name, type] = option.split('=');
  if (name.empty() || type.empty() || !option.contains('=') ||
      !splitInputType(type))
    return ("--input-shape '" + option +
            "' is not NAME=DIMSxTYPE (e.g. --input-shape tokens=?x8xi64)")
        .str();
  auto [it, inserted] = types.emplace(name.str(), type.str());
  if (!inserted && it->second != type)
    return ("--input-shape gives '" + name + "' two types, " + it->second +
            " and " + type)
        .str();
  return "";
}

bool isTorchScriptModelPath(StringRef path) {
  return path.ends_with(".pt") || path.ends_with(".pth");
}

void *lookUpImporterEntry(StringRef symbol, Location loc) {
  std::string error;
  auto library = llvm::sys::DynamicLibrary::getPermanentLibrary(
      PP_TORCHSCRIPT_IMPORTER, &error);
  void *entry = library.isValid()
                    ? library.getAddressOfSymbol(symbol.str().c_str())
                    : nullptr;
  if (!entry)
    emitError(loc) << "cannot load the LibTorch importer '"
                   << PP_TORCHSCRIPT_IMPORTER << "': "
                   << (error.empty() ? "it has no " + symbol.str() : error)
                   << " (rebuild pp)";
  return entry;
}

OwningOpRef<ModuleOp> importTorchScriptFile(StringRef path,
                                            MLIRContext *context,
                                            const ImportOptions &options) {
  auto import = reinterpret_cast<ImportFunction>(lookUpImporterEntry(
      "ppImportTorchScript", FileLineColLoc::get(context, path, 0, 0)));
  if (!import)
    return nullptr;
  return OwningOpRef<ModuleOp>(cast_or_null<ModuleOp>(
      import(path.data(), path.size(), context, &options)));
}

} // namespace pp::torchscript_frontend
