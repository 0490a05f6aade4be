//===- ModelWeights.cpp - pretrained weights in, trained weights out ------===//

#include "runtime/training/ModelWeights.h"

#include "runtime/training/TensorStreaming.h"

#include <map>
#include <stdexcept>

namespace pp::runtime {

WeightsBinding bindPackageWeights(const Package &package,
                                  const PretrainedWeights &weights,
                                  const WeightsNaming &naming) {
  std::vector<ModelTensor> model;
  for (const ParameterInfo &parameter : package.parameters)
    model.push_back({parameter.tensor.name, parameter.globalShape(),
                     parameter.tensor.role != Role::Constant,
                     package.foldedParameters.count(parameter.tensor.name)
                         ? package.foldedParameters.at(parameter.tensor.name)
                         : ""});
  return bindWeights(weights, model, naming);
}

ModelWeights::ModelWeights(const Package &package,
                           const WeightsOptions &options)
    : package(package), options(options) {
  if (!options.path.empty()) {
    file.emplace(PretrainedWeights::open(options.path));
    binding = bindPackageWeights(package, *file, options.naming);
  }
  if (saves())
    checkSavedNamesDiffer();
}

bool ModelWeights::read(const std::string &name, float *values) const {
  auto bound = binding.fileNames.find(name);
  if (bound == binding.fileNames.end())
    return false;
  file->read(bound->second, values);
  return true;
}

std::vector<ParameterInfo> ModelWeights::toSave() const {
  std::vector<ParameterInfo> kept;
  for (const ParameterInfo &parameter : package.parameters)
    if (parameter.tensor.role != Role::Constant)
      kept.push_back(parameter);
  return kept;
}

std::string ModelWeights::savedNameOf(const std::string &name) const {
  auto bound = binding.fileNames.find(name);
  return bound != binding.fileNames.end() ? bound->second
                                          : fileNameOf(name, options.naming);
}

/// Throws std::runtime_error, before any step, when two tensors would get
/// one name in the --save-weights file.
void ModelWeights::checkSavedNamesDiffer() const {
  std::map<std::string, std::string> modelNameOf;
  for (const ParameterInfo &parameter : toSave()) {
    const std::string &name = parameter.tensor.name;
    auto [at, fresh] = modelNameOf.emplace(savedNameOf(name), name);
    if (!fresh)
      throw std::runtime_error(
          "--save-weights would write '" + at->first + "' for both '" +
          at->second + "' and '" + name + "' (--weights-prefix '" +
          options.naming.prefix +
          "' strips one name to the other); use another prefix");
  }
}

std::unique_ptr<SafeTensorsWriter> ModelWeights::createSavedFile() const {
  std::vector<ParameterInfo> saved = toSave();
  std::map<std::string, pp_dtype> modelDtypes;
  for (const ParameterInfo &parameter : saved)
    modelDtypes[parameter.tensor.name] = parameter.modelDtype;
  std::vector<TensorEntry> entries = entriesByName(saved);
  // Each weight in the type the model stores it in.
  for (TensorEntry &entry : entries) {
    pp_dtype stored = modelDtypes.at(entry.name);
    entry.dtype = stored == PP_DTYPE_BF16  ? "BF16"
                  : stored == PP_DTYPE_F16 ? "F16"
                                           : "F32";
    entry.name = savedNameOf(entry.name);
  }
  return std::make_unique<SafeTensorsWriter>(
      options.savePath, entries,
      std::map<std::string, std::string>{{"format", "pt"}});
}

} // namespace pp::runtime
