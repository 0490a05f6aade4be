//===- PretrainedWeights.cpp - a model's parameters from HF files ---------===//

#include "runtime/checkpoints/PretrainedWeights.h"

#include "runtime/checkpoints/CheckpointState.h"
#include "runtime/core/InputFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pp::runtime {
namespace {

namespace fs = std::filesystem;

constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";
/// How many names of one kind an error lists before "and N more".
constexpr size_t kListedNames = 12;

/// `names` quoted and comma-separated, the first kListedNames of them.
std::string quotedNames(const std::vector<std::string> &names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i == kListedNames)
      return text + " and " + std::to_string(names.size() - i) + " more";
    text += (i ? ", '" : "'") + names[i] + "'";
  }
  return text;
}

/// The index's shard file per tensor name.
std::map<std::string, std::string> readWeightMap(const std::string &index) {
  std::string text = readInputFile(index, "--weights' index");
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    throw std::runtime_error("--weights: the index '" + index +
                             "' is not JSON: " + e.what());
  }
  if (!parsed.is_object() || !parsed.contains("weight_map") ||
      !parsed["weight_map"].is_object())
    throw std::runtime_error(
        "--weights: the index '" + index +
        "' has no \"weight_map\" object (tensor name -> shard file), as "
        "save_pretrained writes in model.safetensors.index.json");
  std::map<std::string, std::string> map;
  for (const auto &[name, file] : parsed["weight_map"].items()) {
    if (!file.is_string())
      throw std::runtime_error("--weights: the index '" + index +
                               "' maps '" + name + "' to " + file.dump() +
                               ", not a shard file name");
    map[name] = file.get<std::string>();
  }
  return map;
}

/// Pairs each tensor of `missing` with the one tensor of `unexpected` of
/// its shape, where no other tensor of either list has that shape (a tied
/// weight under its other name; bindWeights' comment). With `accountForAll`
/// (strict loading), returns the pairs only when they account for every
/// unexpected tensor, else none.
std::vector<std::pair<const ModelTensor *, std::string>>
pairTiesByShape(const PretrainedWeights &weights,
                const std::vector<std::string> &unexpected,
                const std::vector<const ModelTensor *> &missing,
                bool accountForAll) {
  std::vector<std::pair<const ModelTensor *, std::string>> pairs;
  for (const ModelTensor *tensor : missing) {
    auto sameShape = [&](const Shape &shape) { return shape == tensor->shape; };
    std::vector<std::string> candidates;
    for (const std::string &name : unexpected)
      if (sameShape(weights.find(name)->shape))
        candidates.push_back(name);
    size_t rivals = std::count_if(
        missing.begin(), missing.end(),
        [&](const ModelTensor *other) { return sameShape(other->shape); });
    if (candidates.size() == 1 && rivals == 1)
      pairs.emplace_back(tensor, candidates.front());
  }
  if (accountForAll && pairs.size() != unexpected.size())
    pairs.clear();
  return pairs;
}

} // namespace

PretrainedWeights PretrainedWeights::open(const std::string &path) {
  std::error_code error;
  std::string file = path;
  if (fs::is_directory(path, error)) {
    fs::path folder(path);
    if (fs::exists(folder / kIndexFile, error))
      file = (folder / kIndexFile).string();
    else if (fs::exists(folder / kSingleFile, error))
      file = (folder / kSingleFile).string();
    else if (fs::exists(folder / kCheckpointStateFile, error))
      return openCheckpoint(path);
    else
      throw std::runtime_error(
          "--weights: the folder '" + path + "' holds neither " + kSingleFile +
          " nor " + kIndexFile + " nor a pp checkpoint's " +
          kCheckpointStateFile +
          "; name the .safetensors file or the index to read");
  } else if (!fs::exists(path, error)) {
    throw std::runtime_error("--weights: '" + path +
                             "' does not exist; name a .safetensors file, a "
                             "model.safetensors.index.json or their folder");
  }
  PretrainedWeights weights;
  weights.described = file;
  if (fs::path(file).extension() != ".json") {
    weights.files.push_back(
        std::make_unique<SafeTensorsFile>(SafeTensorsFile::open(file)));
    for (const TensorEntry &entry : weights.files.back()->entries())
      weights.holder[entry.name] = weights.files.back().get();
    return weights;
  }
  std::map<std::string, std::string> map = readWeightMap(file);
  std::map<std::string, std::vector<std::string>> byShard;
  for (const auto &[name, shard] : map)
    byShard[shard].push_back(name);
  fs::path folder = fs::path(file).parent_path();
  for (const auto &[shard, names] : byShard) {
    if (shard.empty() || shard.find('/') != std::string::npos ||
        shard == "." || shard == "..")
      throw std::runtime_error("--weights: the index '" + file +
                               "' names the shard '" + shard + "' (for " +
                               quotedNames(names) +
                               "), not a file name beside the index");
    fs::path shardPath = folder / shard;
    if (!fs::exists(shardPath, error))
      throw std::runtime_error(
          "--weights: the index '" + file + "' names the shard '" + shard +
          "' (for " + quotedNames(names) + "), which is not in '" +
          folder.string() + "'; download every shard the index lists");
    weights.files.push_back(std::make_unique<SafeTensorsFile>(
        SafeTensorsFile::open(shardPath.string())));
    const SafeTensorsFile *opened = weights.files.back().get();
    for (const std::string &name : names) {
      if (!opened->find(name))
        throw std::runtime_error("--weights: the index '" + file +
                                 "' puts '" + name + "' in '" +
                                 shardPath.string() +
                                 "', which has no such tensor; the index "
                                 "and its shards are from different saves");
      weights.holder[name] = opened;
    }
  }
  weights.described +=
      " (" + std::to_string(byShard.size()) +
      (byShard.size() == 1 ? " shard)" : " shards)");
  return weights;
}

/// The parameters of the pp checkpoint in `dir`: the files its state.json
/// lists as holding them.
PretrainedWeights PretrainedWeights::openCheckpoint(const std::string &dir) {
  CheckpointState state = readCheckpointState(dir);
  PretrainedWeights weights;
  weights.described = dir + "/" + kCheckpointStateFile + " (" +
                      std::to_string(state.parameterFiles.size()) +
                      " parameter files of a pp checkpoint)";
  for (const CheckpointFile &listed : state.parameterFiles) {
    weights.files.push_back(std::make_unique<SafeTensorsFile>(
        SafeTensorsFile::open((fs::path(dir) / listed.name).string())));
    for (const TensorEntry &entry : weights.files.back()->entries())
      weights.holder[entry.name] = weights.files.back().get();
  }
  return weights;
}

const TensorEntry *PretrainedWeights::find(const std::string &name) const {
  auto it = holder.find(name);
  return it == holder.end() ? nullptr : it->second->find(name);
}

std::vector<std::string> PretrainedWeights::names() const {
  std::vector<std::string> result;
  for (const auto &[name, file] : holder)
    result.push_back(name);
  return result;
}

void PretrainedWeights::read(const std::string &name, float *out) const {
  auto it = holder.find(name);
  if (it == holder.end())
    throw std::runtime_error("--weights: " + described + " has no tensor '" +
                             name + "'");
  it->second->read(name, out);
}

std::string fileNameOf(const std::string &model, const WeightsNaming &naming) {
  if (!naming.prefix.empty() && model.rfind(naming.prefix, 0) == 0)
    return model.substr(naming.prefix.size());
  return model;
}

WeightsBinding bindWeights(const PretrainedWeights &weights,
                           const std::vector<ModelTensor> &model,
                           const WeightsNaming &naming) {
  WeightsBinding binding;
  std::vector<const ModelTensor *> missing;
  std::vector<std::string> misshapen, unconvertible, repeated;
  std::map<std::string, std::string> used; // file name -> model name
  auto bind = [&](const ModelTensor &tensor, const std::string &fileName) {
    const TensorEntry *entry = weights.find(fileName);
    if (auto [at, fresh] = used.emplace(fileName, tensor.name); !fresh)
      repeated.push_back("'" + fileName + "' would give both '" + at->second +
                         "' and '" + tensor.name + "'");
    else if (entry->shape != tensor.shape)
      misshapen.push_back("'" + fileName + "' is " +
                          formatShape(entry->shape) + ", the model's '" +
                          tensor.name + "' " + formatShape(tensor.shape));
    else if (!convertsToF32(entry->dtype))
      unconvertible.push_back("'" + fileName + "' is " + entry->dtype);
    else
      binding.fileNames[tensor.name] = fileName;
  };
  for (const ModelTensor &tensor : model) {
    std::string fileName = fileNameOf(tensor.name, naming);
    if (weights.find(fileName))
      bind(tensor, fileName);
    else if (tensor.required)
      missing.push_back(&tensor);
  }
  auto leftovers = [&] {
    std::vector<std::string> unexpected;
    for (const std::string &name : weights.names())
      if (!used.count(name))
        unexpected.push_back(name);
    return unexpected;
  };
  if (!used.empty())
    for (const auto &[tensor, fileName] :
         pairTiesByShape(weights, leftovers(), missing, naming.strict)) {
      bind(*tensor, fileName);
      binding.renamed.push_back("'" + tensor->name + "' from the file's '" +
                                fileName + "'");
    }
  std::vector<std::string> unexpected = leftovers();
  std::vector<std::string> missingNames, folded;
  for (const ModelTensor *tensor : missing) {
    if (binding.fileNames.count(tensor->name))
      continue;
    missingNames.push_back(tensor->name);
    if (!tensor->foldedFrom.empty())
      folded.push_back("'" + tensor->name + "' is what the exporter's "
                       "optimizer folded from '" + tensor->foldedFrom +
                       "' (an embedding's rows at the traced positions): "
                       "export the model with torch.onnx.export(..., "
                       "optimize=False) to load that parameter");
  }
  bool refuse =
      !misshapen.empty() || !unconvertible.empty() || !repeated.empty() ||
      (naming.strict && (!missingNames.empty() || !unexpected.empty()));
  if (!refuse) {
    binding.missing = missingNames;
    return binding;
  }
  std::ostringstream message;
  message << "--weights: " << weights.description()
          << " does not fit the model:";
  if (!missingNames.empty() && naming.strict)
    message << "\n  missing (the model's, not in the file): "
            << quotedNames(missingNames);
  if (!unexpected.empty() && naming.strict)
    message << "\n  unexpected (in the file, not the model's): "
            << quotedNames(unexpected);
  for (const std::string &problem : misshapen)
    message << "\n  misshapen: " << problem;
  for (const std::string &problem : unconvertible)
    message << "\n  unconvertible: " << problem
            << " (pp reads F32, F16, BF16 and F64)";
  for (const std::string &problem : folded)
    message << "\n  folded: " << problem;
  for (const std::string &problem : repeated)
    message << "\n  repeated: " << problem
            << " (the model has both names; give the file's tensors for one "
               "of them only)";
  if (naming.strict && naming.prefix.empty() && !missingNames.empty() &&
      !unexpected.empty())
    message << "\n  if the model's names are the file's with a prefix in "
               "front (a wrapper module holding the model as 'model'), pass "
               "--weights-prefix model.";
  if (naming.strict && (!missingNames.empty() || !unexpected.empty()))
    message << "\n  --weights-strict=false loads the tensors both have and "
               "keeps the model's values for the rest";
  throw std::runtime_error(message.str());
}

std::string describeBinding(const PretrainedWeights &weights,
                            const WeightsBinding &binding,
                            size_t modelTensors, const std::string &rest) {
  std::map<std::string, int64_t> converted;
  for (const auto &[model, file] : binding.fileNames)
    if (const std::string &dtype = weights.find(file)->dtype; dtype != "F32")
      ++converted[dtype];
  std::string text = "weights: " + std::to_string(binding.fileNames.size()) +
                     " of the model's " + std::to_string(modelTensors) +
                     " tensors from '" + weights.description() + "'";
  for (const auto &[dtype, count] : converted)
    text += ", " + std::to_string(count) + " converted from " + dtype;
  if (!binding.missing.empty())
    text += "; not in the file (" + rest + "): " + quotedNames(binding.missing);
  for (const std::string &renamed : binding.renamed)
    text += "; tied: " + renamed;
  return text;
}

} // namespace pp::runtime
