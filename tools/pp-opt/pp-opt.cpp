//===- pp-opt.cpp - the pp compiler driver ----------------------*- C++ -*-===//
//
// An mlir-opt style driver with the nn and pp dialects, the upstream dialects
// their programs use, and every pp pass registered. Besides MLIR files it
// reads ONNX models (`.onnx`, or `.onnxtxt` in ONNX's text syntax) and
// TorchScript modules (`.pt`) and torch.export archives (`.pt2`) directly.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pp/IR/PPDialect.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/torchexport/TorchExportImporter.h"
#include "frontends/torchscript/TorchScriptImporter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "passes/Passes.h"
#include "runtime/core/InputFile.h"
#include "tools/pp-opt/LoadWeights.h"
#include "tools/pp-opt/PartitionReport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>
#include <optional>

static llvm::cl::opt<int64_t> batchSize(
    "batch-size",
    llvm::cl::desc("Size of the batch dimension (a symbolic dimension 0 of a "
                   "graph input that --dim does not size, or `?` in "
                   "--input-shape) when importing a model (default: the "
                   "microbatch-size of --pp-compile)"),
    llvm::cl::init(0));

static llvm::cl::list<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Type of forward's tensor argument NAME when importing a "
                   "TorchScript module, e.g. tokens=?x8xi64 (`?`: the batch "
                   "size); repeatable"),
    llvm::cl::value_desc("NAME=DIMSxTYPE"));

static llvm::cl::list<std::string> dimSizes(
    "dim",
    llvm::cl::desc("Size of the symbolic dimension NAME (ONNX dim_param, "
                   "or a torch.export symbol such as s72) when importing an "
                   "ONNX model or a torch.export archive; repeatable"),
    llvm::cl::value_desc("NAME=SIZE"));

static llvm::cl::opt<bool> untieSharedWeights(
    "untie-shared-weights",
    llvm::cl::desc("When importing an ONNX model, give every node that reads "
                   "a floating-point initializer read by several nodes its "
                   "own copy (NAME.1, NAME.2, ... after the first reader), "
                   "weights tied on purpose too; without it, only those whose "
                   "elements are all equal (torch.onnx.export merges "
                   "initializers with equal values) are untied"),
    llvm::cl::init(false));

/// torch.onnx.export's constant folding unties a tied LM head by writing
/// the embedding's transpose as a second initializer.
static llvm::cl::opt<bool> tieEqualWeights(
    "tie-equal-weights",
    llvm::cl::desc(
        "When importing an ONNX model, tie each floating-point initializer "
        "bitwise equal to an earlier one, or to its 2-D transpose, to that "
        "one; without it, the import warns naming both"));

static llvm::cl::opt<std::string> weightsPath(
    "weights",
    llvm::cl::desc("After importing a model, start its parameters from these "
                   "Hugging Face safetensors weights, by name (a .safetensors "
                   "file, a model.safetensors.index.json or their folder; as "
                   "pp-run --weights)"),
    llvm::cl::value_desc("file|index|dir"), llvm::cl::init(""));

static llvm::cl::opt<std::string> weightsPrefix(
    "weights-prefix",
    llvm::cl::desc("With --weights: the model's parameter names are the "
                   "file's with this in front"),
    llvm::cl::value_desc("prefix"), llvm::cl::init(""));

static llvm::cl::opt<bool> weightsStrict(
    "weights-strict",
    llvm::cl::desc("With --weights: refuse a file that lacks a parameter of "
                   "the model or holds a tensor it does not have (default "
                   "true)"),
    llvm::cl::init(true));

static llvm::cl::opt<std::string> emitDirectory(
    "pp-emit",
    llvm::cl::desc("After the pass pipeline, write a pipeline package to this "
                   "directory (pp-emit-package)"),
    llvm::cl::value_desc("dir"), llvm::cl::init(""));

static llvm::cl::opt<bool> emitCuda(
    "pp-emit-cuda",
    llvm::cl::desc("With --pp-emit: also compile the package's CUDA library "
                   "(libstages_cuda.so) now, with nvcc; without it a CUDA "
                   "run compiles it when it first needs it"),
    llvm::cl::init(false));

static llvm::cl::opt<bool> printReport(
    "pp-report",
    llvm::cl::desc("After the pass pipeline, print each pipeline stage's and "
                   "rank's estimated time and memory to stdout (needs "
                   "pp-partition or --pp-compile in the pipeline)"),
    llvm::cl::init(false));

static llvm::cl::opt<bool> listOnnxOps(
    "list-onnx-ops",
    llvm::cl::desc("Print the ONNX op types the importer supports, one per "
                   "line, and exit"),
    llvm::cl::init(false));

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

/// The entries of the `--dim NAME=SIZE` or `--input-shape NAME=TYPE`
/// options `values`, added by `add`, or nullopt after printing what is wrong
/// with one.
template <typename Map>
static std::optional<Map> parseOptionMap(
    const llvm::cl::list<std::string> &values,
    std::string (*add)(llvm::StringRef, Map &)) {
  Map entries;
  for (const std::string &option : values)
    if (std::string error = add(option, entries); !error.empty()) {
      llvm::errs() << "pp-opt: " << error << "\n";
      return std::nullopt;
    }
  return entries;
}

namespace {

/// Imports a model (ONNX or TorchScript) into the empty module pp-opt
/// parses in its place: the first pass of the pipeline, so that the model
/// lands in the context the passes run in and its weights are never copied
/// on the way (no serialization and re-parse).
class ImportModelPass
    : public mlir::PassWrapper<ImportModelPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
public:
  using Importer =
      std::function<mlir::OwningOpRef<mlir::ModuleOp>(mlir::MLIRContext *)>;
  explicit ImportModelPass(Importer importer)
      : importer(std::move(importer)) {}

  llvm::StringRef getArgument() const override { return "pp-import-model"; }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<pp::nn::NNDialect, pp::PPDialect, mlir::arith::ArithDialect,
                    mlir::func::FuncDialect>();
  }

  void runOnOperation() override {
    mlir::OwningOpRef<mlir::ModuleOp> imported = importer(&getContext());
    if (!imported)
      return signalPassFailure();
    mlir::ModuleOp module = getOperation();
    module.getBody()->getOperations().splice(
        module.getBody()->end(), imported->getBody()->getOperations());
    module->setAttrs(imported.get()->getAttrDictionary());
    module->setLoc(imported->getLoc());
  }

private:
  Importer importer;
};

/// Loads --weights into the imported model's initial values (LoadWeights.h).
class LoadWeightsPass
    : public mlir::PassWrapper<LoadWeightsPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
public:
  LoadWeightsPass(std::string path, pp::runtime::WeightsNaming naming)
      : path(std::move(path)), naming(std::move(naming)) {}

  llvm::StringRef getArgument() const override { return "pp-load-weights"; }

  void runOnOperation() override {
    if (mlir::failed(
            pp::loadWeights(getOperation(), path, naming, llvm::errs())))
      signalPassFailure();
  }

private:
  std::string path;
  pp::runtime::WeightsNaming naming;
};

/// Prints the partition report (pp::printPartitionReport) of the module.
class PrintReportPass
    : public mlir::PassWrapper<PrintReportPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
public:
  llvm::StringRef getArgument() const override { return "pp-print-report"; }

  void runOnOperation() override {
    if (mlir::failed(pp::printPartitionReport(getOperation(), llvm::outs())))
      signalPassFailure();
    llvm::outs().flush();
  }
};

} // namespace

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<pp::nn::NNDialect, pp::PPDialect, mlir::arith::ArithDialect,
                  mlir::emitc::EmitCDialect, mlir::func::FuncDialect,
                  mlir::tensor::TensorDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  pp::registerPasses();

  // A diagnostic names its op's location, without printing the op: a
  // model's whole function (weights included) would flood the terminal.
  // --mlir-print-op-on-diagnostic brings the printout back.
  std::vector<char *> args(argv, argv + argc);
  std::string quiet = "--mlir-print-op-on-diagnostic=false";
  if (llvm::none_of(args, [](const char *arg) {
        return llvm::StringRef(arg).contains("mlir-print-op-on-diagnostic");
      }))
    args.insert(args.begin() + 1, quiet.data());
  auto [inputPath, outputPath] = mlir::registerAndParseCLIOptions(
      static_cast<int>(args.size()), args.data(),
      "pp compiler driver: partitions models into pipelines\n", registry);
  if (listOnnxOps) {
    std::string list = pp::onnx_frontend::supportedOnnxOps();
    llvm::SmallVector<llvm::StringRef> ops;
    llvm::StringRef(list).split(ops, ", ");
    for (llvm::StringRef op : ops)
      llvm::outs() << op << "\n";
    return 0;
  }
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();

  // A model is imported by the pipeline's first pass into an empty module
  // that stands in for the input.
  std::unique_ptr<llvm::MemoryBuffer> input;
  std::string message;
  std::optional<ImportModelPass> importModel;
  int modelFile = -1;
  int64_t modelBatchSize =
      batchSize ? batchSize.getValue()
                : microbatchSizeOfPipeline(static_cast<int>(args.size()),
                                           args.data());
  bool torchScript =
      pp::torchscript_frontend::isTorchScriptModelPath(inputPath);
  // Only a regular file is read: a FIFO would block, a device never end.
  if (inputPath != "-")
    if (std::string problem = pp::runtime::inputFileProblem(
            inputPath,
            torchScript ||
                    pp::torchexport_frontend::isTorchExportModelPath(
                        inputPath) ||
                    pp::onnx_frontend::isOnnxModelPath(inputPath)
                ? "the model"
                : "the input");
        !problem.empty()) {
      llvm::errs() << "pp-opt: " << problem << "\n";
      return EXIT_FAILURE;
    }
  if (!torchScript && !inputShapes.empty()) {
    llvm::errs() << "pp-opt: --input-shape types the arguments of "
                    "TorchScript modules; '"
                 << inputPath << "' is not one (.pt)\n";
    return EXIT_FAILURE;
  }
  const llvm::cl::opt<bool> *onnxOnly[] = {&untieSharedWeights,
                                           &tieEqualWeights};
  for (const llvm::cl::opt<bool> *flag : onnxOnly)
    if (torchScript && *flag) {
      llvm::errs() << "pp-opt: --" << flag->ArgStr
                   << " applies to ONNX models; '" << inputPath
                   << "' is a TorchScript module, whose parameters are never "
                   << "merged or folded\n";
      return EXIT_FAILURE;
    }
  if (torchScript) {
    auto types = parseOptionMap(inputShapes,
                                &pp::torchscript_frontend::addInputType);
    if (!types)
      return EXIT_FAILURE;
    pp::torchscript_frontend::ImportOptions options;
    options.batchSize = modelBatchSize;
    options.inputTypes = std::move(*types);
    importModel.emplace([path = inputPath, options](mlir::MLIRContext *context) {
      return pp::torchscript_frontend::importTorchScriptFile(path, context,
                                                             options);
    });
    input = llvm::MemoryBuffer::getMemBuffer("", inputPath);
  } else if (pp::torchexport_frontend::isTorchExportModelPath(inputPath)) {
    if (untieSharedWeights || tieEqualWeights) {
      llvm::errs() << "pp-opt: --untie-shared-weights and --tie-equal-weights "
                      "apply to ONNX models; '"
                   << inputPath
                   << "' is a torch.export archive, whose parameters are "
                      "never merged or folded\n";
      return EXIT_FAILURE;
    }
    auto sizes = parseOptionMap(dimSizes, &pp::onnx_frontend::addDimSize);
    if (!sizes)
      return EXIT_FAILURE;
    pp::torchexport_frontend::ImportOptions options;
    options.batchSize = modelBatchSize;
    options.dimSizes = std::move(*sizes);
    importModel.emplace([path = inputPath, options](mlir::MLIRContext *context) {
      return pp::torchexport_frontend::importTorchExportFile(path, context,
                                                             options);
    });
    input = llvm::MemoryBuffer::getMemBuffer("", inputPath);
  } else if (pp::onnx_frontend::isOnnxModelPath(inputPath)) {
    auto sizes = parseOptionMap(dimSizes, &pp::onnx_frontend::addDimSize);
    if (!sizes)
      return EXIT_FAILURE;
    if (std::error_code error =
            llvm::sys::fs::openFileForRead(inputPath, modelFile)) {
      llvm::errs() << "pp-opt: cannot read '" << inputPath
                   << "': " << error.message() << "\n";
      return EXIT_FAILURE;
    }
    pp::onnx_frontend::ImportOptions options;
    options.batchSize = modelBatchSize;
    options.dimSizes = std::move(*sizes);
    options.untieSharedWeights = untieSharedWeights;
    options.tieEqualWeights = tieEqualWeights;
    importModel.emplace([fd = modelFile, path = inputPath,
                         options](mlir::MLIRContext *context) {
      return pp::onnx_frontend::importOnnxFile(fd, path, context, options);
    });
    input = llvm::MemoryBuffer::getMemBuffer("", inputPath);
  } else if (!dimSizes.empty()) {
    llvm::errs() << "pp-opt: --dim sizes the dimensions of ONNX models and "
                    "torch.export archives; '"
                 << inputPath << "' is neither (.onnx, .onnxtxt, .pt2)\n";
    return EXIT_FAILURE;
  } else if (untieSharedWeights || tieEqualWeights) {
    llvm::errs() << "pp-opt: --"
                 << (untieSharedWeights ? "untie-shared-weights"
                                        : "tie-equal-weights")
                 << " applies to ONNX models; '" << inputPath
                 << "' is not one (.onnx, .onnxtxt)\n";
    return EXIT_FAILURE;
  } else {
    input = mlir::openInputFile(inputPath, &message);
    if (!input) {
      llvm::errs() << "pp-opt: " << message << "\n";
      return EXIT_FAILURE;
    }
  }
  if (!weightsPath.empty() && !importModel) {
    llvm::errs() << "pp-opt: --weights gives an imported model its "
                    "parameters; '"
                 << inputPath
                 << "' is not a model file (.onnx, .onnxtxt, .pt, .pt2)\n";
    return EXIT_FAILURE;
  }
  if (importModel || !emitDirectory.empty() || printReport) {
    mlir::MlirOptMainConfig base = config;
    config.setPassPipelineSetupFn([base, &importModel](mlir::PassManager &pm) {
      if (importModel)
        pm.addPass(std::make_unique<ImportModelPass>(*importModel));
      if (!weightsPath.empty())
        pm.addPass(std::make_unique<LoadWeightsPass>(
            weightsPath, pp::runtime::WeightsNaming{weightsPrefix,
                                                    weightsStrict}));
      if (mlir::failed(base.setupPassPipeline(pm)))
        return mlir::failure();
      if (printReport)
        pm.addPass(std::make_unique<PrintReportPass>());
      if (!emitDirectory.empty()) {
        pp::EmitPackageOptions options;
        options.dir = emitDirectory;
        options.compileCuda = emitCuda;
        pm.addPass(pp::createEmitPackage(options));
      }
      return mlir::success();
    });
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputPath, &message);
  if (!output) {
    llvm::errs() << "pp-opt: " << message << "\n";
    return EXIT_FAILURE;
  }
  mlir::LogicalResult result =
      mlir::MlirOptMain(output->os(), std::move(input), registry, config);
  if (modelFile >= 0)
    llvm::sys::Process::SafelyCloseFileDescriptor(modelFile);
  if (mlir::failed(result))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
