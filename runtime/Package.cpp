//===- Package.cpp - a compiled pipeline package --------------------------===//

#include "runtime/Package.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <fstream>
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

TensorInfo readTensor(const json &value) {
  TensorInfo tensor;
  tensor.name = value.value("name", "");
  tensor.role = value.value("role", "");
  std::string dtype = value.at("dtype").get<std::string>();
  if (dtype != "f32" && dtype != "i64")
    throw std::runtime_error("unsupported dtype '" + dtype + "'");
  tensor.dtype = dtype == "f32" ? PP_DTYPE_F32 : PP_DTYPE_I64;
  tensor.shape = value.at("shape").get<Shape>();
  return tensor;
}

StageFunctionInfo readFunction(const json &value) {
  StageFunctionInfo function;
  function.symbol = value.at("function").get<std::string>();
  for (const json &arg : value.at("args"))
    function.args.push_back(readTensor(arg));
  for (const json &result : value.at("results"))
    function.results.push_back(readTensor(result));
  for (const json &message : value.at("messages")) {
    MessageInfo info;
    info.send = message.at("kind").get<std::string>() == "send";
    info.peer = message.at("peer").get<int64_t>();
    for (const json &tensor : message.at("tensors"))
      info.tensors.push_back(readTensor(tensor));
    function.messages.push_back(info);
  }
  return function;
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
      invalid(directory, "manifest.json is not a pp pipeline manifest");
    if (manifest.value("version", 0) != 1)
      invalid(directory, "manifest version " +
                             std::to_string(manifest.value("version", 0)) +
                             " is not supported (this pp-run reads 1); "
                             "recompile the package");
    package.numStages = manifest.at("num_stages").get<int64_t>();
    package.microbatchSize = manifest.at("microbatch_size").get<int64_t>();
    const json &loss = manifest.at("loss");
    package.lossKind = loss.at("kind").get<std::string>();
    package.lossOutput = loss.at("output").get<std::string>();
    package.ignoreIndex = loss.value("ignore_index", -100);
    package.lossClasses = loss.value("classes", 0);
    for (const json &input : manifest.at("inputs"))
      package.inputs.push_back(readTensor(input));
    package.labels = readTensor(manifest.at("labels"));
    for (const json &value : manifest.at("parameters")) {
      ParameterInfo parameter;
      parameter.tensor = readTensor(value);
      parameter.stage = value.at("stage").get<int64_t>();
      parameter.fromFile = value.value("init", "") == "file";
      parameter.offset = value.value("offset", size_t(0));
      parameter.bytes = value.value("bytes", size_t(0));
      package.parameters.push_back(parameter);
    }
    for (const json &stage : manifest.at("stages")) {
      package.forward.push_back(readFunction(stage.at("forward")));
      package.backward.push_back(readFunction(stage.at("backward")));
    }
  } catch (const std::runtime_error &) {
    throw;
  } catch (const std::exception &error) {
    invalid(directory, std::string("manifest.json: ") + error.what());
  }
  if (package.numStages < 1 ||
      static_cast<int64_t>(package.forward.size()) != package.numStages)
    invalid(directory, "manifest.json lists " +
                           std::to_string(package.forward.size()) +
                           " stages but num_stages is " +
                           std::to_string(package.numStages));
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
  for (auto *functions : {&forward, &backward})
    for (StageFunctionInfo &function : *functions) {
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
