//===- Package.cpp - a compiled pipeline package --------------------------===//

#include "runtime/package/Package.h"
#include "runtime/kernels/FloatElements.h"

#include "runtime/core/TrustedFiles.h"

#include <algorithm>
#include <cstdint>
#include <dlfcn.h>
#include <map>
#include <set>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace pp::runtime {
namespace {

[[noreturn]] void invalid(const std::string &directory,
                          const std::string &message) {
  throw std::runtime_error("invalid pipeline package '" + directory +
                           "': " + message);
}

/// Throws: a file of the package does not match the manifest's record
/// (`problem`).
[[noreturn]] void damaged(const std::string &directory,
                          const std::string &problem) {
  invalid(directory, problem + ": the package is damaged; compile it again "
                               "(pp-opt --pp-emit)");
}

/// pp-partition's estimate of `cost`'s stage, or nullopt for a stage
/// without times.
std::optional<StageEstimate> estimateOf(const StageCost &cost) {
  if (!cost.forwardMicros)
    return std::nullopt;
  StageEstimate stage;
  stage.rank = cost.rank.value_or(0);
  stage.forwardSeconds = *cost.forwardMicros * 1e-6;
  stage.backwardInputSeconds = cost.backwardInputMicros.value_or(0) * 1e-6;
  stage.backwardWeightSeconds = cost.backwardWeightMicros.value_or(0) * 1e-6;
  stage.totalSeconds = cost.estimatedMicros.value_or(0) * 1e-6;
  stage.parameterCount = cost.parameterCount.value_or(0);
  stage.parameterBytes = cost.parameterBytes.value_or(0);
  stage.gradientBytes = cost.gradientBytes.value_or(0);
  stage.optimizerBytes = cost.optimizerBytes.value_or(0);
  stage.savedBytes = cost.savedBytes.value_or(0);
  stage.inFlight = cost.inFlight.value_or(0);
  stage.firstNode = cost.firstNode.value_or("");
  stage.lastNode = cost.lastNode.value_or("");
  stage.boundary =
      cost.boundary.value_or(std::vector<std::pair<std::string, double>>());
  return stage;
}

/// Bytes of the compute copies (each name and dtype once) that the
/// functions of `stage` take.
double computeCopyBytes(const StageInfo &stage) {
  std::set<std::pair<std::string, pp_dtype>> copies;
  double bytes = 0;
  for (const StageFunctionInfo &function : stage.functions)
    for (const TensorInfo &arg : function.args)
      if (arg.role == Role::ComputeCopy &&
          copies.insert({arg.name, arg.dtype}).second)
        bytes += static_cast<double>(numElements(arg.shape)) *
                 static_cast<double>(pp_dtype_size(arg.dtype));
  return bytes;
}

/// Sets what `package` derives from its stage costs: each stage's saved
/// bytes and, when every stage has times, its estimates.
void deriveEstimates(Package &package) {
  std::vector<StageEstimate> estimates;
  for (const StageCost &cost : package.stageCosts) {
    package.estimatedSavedBytes.push_back(cost.savedBytes);
    if (std::optional<StageEstimate> estimate = estimateOf(cost))
      estimates.push_back(std::move(*estimate));
  }
  if (static_cast<int64_t>(estimates.size()) != package.numStages)
    return;
  for (size_t s = 0; s < estimates.size(); ++s)
    estimates[s].computeCopyBytes = computeCopyBytes(package.stages.at(s));
  package.stageEstimates = std::move(estimates);
}

/// Checks that every saved argument of a stage's functions is a saved
/// result of an earlier function of the stage, with the same name.
void checkSavedValues(const std::string &directory, int64_t stage,
                      const StageInfo &info) {
  std::map<std::string, const StageFunctionInfo *> producers;
  std::string earlier;
  for (const StageFunctionInfo &function : info.functions) {
    for (const TensorInfo &arg : function.args) {
      if (arg.role != Role::Saved || producers.count(arg.name))
        continue;
      invalid(directory,
              "stage " + std::to_string(stage) + ": " + function.symbol +
                  " takes the saved value '" + arg.name + "', but " +
                  (earlier.empty() ? "no function runs before it"
                                   : "no earlier function (" + earlier +
                                         ") returns a saved value of that "
                                         "name"));
    }
    for (const TensorInfo &result : function.results) {
      if (result.role != Role::Saved)
        continue;
      auto [it, added] = producers.emplace(result.name, &function);
      if (!added)
        invalid(directory, "stage " + std::to_string(stage) + ": " +
                               it->second->symbol + " and " + function.symbol +
                               " both return a saved value named '" +
                               result.name + "'");
    }
    earlier += (earlier.empty() ? "" : ", ") + function.symbol;
  }
}

/// Checks that the parameter-like arguments of a stage's functions and
/// their gradients name entries of the manifest's parameters on that stage,
/// that only trainable ones get gradients, and that a compute copy has its
/// master's shape.
void checkParameterUses(const Package &package, int64_t stage) {
  std::map<std::string, Role> roles;
  std::map<std::string, const Shape *> shapes;
  for (const ParameterInfo &parameter : package.parameters)
    if (parameter.heldBy(stage)) {
      roles[parameter.tensor.name] = parameter.tensor.role;
      shapes[parameter.tensor.name] = &parameter.tensor.shape;
    }
  auto fail = [&](const StageFunctionInfo &function, const TensorInfo &tensor,
                  const std::string &problem) {
    invalid(package.directory,
            function.symbol + " (stage " + std::to_string(stage) + ") has " +
                roleName(tensor.role) + " '" + tensor.name + "', " + problem);
  };
  for (const StageFunctionInfo &function : package.stages[stage].functions) {
    for (const TensorInfo &arg : function.args) {
      if (arg.role == Role::ComputeCopy) {
        auto it = shapes.find(arg.name);
        if (it == shapes.end())
          fail(function, arg,
               "a copy of a parameter \"parameters\" does not list on this "
               "stage");
        else if (*it->second != arg.shape)
          fail(function, arg,
               "of shape " + formatShape(arg.shape) +
                   ", but its parameter's shape is " +
                   formatShape(*it->second));
      }
      if (!isParameterRole(arg.role))
        continue;
      auto it = roles.find(arg.name);
      if (it == roles.end())
        fail(function, arg, "which \"parameters\" does not list on this stage");
      else if (it->second != arg.role)
        fail(function, arg,
             std::string("which \"parameters\" lists as ") +
                 roleName(it->second));
    }
    for (const TensorInfo &result : function.results)
      if (result.role == Role::Gradient &&
          (!roles.count(result.name) ||
           roles.at(result.name) != Role::Parameter))
        fail(function, result,
             "but \"parameters\" lists no trainable parameter of that name "
             "on this stage");
  }
}

/// Checks that a forward-only package has forward functions only and that
/// each output is a result of the forward function of its stage.
void checkOutputs(const Package &package) {
  for (int64_t stage = 0; stage < package.numStages; ++stage)
    for (const StageFunctionInfo &function : package.stages[stage].functions)
      if (function.phase != Phase::Forward)
        invalid(package.directory,
                "the package is forward-only (it lists outputs, no loss), "
                "but stage " + std::to_string(stage) + " has the " +
                    phaseName(function.phase) + " function " +
                    function.symbol);
  for (const OutputInfo &output : package.outputs) {
    const std::vector<TensorInfo> &results =
        package.stages[output.stage].functions.front().results;
    bool returned = std::any_of(
        results.begin(), results.end(), [&](const TensorInfo &result) {
          return result.role == Role::Output &&
                 result.name == output.tensor.name &&
                 result.dtype == output.tensor.dtype &&
                 result.shape == output.tensor.shape;
        });
    if (!returned)
      invalid(package.directory,
              "output '" + output.tensor.name + "' (" +
                  formatShape(output.tensor.shape) + " " +
                  pp_dtype_name(output.tensor.dtype) + ") is not a result " +
                  "of the forward function of its stage " +
                  std::to_string(output.stage));
  }
}

/// Checks that all stages of a training package have one eval function or
/// none does, and that each runs alone: it takes inputs, labels and
/// parameters only, and returns the loss exactly where its stage's forward
/// does, nothing else.
void checkEvalFunctions(const Package &package) {
  auto where = [](int64_t stage, const StageFunctionInfo &function) {
    return function.symbol + " (stage " + std::to_string(stage) + ")";
  };
  std::optional<int64_t> withEval, withoutEval;
  for (int64_t stage = 0; stage < package.numStages; ++stage) {
    const StageFunctionInfo *eval = nullptr;
    for (const StageFunctionInfo &function : package.stages[stage].functions) {
      if (function.phase != Phase::Eval)
        continue;
      if (eval)
        invalid(package.directory,
                "stage " + std::to_string(stage) + " has two eval functions, " +
                    eval->symbol + " and " + function.symbol);
      eval = &function;
    }
    if (!eval) {
      withoutEval = withoutEval.value_or(stage);
      continue;
    }
    withEval = withEval.value_or(stage);
    for (const TensorInfo &arg : eval->args)
      if (arg.role != Role::Input && arg.role != Role::Label &&
          arg.role != Role::ComputeCopy && !isParameterRole(arg.role))
        invalid(package.directory,
                where(stage, *eval) + " takes " + roleName(arg.role) + " '" +
                    arg.name +
                    "', but an eval function runs alone: it takes "
                    "inputs, labels and parameters only");
    auto losses = [](const StageFunctionInfo &function) {
      return std::count_if(
          function.results.begin(), function.results.end(),
          [](const TensorInfo &result) { return result.role == Role::Loss; });
    };
    const StageFunctionInfo &forward = package.stages[stage].functions.front();
    for (const TensorInfo &result : eval->results)
      if (result.role != Role::Loss)
        invalid(package.directory, where(stage, *eval) + " returns " +
                                       roleName(result.role) + " '" +
                                       result.name +
                                       "', but an eval function returns "
                                       "the loss only");
    if (losses(*eval) != losses(forward))
      invalid(package.directory, where(stage, *eval) + " returns " +
                                     std::to_string(losses(*eval)) +
                                     " losses, but " + where(stage, forward) +
                                     " returns " +
                                     std::to_string(losses(forward)));
  }
  if (withEval && withoutEval)
    invalid(package.directory,
            "stage " + std::to_string(*withEval) +
                " has an eval function but stage " +
                std::to_string(*withoutEval) +
                " has none; every stage needs one (recompile the model)");
}

/// Checks what the trainer relies on: stages match the mesh, each stage
/// has a forward, saved values have producers, labels fit the loss, eval
/// functions run alone.
void checkPackage(const Package &package) {
  const std::string &directory = package.directory;
  const MeshAxis *pipeline = package.mesh.pipelineAxis();
  int64_t meshStages = pipeline ? pipeline->size : 1;
  if (package.numStages < 1 ||
      static_cast<int64_t>(package.stages.size()) != package.numStages)
    invalid(directory, "manifest.json lists " +
                           std::to_string(package.stages.size()) +
                           " stages but num_stages is " +
                           std::to_string(package.numStages));
  if (meshStages != package.pipelineRanks())
    invalid(directory, "the mesh (" + package.mesh.describe() + ") has " +
                           std::to_string(meshStages) +
                           " pipeline ranks but stage_ranks places the " +
                           std::to_string(package.numStages) +
                           " stages on " +
                           std::to_string(package.pipelineRanks()) +
                           " ranks; recompile the model");
  for (int64_t stage = 0; stage < package.numStages; ++stage) {
    const StageInfo &info = package.stages[stage];
    if (info.functions.empty() ||
        info.functions.front().phase != Phase::Forward)
      invalid(directory, "stage " + std::to_string(stage) +
                             " does not start with a forward function");
    checkSavedValues(directory, stage, info);
    checkParameterUses(package, stage);
  }
  if (package.forwardOnly()) {
    checkOutputs(package);
    return;
  }
  checkEvalFunctions(package);
  bool crossEntropy = package.lossKind == "cross_entropy";
  pp_dtype labels = package.labels.dtype;
  bool fits = crossEntropy ? labels == PP_DTYPE_I64
                           : visitFloatType(labels, [](auto) {});
  if (!fits)
    invalid(directory, "the labels '" + package.labels.name + "' are " +
                           pp_dtype_name(labels) + ", but a " +
                           package.lossKind + " loss needs " +
                           (crossEntropy ? "i64 class indices"
                                         : "f32, bf16 or f16 targets"));
}

bool isFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

} // namespace

Package Package::load(const std::string &directory) {
  struct stat info;
  if (::stat(directory.c_str(), &info) != 0)
    throw std::runtime_error("cannot read '" + directory +
                             "': no such file or directory");
  std::string manifestPath = directory + "/" + kManifestFileName;
  if (!S_ISDIR(info.st_mode) || !isFile(manifestPath))
    throw std::runtime_error("'" + directory +
                             "' is not a pipeline package: it has no " +
                             kManifestFileName +
                             " (create one with pp-opt MODEL "
                             "--pp-compile=... --pp-emit=DIR)");
  std::string text = readInputFile(manifestPath, "the manifest");
  Package package;
  try {
    static_cast<Manifest &>(package) = readManifest(text);
  } catch (const std::runtime_error &error) {
    invalid(directory, error.what());
  }
  package.directory = directory;
  deriveEstimates(package);
  checkPackage(package);
  package.indexGradientParts();
  return package;
}

std::string Package::contentProblem(const std::string &fileName,
                                    const InputFile &file) const {
  auto it = files.find(fileName);
  if (it == files.end())
    return fileName + " is not among the files " + kManifestFileName +
           " records";
  return digestProblem(fileName, file, it->second, kManifestFileName);
}

int64_t Package::pipelineRanks() const {
  return stageRanks.empty()
             ? 1
             : *std::max_element(stageRanks.begin(), stageRanks.end()) + 1;
}

bool Package::splitsBackward() const {
  for (const StageInfo &stage : stages)
    for (const StageFunctionInfo &function : stage.functions)
      if (function.phase == Phase::BackwardInput)
        return true;
  return false;
}

void Package::indexGradientParts() {
  struct Returned {
    int64_t part, stage;
    const std::string *symbol;
  };
  std::map<std::string, std::vector<Returned>> parts;
  for (int64_t stage = 0; stage < numStages; ++stage)
    for (const StageFunctionInfo &function : stages[stage].functions)
      for (const TensorInfo &result : function.results)
        if (result.role == Role::Gradient)
          parts[result.name].push_back({result.part, stage, &function.symbol});
  for (ParameterInfo &parameter : parameters) {
    auto returned = parts.find(parameter.tensor.name);
    if (returned == parts.end())
      continue;
    int64_t count = static_cast<int64_t>(returned->second.size());
    std::vector<int64_t> &partStages = parameter.gradientPartStages;
    partStages.assign(count, -1);
    bool numbered = true;
    for (const Returned &each : returned->second) {
      numbered = numbered && each.part < count && partStages[each.part] < 0;
      if (numbered)
        partStages[each.part] = each.stage;
    }
    if (numbered)
      continue;
    std::string found;
    for (const Returned &each : returned->second)
      found += (found.empty() ? "" : ", ") + std::to_string(each.part) + " (" +
               *each.symbol + ", stage " + std::to_string(each.stage) + ")";
    invalid(directory,
            "the " + std::to_string(count) + " gradient results named '" +
                parameter.tensor.name + "' must be its parts 0 to " +
                std::to_string(count - 1) + ", each once, but they are parts " +
                found + "; recompile the model");
  }
}

/// `fileName` of `package` opened, or nullopt with `problem` set.
static std::optional<InputFile> openPackageFile(const Package &package,
                                                const std::string &fileName,
                                                std::string &problem) {
  std::string path = package.directory + "/" + fileName;
  if (!isFile(path) && ::access(path.c_str(), F_OK) != 0) {
    problem = fileName + " is missing";
    return std::nullopt;
  }
  try {
    return InputFile::open(path, fileName);
  } catch (const std::runtime_error &failure) {
    problem = failure.what();
    return std::nullopt;
  }
}

std::string Package::fileProblem(const std::string &fileName) const {
  std::string problem;
  std::optional<InputFile> file = openPackageFile(*this, fileName, problem);
  return file ? contentProblem(fileName, *file) : problem;
}

std::optional<StageLibraryFile>
Package::compiledLibrary(StageTarget target) const {
  if (!compiledTargets.count(target))
    return std::nullopt;
  std::string fileName = stageTargetFiles(target).library;
  return StageLibraryFile{directory + "/" + fileName, files.at(fileName),
                          kManifestFileName};
}

void Package::loadStageLibrary(const StageLibraryFile &libraryFile) {
  const std::string &path = libraryFile.path;
  std::string fileName = path.substr(path.rfind('/') + 1);
  if (!isFile(path) && ::access(path.c_str(), F_OK) != 0)
    damaged(directory, fileName + " is missing");
  std::optional<InputFile> file;
  try {
    file = InputFile::open(path, "the stage library");
  } catch (const std::runtime_error &failure) {
    damaged(directory, failure.what());
  }
  // The bytes verified are the bytes loaded: the same open file, which
  // only this user (or root) can have written.
  std::string folder = path.substr(0, path.rfind('/'));
  std::string problem = untrustedFileProblem(file->fd(), path, "the stage library");
  if (problem.empty())
    problem = untrustedPathProblem(folder, "the stage library's directory");
  if (!problem.empty())
    invalid(directory, problem);
  problem = digestProblem(fileName, *file, libraryFile.digest,
                          libraryFile.recordedIn);
  if (!problem.empty())
    damaged(directory, problem);
  std::string opened = "/proc/self/fd/" + std::to_string(file->fd());
  library = ::dlopen(opened.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    invalid(directory, "cannot load " + fileName + ": " + ::dlerror());
  for (StageInfo &stage : stages)
    for (StageFunctionInfo &function : stage.functions) {
      function.entry = reinterpret_cast<StageFunctionPointer>(
          ::dlsym(library, function.symbol.c_str()));
      if (!function.entry)
        invalid(directory, fileName + " has no function " + function.symbol);
    }
}

void Package::readParameter(const ParameterInfo &parameter,
                            pp_tensor *tensor) const {
  if (parameter.bytes != pp_tensor_nbytes(tensor))
    invalid(directory, "parameters.bin holds " +
                           std::to_string(parameter.bytes) + " bytes for '" +
                           parameter.tensor.name + "', its shape needs " +
                           std::to_string(pp_tensor_nbytes(tensor)));
  if (!parameterFile) {
    std::string problem;
    parameterFile = openPackageFile(*this, kParametersFileName, problem);
    if (!parameterFile)
      invalid(directory, problem);
    // Verified through the file it is read from.
    problem = contentProblem(kParametersFileName, *parameterFile);
    if (!problem.empty())
      damaged(directory, problem);
  }
  if (!parameterFile->readAt(pp_tensor_data(tensor), parameter.bytes,
                             parameter.offset))
    invalid(directory, "parameters.bin is truncated: parameter '" +
                           parameter.tensor.name + "' needs bytes " +
                           std::to_string(parameter.offset) + " to " +
                           std::to_string(parameter.offset + parameter.bytes));
}

} // namespace pp::runtime
