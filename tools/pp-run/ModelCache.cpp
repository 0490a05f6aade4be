//===- ModelCache.cpp - compile models for pp-run, cached -----------------===//

#include "tools/pp-run/ModelCache.h"

#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <unistd.h>

using namespace mlir;

static std::string cacheRoot(const ModelCompileRequest &request) {
  if (!request.cacheDir.empty())
    return request.cacheDir;
  if (const char *dir = std::getenv("PP_CACHE_DIR"))
    return dir;
  if (const char *home = std::getenv("HOME"))
    return std::string(home) + "/.cache/pp";
  return "/tmp/pp-cache";
}

/// `value` quoted for the textual pass pipeline, so that spaces stay in it,
/// or nullopt with `problem` set where the pipeline syntax cannot carry it
/// (`flag` names the option in the message).
static std::optional<std::string> quotedOptionValue(llvm::StringRef flag,
                                                    llvm::StringRef value,
                                                    std::string &problem) {
  int depth = 0;
  for (char c : value) {
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (depth < 0)
      break;
  }
  if (depth != 0) {
    problem = (flag + " '" + value +
               "' has unbalanced braces, which a pass pipeline cannot carry; "
               "match a literal brace with '.'")
                  .str();
    return std::nullopt;
  }
  for (char quote : {'"', '\''})
    if (!value.contains(quote))
      return quote + value.str() + quote;
  problem = (flag + " '" + value +
             "' contains both quote characters, which a pass pipeline cannot "
             "carry; match one of them with '.'")
                .str();
  return std::nullopt;
}

std::optional<std::string> compileModel(const ModelCompileRequest &request,
                                        std::string &problem) {
  if (!pp::onnx_frontend::isOnnxModelPath(request.modelPath)) {
    problem = "'" + request.modelPath +
              "' is neither a package directory nor an ONNX model "
              "(.onnx or .onnxtxt)";
    return std::nullopt;
  }
  if (request.microbatchSize < 1) {
    problem = "compiling a model needs --microbatch-size B (B >= 1)";
    return std::nullopt;
  }
  if (request.loss.empty()) {
    problem = "compiling a model needs --loss KIND:OUTPUT (KIND mse or "
              "cross_entropy)";
    return std::nullopt;
  }
  if (request.stages < 1) {
    problem =
        "--stages must be at least 1, got " + std::to_string(request.stages);
    return std::nullopt;
  }
  pp::onnx_frontend::ImportOptions options;
  options.batchSize = request.microbatchSize;
  for (const std::string &dim : request.dims) {
    problem = pp::onnx_frontend::addDimSize(dim, options.dimSizes);
    if (!problem.empty())
      return std::nullopt;
  }
  auto file = llvm::MemoryBuffer::getFile(request.modelPath);
  if (!file) {
    problem =
        "cannot read '" + request.modelPath + "': " + file.getError().message();
    return std::nullopt;
  }

  std::string pipeline =
      "pp-compile{stages=" + std::to_string(request.stages) +
      " microbatch-size=" + std::to_string(request.microbatchSize) +
      " loss=" + request.loss;
  if (!request.splitPoints.empty())
    pipeline += " split-points=" + llvm::join(request.splitPoints, ",");
  if (!request.freeze.empty()) {
    std::optional<std::string> freeze =
        quotedOptionValue("--freeze", request.freeze, problem);
    if (!freeze)
      return std::nullopt;
    pipeline += " freeze=" + *freeze;
  }
  pipeline += "}";

  static const bool registered = (pp::registerPasses(), true);
  (void)registered;
  llvm::SHA256 hash;
  hash.update((*file)->getBuffer());
  hash.update(pipeline);
  for (const std::string &dim : request.dims)
    hash.update(std::string("\0--dim=", 7) + dim);
  // A rebuilt compiler or runtime makes new packages: the cache key covers
  // this pp-run and the runtime library the packages link.
  for (const std::string &file :
       {llvm::sys::fs::getMainExecutable(nullptr, nullptr),
        std::string(PP_LIBRARY_DIR "/libPPRuntime.so")}) {
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(file, status))
      hash.update(
          file + ":" + std::to_string(status.getSize()) + ":" +
          std::to_string(
              status.getLastModificationTime().time_since_epoch().count()));
  }
  std::string key = llvm::toHex(hash.final(), /*LowerCase=*/true).substr(0, 32);
  std::string root = cacheRoot(request);
  std::string packageDir = root + "/" + key;
  if (llvm::sys::fs::exists(packageDir + "/manifest.json"))
    return packageDir;

  // Build in a private directory, then rename: concurrent runs never see a
  // half-written package.
  std::string staging =
      packageDir + ".tmp" + std::to_string(static_cast<long>(::getpid()));
  if (std::error_code error = llvm::sys::fs::create_directories(staging)) {
    problem = "cannot create the cache directory '" + staging +
              "': " + error.message() + " (set --cache-dir or PP_CACHE_DIR)";
    return std::nullopt;
  }

  DialectRegistry registry;
  MLIRContext context(registry);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == DiagnosticSeverity::Error) {
      llvm::raw_string_ostream os(diagnostics);
      os << (diagnostics.empty() ? "" : "\n") << diagnostic.getLocation()
         << ": " << diagnostic.str();
    }
    return success();
  });
  OwningOpRef<ModuleOp> module = pp::onnx_frontend::importOnnxModel(
      (*file)->getBuffer(), request.modelPath, &context, options);
  PassManager pm(&context);
  std::string emit = "pp-emit-package{dir=" + staging + "}";
  bool ok = module && succeeded(parsePassPipeline(pipeline + "," + emit, pm)) &&
            succeeded(pm.run(*module));
  if (!ok) {
    llvm::sys::fs::remove_directories(staging);
    problem = "cannot compile '" + request.modelPath + "':\n" + diagnostics;
    return std::nullopt;
  }
  if (std::error_code error = llvm::sys::fs::rename(staging, packageDir)) {
    // Another run finished the same package first.
    llvm::sys::fs::remove_directories(staging);
    if (!llvm::sys::fs::exists(packageDir + "/manifest.json")) {
      problem = "cannot move the compiled package into '" + packageDir +
                "': " + error.message();
      return std::nullopt;
    }
  }
  return packageDir;
}
