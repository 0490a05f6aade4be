//===- TorchScriptFuzzer.cpp - fuzzes the TorchScript importer ------------===//
//
// Imports each input as a TorchScript archive (`fuzz.pt`) through the
// importer plugin, as pp-opt and pp-run do, with the forward arguments the
// seeds take (x and y 2x3xf32, tokens 2x3xi64; batch size 2). A bad archive
// must end in diagnostics: pp's checks of the zip entries' CRC-32s and of
// the tensors' extents, LibTorch's errors (c10::Error, which the importer
// turns into diagnostics) or the importer's own. Since most mutations of a
// zip entry break its CRC, the deeper paths are reached through the
// archive's headers, its central directory and its stored (uncompressed)
// records, whose CRCs the seeds' corpus keeps consistent only by chance.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pp/IR/PPDialect.h"
#include "frontends/torchscript/TorchScriptImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const pp::fuzz::ScratchDirectory scratch;
  std::string path = scratch.write("fuzz.pt", data, size);
  // A fresh context per import, as in OnnxFuzzer.cpp: the parameters of
  // every module imported into one context would pile up in its blobs.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  // The plugin uses this program's dialects (loading them here links them
  // in).
  context.loadDialect<pp::nn::NNDialect, pp::PPDialect>();
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {});
  pp::torchscript_frontend::ImportOptions options;
  options.batchSize = 2;
  options.inputTypes = {
      {"x", "2x3xf32"}, {"y", "2x3xf32"}, {"tokens", "2x3xi64"}};
  pp::torchscript_frontend::importTorchScriptFile(path, &context, options);
  return 0;
}
