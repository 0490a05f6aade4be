//===- CheckpointManager.cpp - a run's checkpoints ------------------------===//

#include "runtime/training/CheckpointManager.h"

#include "runtime/checkpoints/CheckpointState.h"
#include "runtime/checkpoints/CheckpointVerification.h"
#include "runtime/core/Sha256.h"
#include "runtime/training/JobExchanges.h"
#include "runtime/training/Optimizer.h"

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// Throws, naming the first tensor that differs, unless `saved` (the
/// tensors `where` holds) are exactly the model's tensors `model`, with
/// the same shapes; `likely` says what such a checkpoint likely is. With
/// `files`, the files that hold `saved`, a tensor they hold is named with
/// its file.
void checkSameTensors(const std::string &where,
                      const std::map<std::string, Shape> &model,
                      const std::map<std::string, Shape> &saved,
                      const std::string &likely,
                      const CheckpointTensors *files = nullptr) {
  auto holderOf = [&](const std::string &name) {
    return files ? "checkpoint file '" + files->fileOf(name)->path() + "'"
                 : where;
  };
  for (const auto &[name, shape] : model) {
    auto it = saved.find(name);
    if (it == saved.end())
      throw std::runtime_error(where + " lacks '" + name +
                               "', which the model has: it is " + likely);
    if (it->second != shape)
      throw std::runtime_error(holderOf(name) + " holds '" + name +
                               "' of shape " + formatShape(it->second) +
                               ", but the model's is " + formatShape(shape));
  }
  for (const auto &[name, shape] : saved)
    if (!model.count(name))
      throw std::runtime_error(holderOf(name) + " holds '" + name +
                               "', which the model does not have: it is " +
                               likely);
}

/// Whether the optimizer files `files`, whose tensors are `saved`, hold
/// the state of trained parameter `name`: its step count and each of
/// `buffers` ("NAME/BUFFER"). A checkpoint holds all of them when the
/// parameter had taken a step and none when it had not (an fp16 run whose
/// first steps all overflowed); throws, naming the file, what it holds and
/// what it lacks, when it holds some.
bool holdsOptimizerState(const CheckpointTensors &files,
                         const std::map<std::string, Shape> &saved,
                         const std::string &name,
                         const std::vector<std::string> &buffers) {
  std::vector<std::string> held, missing;
  // The file that holds part of it: a buffer's, else the step count's.
  const SafeTensorsFile *holder = nullptr;
  for (const SafeTensorsFile &file : files.files())
    if (file.metadata().count(name + "/step"))
      holder = &file;
  (optimizerStepCount(files, name) ? held : missing)
      .push_back("the step count '" + name + "/step'");
  for (const std::string &buffer : buffers) {
    bool found = saved.count(name + "/" + buffer);
    (found ? held : missing).push_back("'" + name + "/" + buffer + "'");
    if (found)
      holder = files.fileOf(name + "/" + buffer);
  }
  if (missing.empty() || held.empty())
    return missing.empty();
  auto list = [](const std::vector<std::string> &parts) {
    std::string text;
    for (size_t i = 0; i < parts.size(); ++i)
      text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
    return text;
  };
  throw std::runtime_error(
      "checkpoint file '" + holder->path() + "' holds part of the state of '" +
      name + "': " + list(held) + " but not " + list(missing) +
      ". A checkpoint saves a parameter's step count and buffers together "
      "(none before its first step): the file is damaged, or it was saved "
      "with --momentum 0 and this run has momentum. Restore it from a copy, "
      "or resume from another checkpoint");
}

/// Merges every writer's records of the files it wrote (`files`) on rank 0
/// of `pipeline`, the pipeline of the writers, over message slots named
/// `channel`/files.
void collectFileRecords(Communicator &pipeline, const std::string &channel,
                        nlohmann::json &files) {
  uint64_t lengthSlot = messageSlot(channel + "/files/length");
  uint64_t textSlot = messageSlot(channel + "/files");
  if (pipeline.rank() != 0) {
    std::string text = files.dump();
    uint64_t length = text.size();
    pipeline.send(0, lengthSlot, &length, sizeof(length));
    pipeline.send(0, textSlot, text.data(), length);
    return;
  }
  for (int writer = 1; writer < pipeline.worldSize(); ++writer) {
    // A writer reports once its files are written, which takes what it
    // takes: wait for it as long as it is alive.
    uint64_t length = 0;
    pipeline.recv(writer, lengthSlot, &length, sizeof(length),
                  Patience::UntilSenderEnds);
    std::string text(length, '\0');
    pipeline.recv(writer, textSlot, text.data(), length);
    files.update(nlohmann::json::parse(text));
  }
}

} // namespace

std::optional<CheckpointRef> CheckpointManager::findResumePoint() {
  const CheckpointOptions &checkpoint = context.options.checkpoint;
  if (!checkpoint.resume)
    return std::nullopt;
  // Rank 0 verifies; every rank learns the step it chose, or refuses
  // saying why, whichever the launcher reports.
  std::string step, refusal;
  if (reports()) {
    try {
      if (std::optional<CheckpointRef> usable =
              newestUsableCheckpoint(checkpoint.directory, std::cerr))
        step = std::to_string(usable->step);
    } catch (const std::exception &e) {
      refusal = e.what();
    }
  }
  broadcastTextFromRank0(context.groups, refusal);
  if (!refusal.empty())
    throw std::runtime_error(refusal);
  broadcastTextFromRank0(context.groups, step);
  if (step.empty()) {
    if (reports())
      context.log << "resume: no complete checkpoint in '"
                  << checkpoint.directory << "'; starting from scratch"
                  << std::endl;
    return std::nullopt;
  }
  int64_t chosen = std::stoll(step);
  return CheckpointRef{chosen,
                       checkpoint.directory + "/" + checkpointName(chosen)};
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
  CheckpointTensors parameters =
      CheckpointTensors::open(resumed.path, state.parameterFiles);
  checkSameTensors(parameters.description(), modelTensors(),
                   parameters.shapes(), "a checkpoint of another model",
                   &parameters);
  return {resumed.path, std::move(parameters), state.optimizerFiles,
          state.step,   state.consumedSamples, state.lossScale};
}

void CheckpointManager::restoreOptimizer(const ResumePoint &resumed) {
  const OptimizerOptions &optimizer = context.options.optimizer;
  CheckpointTensors files =
      CheckpointTensors::open(resumed.path, resumed.optimizerFiles);
  for (const SafeTensorsFile &file : files.files()) {
    auto saved = file.metadata().find("optimizer");
    if (saved == file.metadata().end() || saved->second != optimizer.kind)
      throw std::runtime_error(
          "checkpoint file '" + file.path() +
          "' holds the state of the optimizer '" +
          (saved == file.metadata().end() ? "" : saved->second) +
          "', this run uses --optimizer " + optimizer.kind);
  }
  std::map<std::string, Shape> tensors = files.shapes(), expected;
  std::vector<std::string> buffers = optimizerBufferNames(optimizer);
  for (const ParameterInfo &parameter : trainedParameters(context.package))
    if (holdsOptimizerState(files, tensors, parameter.tensor.name, buffers))
      for (const std::string &buffer : buffers)
        expected[parameter.tensor.name + "/" + buffer] =
            parameter.globalShape();
  checkSameTensors(files.description(), expected, tensors,
                   "a checkpoint of another model, or of --momentum 0 "
                   "when this run has momentum (or the reverse)",
                   &files);
  parameters.loadOptimizerState(files);
}

void CheckpointManager::save(int64_t step, int64_t cursor,
                             const std::optional<LossScaleState> &lossScale) {
  auto start = std::chrono::steady_clock::now();
  const CheckpointOptions &checkpoint = context.options.checkpoint;
  RankGroups &groups = context.groups;
  // The first replica of each stage writes the stage's files; the first
  // device of its tensor-parallel group holds them whole and writes them.
  bool firstReplica = groups.dataParallelRank == 0;
  bool writes = firstReplica && groups.tensorParallelRank == 0;
  std::string temporary;
  if (reports())
    temporary = beginCheckpoint(checkpoint.directory, step);
  if (writes)
    broadcastText(*groups.pipeline, temporary);
  std::error_code error;
  if (writes && !std::filesystem::is_directory(temporary, error))
    throw std::runtime_error(
        "cannot save the checkpoint after step " + std::to_string(step) +
        ": this rank, on " + machineIdentity() +
        ", does not see '" + temporary +
        "', the directory rank 0 created for it: --checkpoint-dir must be "
        "one directory that every machine of the job shares, at the same "
        "path (docs/checkpoints.md)");
  // Whole on every replica: ZeRO gathers it over the data-parallel group.
  std::map<std::string, ParameterState> states =
      parameters.gatherOptimizerState();
  // Per file, what state.json records (CheckpointVerification.h and
  // CheckpointShards.h).
  nlohmann::json files = nlohmann::json::object();
  if (firstReplica)
    for (int64_t stage : context.stages.stages())
      files.update(saveStage(stage, step, temporary, states));
  if (writes)
    collectFileRecords(*groups.pipeline, "checkpoint/" + std::to_string(step),
                       files);
  std::string committed;
  if (reports()) {
    writeFileSynced(temporary + "/" + kCheckpointStateFile,
                    checkpointState(step, cursor, lossScale, files).dump(2) +
                        "\n");
    committed = commitCheckpoint(checkpoint.directory, temporary, step);
    if (checkpoint.keepLast > 0)
      keepNewestCheckpoints(checkpoint.directory, checkpoint.keepLast);
    context.log << "checkpoint after step " << step << " saved to " << committed
                << " (" << std::setprecision(3)
                << std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count()
                << " s)" << std::endl;
  }
  // Every rank continues once the checkpoint is in place.
  broadcastTextFromRank0(groups, committed);
}

/// Writes stage `stage`'s parameters (those it owns: a tied one is its
/// owner's) and the optimizer state `states` of its trained parameters
/// into its files in `temporary`, the checkpoint after `step` steps;
/// returns state.json's records of them on the first device of the
/// tensor-parallel group, which writes them, and an empty object on the
/// others. Every device of the stage's first replica calls it.
nlohmann::json CheckpointManager::saveStage(
    int64_t stage, int64_t step, const std::string &temporary,
    const std::map<std::string, ParameterState> &states) {
  const Package &package = context.package;
  const OptimizerOptions &optimizer = context.options.optimizer;
  std::string channel =
      "checkpoint/" + std::to_string(step) + "/" + std::to_string(stage);
  std::vector<ParameterInfo> owned;
  for (const ParameterInfo &parameter : package.parameters)
    if (parameter.stage == stage)
      owned.push_back(parameter);
  nlohmann::json files =
      writeShard(temporary, CheckpointContent::Parameters, stage, owned,
                 heldIn(parameters.hostValues()),
                 {{"format", "pp-parameters"}, {"step", std::to_string(step)}},
                 channel + "/params");

  // Each trained parameter's state with its step count; none before its
  // first step.
  std::map<std::string, std::string> metadata = {
      {"format", "pp-optimizer"},
      {"optimizer", optimizer.kind},
      {"step", std::to_string(step)}};
  std::vector<ParameterInfo> listed;
  for (const ParameterInfo &parameter : trainedParameters(package)) {
    const std::string &name = parameter.tensor.name;
    auto state = states.find(name);
    if (parameter.stage != stage || state == states.end() ||
        state->second.steps == 0)
      continue;
    metadata[name + "/step"] = std::to_string(state->second.steps);
    for (const std::string &buffer : optimizerBufferNames(optimizer)) {
      listed.push_back(parameter);
      listed.back().tensor.name = name + "/" + buffer;
    }
  }
  files.update(writeShard(
      temporary, CheckpointContent::Optimizer, stage, listed,
      [&](const std::string &stateName) {
        size_t slash = stateName.rfind('/');
        return states.at(stateName.substr(0, slash))
            .buffers.at(stateName.substr(slash + 1))
            .data();
      },
      metadata, channel + "/optimizer"));
  return files;
}

/// Writes the tensors `listed` (held here, as `valuesOf` finds them) and
/// `metadata` into the file of stage `stage`'s `content` in `temporary` on
/// the first device of the tensor-parallel group, assembling sharded ones
/// over message slots named `channel`; returns there state.json's record
/// of it, {FILE: {digests, "holds", "stage", "writer_rank",
/// "writer_machine"}}, and an empty object on the other devices.
nlohmann::json CheckpointManager::writeShard(
    const std::string &temporary, CheckpointContent content, int64_t stage,
    const std::vector<ParameterInfo> &listed, const TensorValues &valuesOf,
    const std::map<std::string, std::string> &metadata,
    const std::string &channel) {
  std::string file = shardFileName(content, stage);
  std::unique_ptr<SafeTensorsWriter> writer;
  if (context.groups.tensorParallelRank == 0)
    writer = std::make_unique<SafeTensorsWriter>(
        temporary + "/" + file, entriesByName(listed), metadata);
  streamer.assemble(listed, valuesOf, channel,
                    [&](const std::string &name, const Shape &,
                        const float *values) { writer->add(name, values); });
  if (!writer)
    return nlohmann::json::object();
  writer->finish();
  nlohmann::json record = fileRecord(*writer);
  int rank = context.world.rank();
  record["holds"] = contentName(content);
  record["stage"] = stage;
  record["writer_rank"] = rank;
  record["writer_machine"] = machineIdentity();
  nlohmann::json files = nlohmann::json::object();
  files[file] = record;
  return files;
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
