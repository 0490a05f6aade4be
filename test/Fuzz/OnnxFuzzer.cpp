//===- OnnxFuzzer.cpp - fuzzes the ONNX importer --------------------------===//
//
// Imports each input as an ONNX model: a binary protobuf in pp-fuzz-onnx, the
// text syntax in pp-fuzz-onnx-text (PP_FUZZ_MODEL_PATH names the model
// `fuzz.onnx` or `fuzz.onnxtxt`, which picks the parser). The importer must
// reject a bad model with its own diagnostics: a model that it turns into IR
// the verifier rejects is a bug as much as a crash is.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: the weights of every model imported into
  // one context would pile up in its resource blobs.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  std::string verifierError;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    // The verifier attaches the op it rejects; the importer's own errors
    // about the model do not.
    for (const mlir::Diagnostic &note : diag.getNotes())
      if (llvm::StringRef(note.str()).starts_with("see current operation"))
        verifierError = diag.str();
  });
  pp::onnx_frontend::ImportOptions options;
  options.batchSize = 2;
  pp::onnx_frontend::importOnnxModel(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      PP_FUZZ_MODEL_PATH, &context, options);
  if (!verifierError.empty())
    pp::fuzz::fail("the importer built IR that does not verify: " +
                   verifierError);
  return 0;
}
