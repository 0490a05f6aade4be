//===- ModelCache.cpp - compile models for pp-run, cached -----------------===//

#include "tools/pp-run/ModelCache.h"

#include "frontends/onnx/ExternalData.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/torchexport/TorchExportImporter.h"
#include "frontends/torchscript/TorchScriptImporter.h"
#include "passes/Passes.h"
#include "runtime/core/CacheDirectory.h"
#include "runtime/core/FileLock.h"
#include "runtime/core/InputFile.h"
#include "runtime/core/OutputFile.h"
#include "runtime/core/Sha256.h"
#include "runtime/core/TrustedFiles.h"
#include "runtime/package/Package.h"
#include "runtime/package/StageCompiler.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;

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

/// --pad-sequence: the sizes that give the model a sequence the tensor
/// axis divides. Dimension 1 of each --input-shape NAME=TYPE (TorchScript:
/// [batch, sequence, ...]) and each --dim NAME=SIZE (a symbolic ONNX
/// dimension) that `devices` does not divide are rounded up to a multiple
/// of it; other entries stay as given.
static void padSequenceSizes(int64_t devices, std::vector<std::string> &dims,
                             std::vector<std::string> &inputShapes) {
  auto padded = [&](llvm::StringRef size) -> std::optional<std::string> {
    int64_t value = 0;
    if (size.getAsInteger(10, value) || value < 1 || value % devices == 0)
      return std::nullopt;
    return std::to_string(llvm::alignTo(value, devices));
  };
  for (std::string &dim : dims) {
    auto [name, size] = llvm::StringRef(dim).rsplit('=');
    if (std::optional<std::string> bigger = padded(size))
      dim = (name + "=" + *bigger).str();
  }
  for (std::string &shape : inputShapes) {
    auto [name, type] = llvm::StringRef(shape).split('=');
    llvm::SmallVector<llvm::StringRef> sizes;
    type.split(sizes, 'x');
    if (sizes.size() < 3)
      continue;
    if (std::optional<std::string> bigger = padded(sizes[1])) {
      std::string rewritten = (name + "=" + sizes[0]).str();
      for (size_t i = 1; i < sizes.size(); ++i)
        rewritten += "x" + (i == 1 ? *bigger : sizes[i].str());
      shape = rewritten;
    }
  }
}

/// Why `request`'s tensor-parallel options (--tp, --sp, --shard,
/// --pad-sequence) cannot be compiled, or "".
static std::string tensorParallelProblem(const ModelCompileRequest &request) {
  if (request.tensorParallel < 1)
    return "--tp must be at least 1, got " +
           std::to_string(request.tensorParallel);
  if (request.tensorParallel == 1)
    for (auto [given, flag] :
         {std::pair(request.sequenceParallel, "--sp"),
          std::pair(!request.shards.empty(), "--shard"),
          std::pair(request.padSequence, "--pad-sequence")})
      if (given)
        return std::string(flag) +
               " applies to tensor parallelism; add --tp T (T > 1)";
  for (const std::string &shard : request.shards) {
    llvm::StringRef name, dim;
    std::tie(name, dim) = llvm::StringRef(shard).rsplit('=');
    unsigned long long index = 0;
    if (name.empty() || dim.empty() || dim.getAsInteger(10, index) ||
        name.find_first_of(",{}\"' ") != llvm::StringRef::npos)
      return "--shard '" + shard +
             "' is not NAME=DIM (a parameter name without commas, braces, "
             "quotes or spaces, and a dimension index such as 0)";
  }
  return "";
}

/// The ONNX model in `model` imported from its first byte: the parse reads
/// the descriptor, so no mapping of the file stays resident beside the
/// parsed model.
static OwningOpRef<ModuleOp>
importOnnxFromStart(const pp::runtime::InputFile &model, llvm::StringRef path,
                    MLIRContext *context,
                    const pp::onnx_frontend::ImportOptions &options) {
  if (::lseek(model.fd(), 0, SEEK_SET) != 0) {
    emitError(UnknownLoc::get(context))
        << "cannot read '" << path
        << "' from its start: " << std::strerror(errno);
    return nullptr;
  }
  // The bytes the cache key hashed, even where the file has grown since.
  return pp::onnx_frontend::importOnnxFile(model.fd(), path, context, options,
                                           static_cast<int64_t>(model.size()));
}

namespace {

using pp::runtime::cacheLockPath;
using pp::runtime::FileLock;

/// The cache key of the staging directory `name` (`KEY.tmpPID`), or "".
llvm::StringRef stagingKey(llvm::StringRef name) {
  auto [key, rest] = name.split(".tmp");
  return key.size() == 32 && name.contains(".tmp") &&
                 key.find_first_not_of("0123456789abcdef") ==
                     llvm::StringRef::npos
             ? key
             : llvm::StringRef();
}

/// Removes what compiles that died left: staging directories of keys whose
/// lock nobody holds. The caller holds the lock of `ownKey`.
void removeAbandonedStaging(const std::string &root, llvm::StringRef ownKey) {
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(root, error), end;
       !error && it != end; it.increment(error)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    llvm::StringRef key = stagingKey(name);
    if (key.empty())
      continue;
    bool own = key == ownKey;
    std::string problem;
    std::optional<FileLock> lock =
        own ? std::nullopt
            : FileLock::acquire(cacheLockPath(root, key.str()),
                                /*wait=*/false, problem);
    if (own || lock) // Else a compile of that model is running.
      llvm::sys::fs::remove_directories(it->path());
  }
}

/// Where the SHA-256 of the manifest of the cache entry `packageDir` is
/// kept: `ROOT/.digests/KEY`, outside the entry, so that a manifest
/// rewritten to match other files does not match it.
std::string manifestDigestPath(const std::string &packageDir) {
  llvm::StringRef root = llvm::sys::path::parent_path(packageDir);
  llvm::StringRef key = llvm::sys::path::filename(packageDir);
  return (root + "/.digests/" + key).str();
}

/// The SHA-256 of the file `path` in hex, or "" when it cannot be read.
std::string digestOfFile(const std::string &path) {
  try {
    std::string bytes = pp::runtime::readInputFile(path, "the file");
    pp::runtime::Sha256 digest;
    digest.update(bytes.data(), bytes.size());
    return digest.hex();
  } catch (const std::runtime_error &) {
    return "";
  }
}

/// Why the cached package `directory` cannot be used: it has no manifest,
/// its manifest does not match the digest recorded beside it or does not
/// load, or a file does not match its digest; "" when it is whole.
std::string damageOf(const std::string &directory) {
  using pp::runtime::kManifestFileName;
  std::string manifest = directory + "/" + kManifestFileName;
  if (!llvm::sys::fs::exists(manifest))
    return std::string("it has no ") + kManifestFileName;
  std::string recorded;
  try {
    recorded = pp::runtime::readInputFile(manifestDigestPath(directory),
                                          "the manifest's digest");
  } catch (const std::runtime_error &) {
  }
  if (recorded.empty() || recorded != digestOfFile(manifest))
    return std::string("its ") + kManifestFileName +
           " does not match the SHA-256 recorded in '" +
           manifestDigestPath(directory) + "'";
  try {
    pp::runtime::Package package = pp::runtime::Package::load(directory);
    for (const auto &file : package.files) {
      std::string problem = package.fileProblem(file.first);
      if (!problem.empty())
        return problem;
    }
  } catch (const std::exception &failure) {
    return failure.what();
  }
  return "";
}

} // namespace

std::optional<std::string> compileModel(const ModelCompileRequest &request,
                                        std::string &problem) {
  bool torchScript =
      pp::torchscript_frontend::isTorchScriptModelPath(request.modelPath);
  bool torchExport =
      pp::torchexport_frontend::isTorchExportModelPath(request.modelPath);
  if (!torchScript && !torchExport &&
      !pp::onnx_frontend::isOnnxModelPath(request.modelPath)) {
    problem = "'" + request.modelPath +
              "' is neither a package directory, an ONNX model "
              "(.onnx or .onnxtxt), a TorchScript module (.pt) nor a "
              "torch.export archive (.pt2)";
    return std::nullopt;
  }
  if (!torchScript && !request.inputShapes.empty()) {
    problem = "--input-shape types the arguments of TorchScript modules; '" +
              request.modelPath + "' is not one (.pt)";
    return std::nullopt;
  }
  if (request.microbatchSize < 1 && !request.infer) {
    problem = "compiling a model needs --microbatch-size B (B >= 1)";
    return std::nullopt;
  }
  if (request.loss.empty() && !request.infer) {
    problem = "compiling a model needs --loss KIND:OUTPUT (KIND mse or "
              "cross_entropy), or --infer for a forward-only run";
    return std::nullopt;
  }
  if (request.stages < 1) {
    problem =
        "--stages must be at least 1, got " + std::to_string(request.stages);
    return std::nullopt;
  }
  for (auto [given, flag] :
       {std::pair(request.untieSharedWeights, "--untie-shared-weights"),
        std::pair(request.tieEqualWeights, "--tie-equal-weights")})
    if ((torchScript || torchExport) && given) {
      problem = std::string(flag) + " applies to ONNX models; '" +
                request.modelPath + "' is a " +
                (torchScript ? "TorchScript module" : "torch.export archive") +
                ", whose parameters are never merged or folded";
      return std::nullopt;
    }
  problem = tensorParallelProblem(request);
  if (!problem.empty())
    return std::nullopt;
  std::vector<std::string> dims = request.dims;
  std::vector<std::string> inputShapes = request.inputShapes;
  if (request.padSequence)
    padSequenceSizes(request.tensorParallel, dims, inputShapes);
  pp::onnx_frontend::ImportOptions options;
  options.batchSize = request.symbolicBatchSize ? request.symbolicBatchSize
                                                : request.microbatchSize;
  options.untieSharedWeights = request.untieSharedWeights;
  options.tieEqualWeights = request.tieEqualWeights;
  for (const std::string &dim : dims) {
    problem = pp::onnx_frontend::addDimSize(dim, options.dimSizes);
    if (!problem.empty())
      return std::nullopt;
  }
  pp::torchscript_frontend::ImportOptions torchOptions;
  torchOptions.batchSize = options.batchSize;
  for (const std::string &type : inputShapes) {
    problem = pp::torchscript_frontend::addInputType(type,
                                                     torchOptions.inputTypes);
    if (!problem.empty())
      return std::nullopt;
  }
  // Opened once, a regular file, its size fixed before parsing.
  std::optional<pp::runtime::InputFile> model;
  try {
    model = pp::runtime::InputFile::open(request.modelPath, "the model");
  } catch (const std::runtime_error &failure) {
    problem = failure.what();
    return std::nullopt;
  }
  auto file = llvm::MemoryBuffer::getOpenFile(model->fd(), request.modelPath,
                                              model->size());
  if (!file) {
    problem =
        "cannot read '" + request.modelPath + "': " + file.getError().message();
    return std::nullopt;
  }

  std::string pipeline =
      "pp-compile{stages=" + std::to_string(request.stages) +
      " microbatch-size=" + std::to_string(request.microbatchSize);
  if (request.infer) {
    pipeline += " infer=true";
  } else {
    std::optional<std::string> lossOption =
        quotedOptionValue("--loss", request.loss, problem);
    if (!lossOption)
      return std::nullopt;
    pipeline += " loss=" + *lossOption;
  }
  if (!request.infer) {
    if (request.virtualStages != 1 || request.placement != "loop")
      pipeline += " virtual-stages=" + std::to_string(request.virtualStages) +
                  " placement=" + request.placement;
    if (request.splitBackward)
      pipeline += " split-backward=true";
    // The schedule, microbatches, data parallelism and optimizer only
    // matter to the memory a rank holds.
    if (request.memoryLimit > 0)
      pipeline += " memory-limit=" + std::to_string(request.memoryLimit) +
                  " schedule=" + request.schedule +
                  " microbatches=" + std::to_string(request.microbatches) +
                  " data-parallel=" + std::to_string(request.dataParallel) +
                  " zero=" + std::to_string(request.zeroLevel) +
                  llvm::formatv(" optimizer-state={0:e3}", request.optimizerState)
                      .str() +
                  (request.offloadActivations ? " offload-activations=true"
                                              : "");
  }
  if (request.flopRate > 0)
    pipeline += llvm::formatv(" flop-rate={0:e3} byte-rate={1:e3} "
                              "link-rate={2:e3}",
                              request.flopRate, request.byteRate,
                              request.linkRate)
                    .str();
  if (!request.splitPoints.empty())
    pipeline += " split-points=" + llvm::join(request.splitPoints, ",");
  if (request.precision != "f32")
    pipeline += " precision=" + request.precision;
  if (request.recompute != "none")
    pipeline += " recompute=" + request.recompute;
  if (request.fuseAttention != "auto")
    pipeline += " fuse-attention=" + request.fuseAttention;
  if (request.fuseCrossEntropy != "auto")
    pipeline += " fuse-cross-entropy=" + request.fuseCrossEntropy;
  if (request.crossEntropyChunk != 0)
    pipeline +=
        " cross-entropy-chunk=" + std::to_string(request.crossEntropyChunk);
  if (!request.recomputeOps.empty()) {
    std::optional<std::string> ops = quotedOptionValue(
        "--recompute-ops", request.recomputeOps, problem);
    if (!ops)
      return std::nullopt;
    pipeline += " recompute-ops=" + *ops;
  }
  if (request.tensorParallel > 1)
    pipeline += " tp=" + std::to_string(request.tensorParallel);
  if (request.sequenceParallel)
    pipeline += " sp=true";
  if (!request.shards.empty())
    pipeline += " shard=" + llvm::join(request.shards, ",");
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
  pp::runtime::Sha256 hash;
  auto add = [&](llvm::StringRef text) {
    hash.update(text.data(), text.size());
  };
  add((*file)->getBuffer());
  add(pipeline);
  for (const std::string &dim : dims)
    add(std::string("\0--dim=", 7) + dim);
  for (const std::string &type : inputShapes)
    add(std::string("\0--input-shape=", 15) + type);
  if (request.untieSharedWeights)
    add(std::string("\0--untie-shared-weights", 23));
  if (request.tieEqualWeights)
    add(std::string("\0--tie-equal-weights", 20));
  add(std::string("\0batch=", 7) + std::to_string(options.batchSize));
  // A rebuilt compiler or runtime makes new packages, and new weights in
  // an ONNX model's external data files a new model: the cache key covers
  // this pp-run, the runtime library the packages link and those files.
  add(pp::runtime::stageCompilerIdentity(pp::runtime::StageTarget::Cpu));
  std::vector<std::string> stamped = {
      llvm::sys::fs::getMainExecutable(nullptr, nullptr)};
  if (!torchScript)
    llvm::append_range(stamped, pp::onnx_frontend::externalDataFiles(
                                    (*file)->getBuffer(), request.modelPath));
  for (const std::string &file : stamped) {
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(file, status))
      add(file + ":" + std::to_string(status.getSize()) + ":" +
          std::to_string(
              status.getLastModificationTime().time_since_epoch().count()));
  }
  std::string key = hash.hex().substr(0, 32);
  std::string root = pp::runtime::cacheRoot(request.cacheDir);
  std::string packageDir = root + "/" + key;
  // The cache holds code every rank loads: it must be this user's alone.
  bool defaultRoot = request.cacheDir.empty() && !std::getenv("PP_CACHE_DIR");
  problem = pp::runtime::preparePrivateDirectory(root, /*repair=*/defaultRoot,
                                                 "the cache directory");
  if (!problem.empty()) {
    problem += " (set --cache-dir or PP_CACHE_DIR)";
    return std::nullopt;
  }
  // One compile of a model at a time: the lock of its key covers checking,
  // repairing and building its entry.
  std::optional<FileLock> lock =
      FileLock::acquire(cacheLockPath(root, key), /*wait=*/true, problem);
  if (!lock) {
    // A cache this user cannot write: a whole entry can still be used.
    if (!damageOf(packageDir).empty())
      return std::nullopt;
    problem.clear();
    return packageDir;
  }
  removeAbandonedStaging(root, key);
  if (llvm::sys::fs::exists(packageDir)) {
    problem = pp::runtime::untrustedPathProblem(packageDir, "the cached package");
    if (!problem.empty())
      return std::nullopt;
    std::string damage = damageOf(packageDir);
    if (damage.empty())
      return packageDir;
    llvm::WithColor::warning(llvm::errs(), "pp-run")
        << "the cached package '" << packageDir << "' is damaged (" << damage
        << "); compiling the model again\n";
    if (std::error_code error = llvm::sys::fs::remove_directories(
            packageDir, /*IgnoreErrors=*/false)) {
      problem = "cannot remove the damaged cached package '" + packageDir +
                "': " + error.message() + "; remove it by hand";
      return std::nullopt;
    }
  }

  // Build in a private directory, then rename: no run ever sees a
  // half-written package, and a compile that dies leaves only the private
  // directory, which the next compile removes.
  std::string staging =
      packageDir + ".tmp" + std::to_string(static_cast<long>(::getpid()));
  // Every file of the entry is this user's alone (0700/0600), whatever
  // the umask: the compile writes them all, the stage libraries included.
  struct PrivateFiles {
    mode_t previous = ::umask(077);
    ~PrivateFiles() { ::umask(previous); }
  } privateFiles;
  if (std::error_code error = llvm::sys::fs::create_directories(
          staging, /*IgnoreExisting=*/true, llvm::sys::fs::perms::owner_all)) {
    problem = "cannot create the cache directory '" + staging +
              "': " + error.message() + " (set --cache-dir or PP_CACHE_DIR)";
    return std::nullopt;
  }

  // Hashed: the mapping goes before the import, whose parse holds the
  // model's bytes again (the pages read through the mapping would stay in
  // this process's resident memory beside them).
  file->reset();
  DialectRegistry registry;
  MLIRContext context(registry);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == DiagnosticSeverity::Error) {
      llvm::raw_string_ostream os(diagnostics);
      os << (diagnostics.empty() ? "" : "\n") << diagnostic.getLocation()
         << ": " << diagnostic.str();
    } else if (diagnostic.getSeverity() == DiagnosticSeverity::Warning) {
      // The import's warnings (initializers that look tied, ...) are said
      // when the model compiles; a cached package does not repeat them.
      llvm::WithColor::warning(llvm::errs(), "pp-run")
          << request.modelPath << ": " << diagnostic.str() << "\n";
    }
    return success();
  });
  pp::torchexport_frontend::ImportOptions exportOptions;
  exportOptions.batchSize = options.batchSize;
  exportOptions.dimSizes = options.dimSizes;
  OwningOpRef<ModuleOp> module =
      torchScript ? pp::torchscript_frontend::importTorchScriptFile(
                        request.modelPath, &context, torchOptions)
      : torchExport
          ? pp::torchexport_frontend::importTorchExportFile(
                request.modelPath, &context, exportOptions)
          : importOnnxFromStart(*model, request.modelPath, &context, options);
  PassManager pm(&context);
  pp::EmitPackageOptions emit;
  emit.dir = staging;
  bool ok = module && succeeded(parsePassPipeline(pipeline, pm));
  if (ok) {
    pm.addPass(pp::createEmitPackage(emit));
    ok = succeeded(pm.run(*module));
  }
  if (!ok) {
    llvm::sys::fs::remove_directories(staging);
    problem = "cannot compile '" + request.modelPath + "':\n" + diagnostics;
    return std::nullopt;
  }
  try {
    llvm::sys::fs::create_directories(root + "/.digests",
                                      /*IgnoreExisting=*/true,
                                      llvm::sys::fs::perms::owner_all);
    pp::runtime::writeOutputFile(
        manifestDigestPath(packageDir),
        digestOfFile(staging + "/" + pp::runtime::kManifestFileName),
        "the manifest's digest", 0600);
  } catch (const std::runtime_error &failure) {
    llvm::sys::fs::remove_directories(staging);
    problem = failure.what();
    return std::nullopt;
  }
  if (std::error_code error = llvm::sys::fs::rename(staging, packageDir)) {
    llvm::sys::fs::remove_directories(staging);
    problem = "cannot move the compiled package into '" + packageDir +
              "': " + error.message();
    return std::nullopt;
  }
  return packageDir;
}
