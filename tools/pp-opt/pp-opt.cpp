//===- pp-opt.cpp - the pp compiler driver ----------------------*- C++ -*-===//
//
// An mlir-opt style driver with the nn and pp dialects, the upstream dialects
// their programs use, and every pp pass registered. Besides MLIR files it
// reads ONNX models (`.onnx`, or `.onnxtxt` in ONNX's text syntax) directly.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pp/IR/PPDialect.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

static llvm::cl::opt<int64_t> batchSize(
    "batch-size",
    llvm::cl::desc("Size of symbolic dimensions when importing an ONNX model "
                   "(default: the microbatch-size of --pp-compile)"),
    llvm::cl::init(0));

static llvm::cl::opt<std::string> emitDirectory(
    "pp-emit",
    llvm::cl::desc("After the pass pipeline, write a pipeline package to this "
                   "directory (pp-emit-package)"),
    llvm::cl::value_desc("dir"), llvm::cl::init(""));

/// The microbatch size a `pp-compile` pipeline on the command line names
/// (`--pp-compile="... microbatch-size=B ..."`), or 0: the size symbolic
/// dimensions of an imported model get when `--batch-size` is not given.
static int64_t microbatchSizeOfPipeline(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    size_t at = arg.find("microbatch-size=");
    if (!arg.contains("pp-compile") || at == llvm::StringRef::npos)
      continue;
    int64_t size = 0;
    if (!arg.substr(at + llvm::StringRef("microbatch-size=").size())
             .take_while(llvm::isDigit)
             .getAsInteger(10, size))
      return size;
  }
  return 0;
}

/// Imports the ONNX model at `path` and returns it printed as MLIR, or null
/// after printing why it cannot be imported.
static std::unique_ptr<llvm::MemoryBuffer>
importOnnxAsText(llvm::StringRef path, int64_t defaultBatchSize,
                 mlir::DialectRegistry &registry) {
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file = mlir::openInputFile(path, &message);
  if (!file) {
    llvm::errs() << "pp-opt: cannot read '" << path << "': " << message << "\n";
    return nullptr;
  }
  mlir::MLIRContext context(registry);
  pp::onnx_frontend::ImportOptions options;
  options.batchSize = batchSize ? batchSize.getValue() : defaultBatchSize;
  mlir::OwningOpRef<mlir::ModuleOp> module = pp::onnx_frontend::importOnnxModel(
      file->getBuffer(), path, &context, options);
  if (!module)
    return nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  return llvm::MemoryBuffer::getMemBufferCopy(text, path);
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<pp::nn::NNDialect, pp::PPDialect, mlir::arith::ArithDialect,
                  mlir::emitc::EmitCDialect, mlir::func::FuncDialect,
                  mlir::tensor::TensorDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  pp::registerPasses();

  auto [inputPath, outputPath] = mlir::registerAndParseCLIOptions(
      argc, argv, "pp compiler driver: partitions models into pipelines\n",
      registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (!emitDirectory.empty()) {
    mlir::MlirOptMainConfig base = config;
    config.setPassPipelineSetupFn([base](mlir::PassManager &pm) {
      if (mlir::failed(base.setupPassPipeline(pm)))
        return mlir::failure();
      pp::EmitPackageOptions options;
      options.dir = emitDirectory;
      pm.addPass(pp::createEmitPackage(options));
      return mlir::success();
    });
  }

  std::unique_ptr<llvm::MemoryBuffer> input;
  std::string message;
  if (pp::onnx_frontend::isOnnxModelPath(inputPath)) {
    input = importOnnxAsText(inputPath, microbatchSizeOfPipeline(argc, argv),
                             registry);
    if (!input)
      return EXIT_FAILURE;
  } else {
    input = mlir::openInputFile(inputPath, &message);
    if (!input) {
      llvm::errs() << "pp-opt: " << message << "\n";
      return EXIT_FAILURE;
    }
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputPath, &message);
  if (!output) {
    llvm::errs() << "pp-opt: " << message << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
