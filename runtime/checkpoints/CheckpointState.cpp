//===- CheckpointState.cpp - what a resume reads of a checkpoint ----------===//

#include "runtime/checkpoints/CheckpointState.h"

#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/core/InputFile.h"

#include <cmath>
#include <optional>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// `value` as a count (a non-negative integer that fits int64), or nullopt:
/// nlohmann's get<int64_t>() would cast a float or a larger integer, which
/// is undefined beyond the range.
std::optional<int64_t> countOf(const nlohmann::json &value) {
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
    return value.get<int64_t>();
  return std::nullopt;
}

} // namespace

CheckpointState readCheckpointState(const std::string &checkpoint) {
  auto refuse = [&](const std::string &what) {
    return std::runtime_error("checkpoint '" + checkpoint + "': " +
                              kCheckpointStateFile + " " + what);
  };
  std::string statePath = checkpoint + "/" + kCheckpointStateFile;
  nlohmann::json state =
      nlohmann::json::parse(readInputFile(statePath, "the checkpoint state"),
                            nullptr, /*allow_exceptions=*/false);
  const nlohmann::json *version =
      state.is_object() && state.contains("format_version")
          ? &state["format_version"]
          : nullptr;
  if (!version || !version->is_number_integer() ||
      version->get<int64_t>() < kOldestReadableFormatVersion ||
      version->get<int64_t>() > kCheckpointFormatVersion)
    throw refuse("is not of checkpoint format version " +
                 std::to_string(kOldestReadableFormatVersion) + " to " +
                 std::to_string(kCheckpointFormatVersion));
  CheckpointState result;
  try {
    auto count = [&](const nlohmann::json &value, const std::string &what) {
      std::optional<int64_t> parsed = countOf(value);
      if (!parsed)
        throw refuse("has " + what + " " + value.dump() +
                     ", not a non-negative integer");
      return *parsed;
    };
    for (const nlohmann::json &tensor : state.at("model").at("tensors")) {
      std::string name = tensor.at("name").get<std::string>();
      const nlohmann::json &dims = tensor.at("shape");
      if (!dims.is_array())
        throw refuse("gives '" + name + "' a shape that is not an array");
      Shape shape;
      for (const nlohmann::json &dim : dims)
        shape.push_back(count(dim, "the dimension of '" + name + "'"));
      if (!result.tensors.emplace(name, shape).second)
        throw refuse("lists the tensor '" + name + "' twice");
    }
    result.step = count(state.at("step"), "the step");
    result.consumedSamples =
        count(state.at("consumed_samples"), "consumed_samples");
    const nlohmann::json &seed = state.at("seed");
    if (!seed.is_number_unsigned())
      throw refuse("has the seed " + seed.dump() + ", not a non-negative "
                   "integer");
    result.seed = seed.get<uint64_t>();
    result.data = state.at("data");
    if (state.contains("loss_scale")) {
      const nlohmann::json &scale = state["loss_scale"].at("scale");
      double value = scale.is_number() ? scale.get<double>() : 0.0;
      int exponent = 0;
      // A positive power of two: dividing it out stays exact.
      if (!(value > 0) || !std::isfinite(value) ||
          std::frexp(value, &exponent) != 0.5)
        throw refuse("has the loss scale " + scale.dump() +
                     ", not a positive power of two");
      const nlohmann::json &saved = state["loss_scale"];
      // skipped_steps is newer than the other two: 0 when absent.
      result.lossScale = LossScaleState{
          value, count(saved.at("clean_steps"), "the loss scale's clean_steps"),
          saved.contains("skipped_steps")
              ? count(saved["skipped_steps"], "the loss scale's skipped_steps")
              : 0};
    }
    result.parameterFiles =
        checkpointFiles(state, statePath, CheckpointContent::Parameters);
    result.optimizerFiles =
        checkpointFiles(state, statePath, CheckpointContent::Optimizer);
  } catch (const nlohmann::json::exception &e) {
    throw refuse(std::string("lacks a field or has one of the wrong type: ") +
                 e.what());
  }
  return result;
}

std::optional<int64_t> optimizerStepCount(const SafeTensorsFile &file,
                                          const std::string &name) {
  std::string key = name + "/step";
  auto entry = file.metadata().find(key);
  if (entry == file.metadata().end())
    return std::nullopt;
  return parseStepCount(entry->second, "checkpoint file '" + file.path() +
                                           "': the step count '" + key + "'");
}

std::optional<int64_t> optimizerStepCount(const CheckpointTensors &state,
                                          const std::string &name) {
  for (const SafeTensorsFile &file : state.files())
    if (file.metadata().count(name + "/step"))
      return optimizerStepCount(file, name);
  return std::nullopt;
}

} // namespace pp::runtime
