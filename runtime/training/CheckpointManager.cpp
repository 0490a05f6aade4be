//===- CheckpointManager.cpp - a run's checkpoints ------------------------===//

#include "runtime/training/CheckpointManager.h"

#include "runtime/checkpoints/CheckpointState.h"
#include "runtime/checkpoints/CheckpointVerification.h"
#include "runtime/core/Sha256.h"
#include "runtime/training/JobExchanges.h"
#include "runtime/training/Optimizer.h"

#include <chrono>
#include <iomanip>
#include <iostream>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// Throws, naming the first tensor that differs, unless `saved` (the
/// tensors `where` holds) are exactly the model's tensors `model`, with
/// the same shapes; `likely` says what such a checkpoint likely is.
void checkSameTensors(const std::string &where,
                      const std::map<std::string, Shape> &model,
                      const std::map<std::string, Shape> &saved,
                      const std::string &likely) {
  for (const auto &[name, shape] : model) {
    auto it = saved.find(name);
    if (it == saved.end())
      throw std::runtime_error(where + " lacks '" + name +
                               "', which the model has: it is " + likely);
    if (it->second != shape)
      throw std::runtime_error(where + " holds '" + name + "' of shape " +
                               formatShape(it->second) +
                               ", but the model's is " + formatShape(shape));
  }
  for (const auto &[name, shape] : saved)
    if (!model.count(name))
      throw std::runtime_error(where + " holds '" + name +
                               "', which the model does not have: it is " +
                               likely);
}

/// The tensors of a safetensors file by name.
std::map<std::string, Shape> shapesOf(const SafeTensorsFile &file) {
  std::map<std::string, Shape> shapes;
  for (const TensorEntry &entry : file.entries())
    shapes[entry.name] = entry.shape;
  return shapes;
}

/// Whether the optimizer file `file`, whose tensors are `saved`, holds
/// the state of trained parameter `name`: its step count and each of
/// `buffers` ("NAME/BUFFER"). A checkpoint holds all of them when the
/// parameter had taken a step and none when it had not (an fp16 run whose
/// first steps all overflowed); throws, naming what it holds and what it
/// lacks, when it holds some.
bool holdsOptimizerState(const SafeTensorsFile &file,
                         const std::map<std::string, Shape> &saved,
                         const std::string &name,
                         const std::vector<std::string> &buffers) {
  std::vector<std::string> held, missing;
  (optimizerStepCount(file, name) ? held : missing)
      .push_back("the step count '" + name + "/step'");
  for (const std::string &buffer : buffers)
    (saved.count(name + "/" + buffer) ? held : missing)
        .push_back("'" + name + "/" + buffer + "'");
  if (missing.empty() || held.empty())
    return missing.empty();
  auto list = [](const std::vector<std::string> &parts) {
    std::string text;
    for (size_t i = 0; i < parts.size(); ++i)
      text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
    return text;
  };
  throw std::runtime_error(
      "checkpoint file '" + file.path() + "' holds part of the state of '" +
      name + "': " + list(held) + " but not " + list(missing) +
      ". A checkpoint saves a parameter's step count and buffers together "
      "(none before its first step): the file is damaged, or it was saved "
      "with --momentum 0 and this run has momentum. Restore it from a copy, "
      "or resume from another checkpoint");
}

} // namespace

std::optional<CheckpointRef> CheckpointManager::findResumePoint() {
  const CheckpointOptions &checkpoint = context.options.checkpoint;
  if (!checkpoint.resume)
    return std::nullopt;
  constexpr int64_t kNone = -1, kRefused = -2;
  int64_t step = kNone;
  std::string refusal;
  if (reports()) {
    try {
      if (std::optional<CheckpointRef> usable =
              newestUsableCheckpoint(checkpoint.directory, std::cerr))
        step = usable->step;
    } catch (const std::exception &e) {
      refusal = e.what();
      step = kRefused;
    }
  }
  broadcastFromRank0(context.groups, &step, sizeof(step));
  if (step == kRefused) {
    // Every rank refuses saying why, whichever the launcher reports.
    uint64_t length = refusal.size();
    broadcastFromRank0(context.groups, &length, sizeof(length));
    refusal.resize(length);
    broadcastFromRank0(context.groups, refusal.data(), length);
    throw std::runtime_error(refusal);
  }
  if (step < 0) {
    if (reports())
      context.log << "resume: no complete checkpoint in '"
                  << checkpoint.directory << "'; starting from scratch"
                  << std::endl;
    return std::nullopt;
  }
  return CheckpointRef{step, checkpoint.directory + "/" + checkpointName(step)};
}

ResumePoint CheckpointManager::open(const CheckpointRef &resumed) {
  const TrainerOptions &options = context.options;
  CheckpointState state = readCheckpointState(resumed.path);
  checkSameTensors("the model fingerprint in " + resumed.path + "/" +
                       kCheckpointStateFile,
                   modelTensors(), state.tensors,
                   "a checkpoint of another model");
  if (reports()) {
    if (state.seed != options.seed)
      context.log << "warning: the checkpoint was saved with --seed "
                  << state.seed << ", this run has --seed " << options.seed
                  << ": data order and dropout differ from the saved run's"
                  << std::endl;
    if (state.data != data.identity())
      context.log << "warning: the checkpoint was saved training on "
                  << state.data.dump() << ", this run trains on "
                  << data.identity().dump() << std::endl;
  }
  SafeTensorsFile parameters =
      SafeTensorsFile::open(resumed.path + "/" + kParametersFile);
  checkSameTensors("checkpoint file '" + parameters.path() + "'",
                   modelTensors(), shapesOf(parameters),
                   "a checkpoint of another model");
  return {std::move(parameters), state.step, state.consumedSamples,
          state.lossScale};
}

void CheckpointManager::restoreOptimizer(const CheckpointRef &resumed) {
  const OptimizerOptions &optimizer = context.options.optimizer;
  SafeTensorsFile file =
      SafeTensorsFile::open(resumed.path + "/" + kOptimizerFile);
  std::string where = "checkpoint file '" + file.path() + "'";
  auto saved = file.metadata().find("optimizer");
  if (saved == file.metadata().end() || saved->second != optimizer.kind)
    throw std::runtime_error(
        where + " holds the state of the optimizer '" +
        (saved == file.metadata().end() ? "" : saved->second) +
        "', this run uses --optimizer " + optimizer.kind);
  std::map<std::string, Shape> tensors = shapesOf(file), expected;
  std::vector<std::string> buffers = optimizerBufferNames(optimizer);
  for (const ParameterInfo &parameter : trainedParameters(context.package))
    if (holdsOptimizerState(file, tensors, parameter.tensor.name, buffers))
      for (const std::string &buffer : buffers)
        expected[parameter.tensor.name + "/" + buffer] =
            parameter.globalShape();
  checkSameTensors(where, expected, tensors,
                   "a checkpoint of another model, or of --momentum 0 "
                   "when this run has momentum (or the reverse)");
  parameters.loadOptimizerState(file);
}

void CheckpointManager::save(int64_t step, int64_t cursor,
                             const std::optional<LossScaleState> &lossScale) {
  auto start = std::chrono::steady_clock::now();
  const Package &package = context.package;
  const TrainerOptions &options = context.options;
  const CheckpointOptions &checkpoint = options.checkpoint;
  std::string temporary;
  if (reports())
    temporary = beginCheckpoint(checkpoint.directory, step);
  std::string channel = "checkpoint/" + std::to_string(step);
  bool streams = context.groups.dataParallelRank == 0;

  std::unique_ptr<SafeTensorsWriter> writer;
  // Per file, the digests state.json records (CheckpointVerification.h).
  nlohmann::json files = nlohmann::json::object();
  std::string writing;
  auto writeTo = [&](const std::string &file,
                     const std::vector<ParameterInfo> &listed,
                     const std::map<std::string, std::string> &metadata) {
    if (!reports())
      return;
    writer = std::make_unique<SafeTensorsWriter>(
        temporary + "/" + file, entriesByName(listed), metadata);
    writing = file;
  };
  auto finishFile = [&] {
    if (!writer)
      return;
    writer->finish();
    files[writing] = fileRecord(*writer);
  };
  TensorSink write = [&](const std::string &name, const Shape &,
                         const float *values) { writer->add(name, values); };
  writeTo(kParametersFile, package.parameters,
          {{"format", "pp-parameters"}, {"step", std::to_string(step)}});
  if (streams)
    streamer.stream(package.parameters,
                            heldIn(parameters.hostValues()),
                            channel + "/params", write);
  finishFile();

  // Each trained parameter's state, whole on every replica; its step count
  // summed over the pipeline (each stage fills its own; a tied parameter's
  // holders share one, which its owner fills).
  std::map<std::string, ParameterState> states =
      parameters.gatherOptimizerState();
  std::vector<ParameterInfo> trained = trainedParameters(package);
  std::vector<double> steps(trained.size(), 0.0);
  for (size_t i = 0; i < trained.size(); ++i)
    if (auto it = states.find(trained[i].tensor.name);
        it != states.end() && context.stages.holds(trained[i].stage))
      steps[i] = static_cast<double>(it->second.steps);
  context.groups.pipeline->allReduceSum(steps);
  std::map<std::string, std::string> metadata = {
      {"format", "pp-optimizer"},
      {"optimizer", options.optimizer.kind},
      {"step", std::to_string(step)}};
  std::vector<ParameterInfo> listed;
  for (size_t i = 0; i < trained.size(); ++i) {
    const std::string &name = trained[i].tensor.name;
    if (steps[i] == 0)
      continue;
    metadata[name + "/step"] = std::to_string(static_cast<int64_t>(steps[i]));
    for (const std::string &buffer : optimizerBufferNames(options.optimizer)) {
      listed.push_back(trained[i]);
      listed.back().tensor.name = name + "/" + buffer;
    }
  }
  writeTo(kOptimizerFile, listed, metadata);
  if (streams)
    streamer.stream(
        listed,
        [&](const std::string &stateName) {
          size_t slash = stateName.rfind('/');
          return states.at(stateName.substr(0, slash))
              .buffers.at(stateName.substr(slash + 1))
              .data();
        },
        channel + "/optimizer", write);
  finishFile();

  if (reports()) {
    writeFileSynced(temporary + "/" + kCheckpointStateFile,
                    checkpointState(step, cursor, lossScale, files).dump(2) +
                        "\n");
    std::string path = commitCheckpoint(checkpoint.directory, temporary, step);
    if (checkpoint.keepLast > 0)
      keepNewestCheckpoints(checkpoint.directory, checkpoint.keepLast);
    context.log << "checkpoint after step " << step << " saved to " << path
                << " (" << std::setprecision(3)
                << std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count()
                << " s)" << std::endl;
  }
  // Every rank continues once the checkpoint is in place.
  char saved = 1;
  broadcastFromRank0(context.groups, &saved, sizeof(saved));
}

/// The model's parameter, frozen and constant tensors by name, with their
/// global shapes.
std::map<std::string, Shape> CheckpointManager::modelTensors() const {
  std::map<std::string, Shape> shapes;
  for (const ParameterInfo &parameter : context.package.parameters)
    shapes[parameter.tensor.name] = parameter.globalShape();
  return shapes;
}

/// The model's fingerprint as state.json records it: every parameter,
/// frozen and constant tensor's name, role, dtype and global shape in name
/// order, and the SHA-256 of that list's JSON.
nlohmann::json CheckpointManager::modelFingerprint() const {
  std::map<std::string, const ParameterInfo *> byName;
  for (const ParameterInfo &parameter : context.package.parameters)
    byName[parameter.tensor.name] = &parameter;
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto &[name, parameter] : byName)
    tensors.push_back({{"name", name},
                       {"role", roleName(parameter->tensor.role)},
                       {"dtype", pp_dtype_name(parameter->tensor.dtype)},
                       {"shape", parameter->globalShape()}});
  std::string text = tensors.dump();
  Sha256 sha;
  sha.update(text.data(), text.size());
  return {{"sha256", sha.hex()}, {"tensors", tensors}};
}

/// state.json of the checkpoint after `step` steps, whose next step starts
/// at `cursor` with the loss scale `lossScale` (fp16) and whose files'
/// digests are `files` (fileRecord per file name).
nlohmann::json CheckpointManager::checkpointState(
    int64_t step, int64_t cursor,
    const std::optional<LossScaleState> &lossScale,
    const nlohmann::json &files) const {
  const TrainerOptions &options = context.options;
  const OptimizerOptions &optimizer = options.optimizer;
  const RankGroups &groups = context.groups;
  nlohmann::json meshOrder = nlohmann::json::array();
  for (const MeshAxis &axis : groups.mesh.axes())
    meshOrder.push_back(axis.name);
  nlohmann::json state = {
      {"format_version", kCheckpointFormatVersion},
      {"step", step},
      {"consumed_samples", cursor},
      {"seed", options.seed},
      {"global_batch", context.layout.globalBatch()},
      {"data", data.identity()},
      {"optimizer",
       {{"kind", optimizer.kind},
        {"learning_rate",
         {{"peak", options.learningRate.peak},
          {"schedule", learningRateDecayName(options.learningRate.decay)},
          {"warmup_steps", options.learningRate.warmupSteps},
          {"decay_steps", options.learningRate.decaySteps},
          {"minimum", options.learningRate.minimum}}},
        {"momentum", optimizer.momentum},
        {"weight_decay", optimizer.weightDecay},
        {"beta1", optimizer.beta1},
        {"beta2", optimizer.beta2},
        {"epsilon", optimizer.epsilon}}},
      {"model", modelFingerprint()},
      {"saved_from",
       {{"mesh", groups.mesh.describe()},
        {"mesh_order", meshOrder},
        {"stages", context.package.numStages},
        {"data_parallel", context.layout.dataParallel},
        {"tensor_parallel", groups.tensorParallelSize},
        {"microbatches", options.microbatches},
        {"microbatch_size", context.package.microbatchSize},
        {"zero", options.zeroLevel}}},
      {"files", files}};
  if (lossScale)
    state["loss_scale"] = {{"scale", lossScale->scale},
                           {"clean_steps", lossScale->cleanSteps},
                           {"skipped_steps", lossScale->skippedSteps}};
  return state;
}

} // namespace pp::runtime
