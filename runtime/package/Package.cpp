//===- Package.cpp - a compiled pipeline package --------------------------===//

#include "runtime/package/Package.h"

#include "runtime/core/EnumNames.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>

namespace pp::runtime {
namespace {

using json = nlohmann::json;

[[noreturn]] void invalid(const std::string &directory,
                          const std::string &message) {
  throw std::runtime_error("invalid pipeline package '" + directory +
                           "': " + message);
}

constexpr EnumNames<Role, 9> kRoles = {
    {Role::Input, "input"},   {Role::Parameter, "parameter"},
    {Role::Frozen, "frozen"}, {Role::Constant, "constant"},
    {Role::Label, "label"},   {Role::LossScale, "loss_scale"},
    {Role::Loss, "loss"},     {Role::Gradient, "gradient"},
    {Role::Saved, "saved"},
};

/// `value`'s string field `field`, parsed by `parse`; an error names the
/// field, the value and the spellings allowed.
template <typename T>
T readEnum(const json &value, const char *field,
           std::optional<T> (*parse)(const std::string &),
           const char *allowed) {
  std::string text = value.at(field).get<std::string>();
  std::optional<T> parsed = parse(text);
  if (!parsed)
    throw std::runtime_error("unknown " + std::string(field) + " '" + text +
                             "' (expected " + allowed + ")");
  return *parsed;
}

std::optional<pp_dtype> parseDtype(const std::string &name) {
  pp_dtype dtype;
  if (pp_dtype_from_name(name.c_str(), &dtype) != PP_OK)
    return std::nullopt;
  return dtype;
}

/// `number` as an integer. Only JSON integers are: nlohmann converts a
/// float to an integer type with a plain cast, undefined behavior out of
/// range.
int64_t toInteger(const json &number, const std::string &field) {
  if (!number.is_number_integer())
    throw std::runtime_error(field + " must be an integer, not " +
                             number.dump());
  return number.get<int64_t>();
}

/// `value`'s integer field `field`; `fallback` when it has none and a
/// fallback is given.
int64_t readInteger(const json &value, const char *field,
                    std::optional<int64_t> fallback = std::nullopt) {
  if (fallback && !value.contains(field))
    return *fallback;
  return toInteger(value.at(field), field);
}

/// A tensor; `withRole` when the manifest gives it a role.
TensorInfo readTensor(const json &value, bool withRole) {
  TensorInfo tensor;
  tensor.name = value.value("name", "");
  if (withRole)
    tensor.role =
        readEnum(value, "role", parseRole,
                 "input, parameter, frozen, constant, label, loss_scale, "
                 "loss, gradient or saved");
  tensor.dtype = readEnum(value, "dtype", parseDtype,
                          "f32, f16, bf16, f64, i64, i32 or i1");
  const json &shape = value.at("shape");
  if (!shape.is_array())
    throw std::runtime_error("shape must be an array, not " + shape.dump());
  for (const json &dim : shape)
    tensor.shape.push_back(toInteger(dim, "shape"));
  return tensor;
}

StageFunctionInfo readFunction(const json &value) {
  StageFunctionInfo function;
  function.symbol = value.at("function").get<std::string>();
  function.phase = readEnum(value, "phase", parsePhase,
                            "forward, backward, backward_input or "
                            "backward_weight");
  for (const json &arg : value.at("args"))
    function.args.push_back(readTensor(arg, /*withRole=*/true));
  for (const json &result : value.at("results"))
    function.results.push_back(readTensor(result, /*withRole=*/true));
  for (const json &message : value.at("messages")) {
    MessageInfo info;
    info.send = message.at("kind").get<std::string>() == "send";
    info.peer = readInteger(message, "peer");
    for (const json &tensor : message.at("tensors"))
      info.tensors.push_back(readTensor(tensor, /*withRole=*/false));
    function.messages.push_back(info);
  }
  return function;
}

DeviceMesh readMesh(const json &value) {
  std::vector<MeshAxis> axes;
  for (const json &axis : value.at("axes"))
    axes.push_back({axis.at("name").get<std::string>(),
                    readInteger(axis, "size"),
                    readEnum(axis, "kind", parseAxisKind,
                             "pipeline, data_replicate, data_shard, tensor "
                             "or context")});
  return DeviceMesh(std::move(axes));
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
/// and that only trainable ones get gradients.
void checkParameterUses(const Package &package, int64_t stage) {
  std::map<std::string, Role> roles;
  for (const ParameterInfo &parameter : package.parameters)
    if (parameter.stage == stage)
      roles[parameter.tensor.name] = parameter.tensor.role;
  auto fail = [&](const StageFunctionInfo &function, const TensorInfo &tensor,
                  const std::string &problem) {
    invalid(package.directory,
            function.symbol + " (stage " + std::to_string(stage) + ") has " +
                roleName(tensor.role) + " '" + tensor.name + "', " + problem);
  };
  for (const StageFunctionInfo &function : package.stages[stage].functions) {
    for (const TensorInfo &arg : function.args) {
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

/// Checks what the trainer relies on: stages match the mesh, each stage
/// has a forward, saved values have producers, messages go to stages,
/// labels fit the loss.
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
  if (meshStages != package.numStages)
    invalid(directory, "the mesh (" + package.mesh.describe() + ") has " +
                           std::to_string(meshStages) +
                           " pipeline stages but num_stages is " +
                           std::to_string(package.numStages));
  for (int64_t stage = 0; stage < package.numStages; ++stage) {
    const StageInfo &info = package.stages[stage];
    if (info.functions.empty() ||
        info.functions.front().phase != Phase::Forward)
      invalid(directory, "stage " + std::to_string(stage) +
                             " does not start with a forward function");
    checkSavedValues(directory, stage, info);
    checkParameterUses(package, stage);
    for (const StageFunctionInfo &function : info.functions)
      for (const MessageInfo &message : function.messages)
        if (message.peer < 0 || message.peer >= package.numStages)
          invalid(directory,
                  function.symbol + " (stage " + std::to_string(stage) +
                      ") " + (message.send ? "sends to" : "receives from") +
                      " stage " + std::to_string(message.peer) +
                      ", but the stages are 0 to " +
                      std::to_string(package.numStages - 1));
  }
  bool crossEntropy = package.lossKind == "cross_entropy";
  pp_dtype expected = crossEntropy ? PP_DTYPE_I64 : PP_DTYPE_F32;
  if (package.labels.dtype != expected)
    invalid(directory, "the labels '" + package.labels.name + "' are " +
                           pp_dtype_name(package.labels.dtype) + ", but a " +
                           package.lossKind + " loss needs " +
                           pp_dtype_name(expected) +
                           (crossEntropy ? " class indices" : " targets"));
}

bool isFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

} // namespace

std::optional<Role> parseRole(const std::string &name) {
  return parseEnum(kRoles, name);
}

const char *roleName(Role role) { return enumName(kRoles, role, ""); }

bool isParameterRole(Role role) {
  return role == Role::Parameter || role == Role::Frozen ||
         role == Role::Constant;
}

Package Package::load(const std::string &directory) {
  struct stat info;
  if (::stat(directory.c_str(), &info) != 0)
    throw std::runtime_error("cannot read '" + directory +
                             "': no such file or directory");
  if (!S_ISDIR(info.st_mode) || !isFile(directory + "/manifest.json"))
    throw std::runtime_error("'" + directory +
                             "' is not a pipeline package: it has no "
                             "manifest.json (create one with pp-opt MODEL "
                             "--pp-compile=... --pp-emit=DIR)");
  std::ifstream file(directory + "/manifest.json");
  json manifest;
  try {
    manifest = json::parse(file);
  } catch (const std::exception &error) {
    invalid(directory,
            std::string("manifest.json is not valid JSON: ") + error.what());
  }
  Package package;
  package.directory = directory;
  try {
    if (manifest.value("format", "") != "pp-pipeline-package")
      throw std::runtime_error("not a pp pipeline manifest");
    int64_t version = readInteger(manifest, "version", 0);
    if (version != 2)
      throw std::runtime_error(
          "package format version " + std::to_string(version) + " is from " +
          (version < 2 ? "an older" : "a newer") +
          " pp (this pp-run reads version 2); recompile the model");
    package.mesh = readMesh(manifest.at("mesh"));
    package.numStages = readInteger(manifest, "num_stages");
    package.microbatchSize = readInteger(manifest, "microbatch_size");
    const json &loss = manifest.at("loss");
    package.lossKind = loss.at("kind").get<std::string>();
    package.lossOutput = loss.at("output").get<std::string>();
    package.ignoreIndex = readInteger(loss, "ignore_index", -100);
    package.lossClasses = readInteger(loss, "classes", 0);
    for (const json &input : manifest.at("inputs"))
      package.inputs.push_back(readTensor(input, /*withRole=*/true));
    package.labels = readTensor(manifest.at("labels"), /*withRole=*/true);
    for (const json &value : manifest.at("parameters")) {
      ParameterInfo parameter;
      parameter.tensor = readTensor(value, /*withRole=*/true);
      if (!isParameterRole(parameter.tensor.role))
        throw std::runtime_error("parameter '" + parameter.tensor.name +
                                 "' has role '" +
                                 roleName(parameter.tensor.role) +
                                 "' (expected parameter, frozen or constant)");
      parameter.stage = readInteger(value, "stage");
      parameter.fromFile = value.value("init", "") == "file";
      parameter.offset = static_cast<size_t>(readInteger(value, "offset", 0));
      parameter.bytes = static_cast<size_t>(readInteger(value, "bytes", 0));
      package.parameters.push_back(parameter);
    }
    for (const json &stage : manifest.at("stages")) {
      int64_t index = readInteger(stage, "stage");
      if (index != static_cast<int64_t>(package.stages.size()))
        throw std::runtime_error("stage " + std::to_string(index) +
                                 " is listed in position " +
                                 std::to_string(package.stages.size()) +
                                 "; list the stages in order from 0");
      StageInfo &info = package.stages.emplace_back();
      for (const json &function : stage.at("functions"))
        info.functions.push_back(readFunction(function));
    }
  } catch (const std::exception &error) {
    invalid(directory, std::string("manifest.json: ") + error.what());
  }
  checkPackage(package);
  return package;
}

void Package::loadStageLibrary(const std::string &fileName) {
  std::string path = directory + "/" + fileName;
  if (!isFile(path))
    invalid(directory, fileName +
                           " is missing; recompile the package with "
                           "pp-opt --pp-emit" +
                           (fileName == "libstages.so"
                                ? ""
                                : " on a machine where CMake found nvcc"));
  library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
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
  if (!parameterFile.is_open()) {
    parameterFile.open(directory + "/parameters.bin", std::ios::binary);
    if (!parameterFile)
      invalid(directory, "parameters.bin is missing");
  }
  parameterFile.seekg(static_cast<std::streamoff>(parameter.offset));
  if (!parameterFile.read(static_cast<char *>(pp_tensor_data(tensor)),
                          static_cast<std::streamsize>(parameter.bytes)))
    invalid(directory, "parameters.bin is truncated: parameter '" +
                           parameter.tensor.name + "' needs bytes " +
                           std::to_string(parameter.offset) + " to " +
                           std::to_string(parameter.offset + parameter.bytes));
}

} // namespace pp::runtime
