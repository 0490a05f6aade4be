//===- OnnxFuzzer.cpp - fuzzes the ONNX importer --------------------------===//
//
// Imports each input as an ONNX model: a binary protobuf in pp-fuzz-onnx, the
// text syntax in pp-fuzz-onnx-text (PP_FUZZ_MODEL_PATH names the model
// `fuzz.onnx` or `fuzz.onnxtxt`, which picks the parser). A bad model must
// end in diagnostics; those of the verifier count too, since the importer
// leaves operand types that no inference checks (Where's condition, say) to
// it, located at the ONNX node. Each input imports twice: as given, and
// with its shared initializers untied (--untie-shared-weights).
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (bool untie : {false, true}) {
    // A fresh context per import: the weights of every model imported
    // into one context would pile up in its resource blobs.
    mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
    mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {});
    pp::onnx_frontend::ImportOptions options;
    options.batchSize = 2;
    options.untieSharedWeights = untie;
    pp::onnx_frontend::importOnnxModel(
        llvm::StringRef(reinterpret_cast<const char *>(data), size),
        PP_FUZZ_MODEL_PATH, &context, options);
  }
  return 0;
}
