//===- Trainer.cpp - one rank's training loop -----------------------------===//

#include "runtime/training/Trainer.h"

#include "runtime/communication/CommunicatorCollectives.h"
#include "runtime/communication/SharedMemoryCollectives.h"
#include "runtime/kernels/Frame.h"
#include "runtime/kernels/MemoryArena.h"
#include "runtime/kernels/OpProfile.h"
#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/checkpoints/CheckpointState.h"
#include "runtime/checkpoints/CheckpointVerification.h"
#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/checkpoints/SafeTensors.h"
#include "runtime/data/SyntheticData.h"
#include "runtime/core/OutputFile.h"
#include "runtime/data/TokenBatches.h"
#include "runtime/training/ActivationMemory.h"
#include "runtime/training/GradientReduction.h"
#include "runtime/training/ParameterInit.h"
#include "runtime/training/ParameterUpdate.h"
#include "runtime/training/TensorShards.h"
#include "runtime/training/StageRouter.h"
#include "runtime/training/TiedParameters.h"
#include "runtime/training/Trace.h"

#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <iomanip>
#include <iostream>
#include <map>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// Throws std::runtime_error, saying to recompile, unless `package` has
/// eval functions.
void checkEvaluable(const Package &package) {
  if (!package.hasEvalFunctions())
    throw std::runtime_error(
        "the package '" + package.directory +
        "' has no eval functions; compile the model with --pp-compile "
        "(which derives them with pp-derive-eval) to evaluate with "
        "--eval-data");
}

TensorPtr makeTensor(const TensorInfo &info) {
  pp_tensor *tensor = nullptr;
  if (pp_tensor_create(info.dtype, static_cast<int64_t>(info.shape.size()),
                       info.shape.data(), &tensor) != PP_OK)
    throw std::runtime_error(std::string("cannot allocate '") + info.name +
                             "': " + pp_last_error());
  return TensorPtr(tensor);
}

/// A tensor like `info` over the floats at `data`, which outlive it.
TensorPtr borrowTensor(const TensorInfo &info, float *data) {
  pp_tensor *tensor = nullptr;
  if (pp_tensor_borrow(data, info.dtype,
                       static_cast<int64_t>(info.shape.size()),
                       info.shape.data(), &tensor) != PP_OK)
    throw std::runtime_error(std::string("cannot view '") + info.name +
                             "': " + pp_last_error());
  return TensorPtr(tensor);
}

float *floatsOf(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

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

/// The job of one rank: its stages' parameters, gradients and data.
class StageTrainer {
public:
  /// A host tensor as the stage functions see it (and its copy, if any).
  struct Placed {
    pp_tensor *tensor = nullptr;
    TensorPtr copy;
  };

  /// Trains on the data `options` name, or, given `givenInputs` (one host
  /// tensor per package input, holding every microbatch), runs forward
  /// only.
  StageTrainer(Package &package, Communicator &world, RankGroups &groups,
               Backend &backend, const TrainerOptions &options,
               std::ostream &log,
               const std::vector<pp_tensor *> *givenInputs = nullptr)
      : package(package), world(world), groups(groups),
        pipeline(*groups.pipeline), dataParallel(*groups.dataParallel),
        tensorParallel(*groups.tensorParallel),
        backend(backend), options(options), log(log), rank(groups.stage),
        reports(world.rank() == 0),
        layout{package.microbatchSize, options.microbatches,
               groups.dataParallelSize},
        plan(planPipeline(package, options.schedule, options.microbatches)),
        router(package.stageRanks, rank), givenInputs(givenInputs) {
    if (!options.weights.path.empty()) {
      weights.emplace(PretrainedWeights::open(options.weights.path));
      weightsBinding =
          bindPackageWeights(package, *weights, options.weights.naming);
    }
    if (!options.weights.savePath.empty())
      checkSavedNamesDiffer();
    for (int64_t s = 0; s < package.numStages; ++s)
      if (holds(s))
        myStages.push_back(s);
    // Each saved value lives until the last function of its stage that
    // takes it (Package::load checked that an earlier one returns it).
    for (int64_t s : myStages) {
      const std::vector<StageFunctionInfo> &functions = functionsOf(s);
      for (size_t f = 0; f < functions.size(); ++f)
        for (const TensorInfo &arg : functions[f].args)
          if (arg.role == Role::Saved)
            lastUse[{s, arg.name}] = f;
      if (options.memoryPlan && backend.servesMemoryPlans())
        for (const StageFunctionInfo &function : functions)
          if (function.memoryPlan)
            arenas[function.symbol] = std::make_unique<MemoryArena>(
                function.symbol, *function.memoryPlan);
    }
  }

  /// Runs each microbatch of the given inputs through the forward
  /// functions; returns on stage 0 the model's outputs (Package::outputs
  /// order), the microbatches' results concatenated along dimension 0, and
  /// nothing on other stages.
  std::vector<TensorPtr> runForward() {
    checkParameterDtypes();
    initializeParameters(nullptr);
    std::vector<Placed> noLabels;
    MicrobatchData data{{0, 0, 0, nullptr, /*training=*/false},
                        noLabels, nullptr, 0.0, {}, {}};
    runSchedule(plan.training[rank], data);
    return gatherOutputs(data.outputs);
  }

  void run() {
    checkDtypes();
    openData();
    std::optional<CheckpointRef> resumed = findResumePoint();
    std::optional<SafeTensorsFile> savedParameters;
    if (resumed)
      savedParameters = openResumedParameters(*resumed);
    initializeParameters(savedParameters ? &*savedParameters : nullptr);
    tied = std::make_unique<TiedParameters>(package, pipeline, rank);
    prepareGradientReduction();
    if (resumed)
      restoreOptimizer(*resumed);
    // ZeRO-3 holds its share between uses from the start.
    update->releaseValues();
    if (reports) {
      printMesh();
      printParameterKinds();
      int64_t p = package.numStages, m = options.microbatches;
      log << "pipeline: " << p << (p == 1 ? " stage" : " stages");
      if (p != plan.layout.ranks)
        log << " on " << plan.layout.ranks << " ranks";
      log << ", " << plan.label << ", " << m << " microbatches of "
          << package.microbatchSize << " samples x dp " << layout.dataParallel
          << " = global batch " << layout.globalBatch()
          << " samples per step; ideal bubble " << std::setprecision(3)
          << 100.0 * plan.ideal.bubbleFraction << "%, predicted "
          << 100.0 * plan.predicted.bubbleFraction << "%" << std::endl;
      printActivationMemory();
    }
    if (reports && !options.metricsPath.empty())
      metrics = std::make_unique<OutputFile>(
          options.metricsPath, OutputFile::Visibility::WhileWritten,
          "--metrics");
    if (reports && resumed)
      log << "resumed from " << resumed->path << ": step " << firstStep
          << ", " << cursor << " samples consumed"
          << (firstStep >= options.steps
                  ? "; it reaches --steps " + std::to_string(options.steps) +
                        ", nothing left to train"
                  : "")
          << std::endl;
    if (evalBatches > 0)
      evaluate(firstStep);
    double stepSeconds = 0;
    const CheckpointOptions &checkpoint = options.checkpoint;
    for (int64_t step = firstStep; step < options.steps; ++step) {
      traceStep = step;
      StepMetrics result = trainStep(step);
      stepSeconds += result.seconds;
      if (reports) {
        log << "step " << result.step << "  loss " << std::setprecision(8)
            << result.loss << "  grad_norm " << result.gradNorm << "  lr "
            << std::setprecision(6) << result.learningRate << "  "
            << std::setprecision(4)
            << result.samplesPerSecond
            << " samples/s  " << result.tokensPerSecond << " tokens/s"
            << std::endl;
        writeMetrics({{"step", result.step},
                      {"loss", result.loss},
                      {"grad_norm", result.gradNorm},
                      {"lr", result.learningRate},
                      {"samples_per_s", result.samplesPerSecond},
                      {"tokens_per_s", result.tokensPerSecond}});
      }
      if (evalBatches > 0 && ((options.data.evalEvery > 0 &&
                          result.step % options.data.evalEvery == 0) ||
                         result.step == options.steps))
        evaluate(result.step);
      if (checkpoint.every > 0 && (result.step % checkpoint.every == 0 ||
                                   result.step == options.steps)) {
        if (update->shardsValues())
          update->gatherValues(dataParallel);
        saveCheckpoint(result.step);
        update->releaseValues();
      }
    }
    reportRankFacts();
    if (update->shardsValues())
      update->gatherValues(dataParallel);
    if (trace)
      writeTrace();
    tied->checkHoldersAgree(parameters);
    // Data-parallel replicas hold the same parameters: the first one
    // hashes and saves them.
    std::unique_ptr<ParameterFileWriter> saved;
    if (reports && !options.saveParamsPath.empty())
      saved = std::make_unique<ParameterFileWriter>(options.saveParamsPath);
    std::unique_ptr<SafeTensorsWriter> savedWeights;
    std::set<std::string> weightNames;
    if (reports && !options.weights.savePath.empty()) {
      savedWeights = createWeightsFile();
      for (const ParameterInfo &parameter : weightsToSave())
        weightNames.insert(parameter.tensor.name);
    }
    std::string digest = "";
    if (groups.dataParallelRank == 0)
      digest = streamTensors(
          package.parameters, heldIn(parameters), "params",
          [&](const std::string &name, const Shape &shape,
              const float *values) {
            if (saved)
              saved->add(name, shape, values);
            if (weightNames.count(name))
              savedWeights->add(savedNameOf(name), values);
          });
    if (profile && groups.dataParallelRank == 0)
      writeProfile(stepSeconds);
    if (reports) {
      log << "params_sha256 " << digest << std::endl;
      writeMetrics({{"params_sha256", digest}});
      if (metrics) {
        metrics->commit();
        metrics.reset();
      }
      if (saved)
        saved->finish();
      if (savedWeights) {
        savedWeights->finish();
        log << "saved the trained weights to '" << options.weights.savePath
            << "'" << std::endl;
      }
    }
  }

private:
  /// The tensors --save-weights writes: trained and frozen parameters (a
  /// module's state_dict without its buffers).
  std::vector<ParameterInfo> weightsToSave() const {
    std::vector<ParameterInfo> kept;
    for (const ParameterInfo &parameter : package.parameters)
      if (parameter.tensor.role != Role::Constant)
        kept.push_back(parameter);
    return kept;
  }

  /// The name --save-weights gives the model tensor `name`: the one
  /// --weights gave it, else the model's without --weights-prefix.
  std::string savedNameOf(const std::string &name) const {
    auto bound = weightsBinding.fileNames.find(name);
    return bound != weightsBinding.fileNames.end()
               ? bound->second
               : fileNameOf(name, options.weights.naming);
  }

  /// Throws std::runtime_error, before any step, when two tensors would
  /// get one name in the --save-weights file.
  void checkSavedNamesDiffer() const {
    std::map<std::string, std::string> modelNameOf;
    for (const ParameterInfo &parameter : weightsToSave()) {
      const std::string &name = parameter.tensor.name;
      auto [at, fresh] = modelNameOf.emplace(savedNameOf(name), name);
      if (!fresh)
        throw std::runtime_error(
            "--save-weights would write '" + at->first + "' for both '" +
            at->second + "' and '" + name + "' (--weights-prefix '" +
            options.weights.naming.prefix +
            "' strips one name to the other); use another prefix");
    }
  }

  /// Creates the --save-weights file for weightsToSave in the order
  /// streamTensors hands them over (by model name), under the file's names,
  /// with the metadata transformers' from_pretrained expects.
  std::unique_ptr<SafeTensorsWriter> createWeightsFile() const {
    std::vector<TensorEntry> entries = entriesByName(weightsToSave());
    for (TensorEntry &entry : entries)
      entry.name = savedNameOf(entry.name);
    return std::make_unique<SafeTensorsWriter>(
        options.weights.savePath, entries,
        std::map<std::string, std::string>{{"format", "pt"}});
  }

  /// The trace's clock (0 without --trace).
  double traceClock() const { return trace ? trace->now() : 0; }
  /// Records `name` for `action` from `start` to now, with --trace.
  void traceSpan(const char *name, const Action &action, double start) {
    if (trace && !evaluating)
      trace->add(
          {name, traceStep, action.stage, action.microbatch, start, trace->now()});
  }

  /// Gathers every rank's spans to job rank 0, which writes the trace file
  /// and reports the measured bubble of its pipeline next to the
  /// predicted one.
  void writeTrace() {
    std::vector<std::string> all = world.allGatherText(trace->serialize());
    if (!reports)
      return;
    std::vector<std::vector<TraceSpan>> perRank;
    std::vector<std::string> labels;
    for (int64_t r = 0; r < world.worldSize(); ++r) {
      perRank.push_back(deserializeTraceSpans(all[r]));
      labels.push_back("rank " + std::to_string(r) + " " +
                       coordinatesOf(r));
    }
    writeOutputFile(options.tracePath, chromeTraceJson(perRank, labels),
                    "--trace");
    // Job rank 0's pipeline: the ranks that differ from it only in the
    // pipeline coordinate.
    std::vector<std::string> pipelineAxes;
    if (const MeshAxis *axis = groups.mesh.pipelineAxis())
      pipelineAxes.push_back(axis->name);
    std::vector<int64_t> pipelineRanks = groups.mesh.group(0, pipelineAxes);
    log << "bubble: measured " << std::fixed << std::setprecision(1)
        << 100.0 * measuredBubble(perRank, pipelineRanks) << "%, predicted "
        << 100.0 * plan.predicted.bubbleFraction << "% (" << plan.label << ", "
        << plan.layout.ranks << (plan.layout.ranks == 1 ? " rank, " : " ranks, ")
        << options.microbatches << " microbatches); trace "
        << options.tracePath << std::endl
        << std::defaultfloat;
  }

  /// Whether this rank runs stage `s`.
  bool holds(int64_t s) const { return package.stageRanks[s] == rank; }
  /// Whether this rank runs a stage holding a copy of `parameter`.
  bool holdsCopyOf(const ParameterInfo &parameter) const {
    return std::any_of(parameter.stages.begin(), parameter.stages.end(),
                       [&](int64_t s) { return holds(s); });
  }
  /// The pipeline rank running stage `s`.
  int64_t rankOf(int64_t s) const { return package.stageRanks[s]; }
  bool holdsLastStage() const { return holds(package.numStages - 1); }
  const std::vector<StageFunctionInfo> &functionsOf(int64_t s) const {
    return package.stages[s].functions;
  }

  /// Appends `line` to the metrics file, if there is one.
  void writeMetrics(const nlohmann::json &line) {
    if (metrics)
      metrics->write(line.dump() + "\n");
  }

  /// The run's first line: the mesh and every rank's coordinates on it.
  void printMesh() {
    const DeviceMesh &mesh = groups.mesh;
    log << "mesh " << mesh.describe() << " (order ";
    for (size_t i = 0; i < mesh.axes().size(); ++i)
      log << (i ? "," : "") << mesh.axes()[i].name;
    log << "):";
    for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank)
      log << " " << rank << "=" << coordinatesOf(rank);
    log << std::endl;
  }

  /// What trains: the parameters that do and those frozen, and the model's
  /// floating-point tensors that the compiler held constant (at most
  /// kListedConstants of their names).
  void printParameterKinds() {
    constexpr size_t kListedConstants = 10;
    int64_t counts[2] = {0, 0}, elements[2] = {0, 0}, split = 0;
    for (const ParameterInfo &parameter : package.parameters) {
      if (parameter.tensor.role == Role::Constant)
        continue;
      int kind = parameter.tensor.role == Role::Frozen;
      ++counts[kind];
      elements[kind] += numElements(parameter.globalShape());
      split += parameter.sharding && parameter.sharding->parts > 1;
    }
    log << "parameters: " << counts[0] << " train (" << elements[0]
        << " elements), " << counts[1] << " frozen (" << elements[1]
        << " elements)";
    if (groups.tensorParallelSize > 1)
      log << "; " << split << " of " << counts[0] + counts[1]
          << " split over the tensor axis (tp " << groups.tensorParallelSize
          << "), the rest replicated";
    if (!package.heldConstants.empty()) {
      int64_t held = 0;
      for (const auto &constant : package.heldConstants)
        held += constant.second;
      log << "; held constant: " << package.heldConstants.size()
          << (package.heldConstants.size() == 1 ? " float tensor ("
                                                  : " float tensors (")
          << held << " elements): ";
      for (size_t i = 0; i < package.heldConstants.size(); ++i) {
        if (i == kListedConstants) {
          log << " and " << package.heldConstants.size() - i
              << " more (pp-opt --pp-report lists them)";
          break;
        }
        log << (i ? ", " : "") << package.heldConstants[i].first;
      }
    }
    log << std::endl;
  }

  /// Job rank `rank`'s coordinates on the mesh: "(pp0,dp1)".
  std::string coordinatesOf(int64_t rank) const {
    const DeviceMesh &mesh = groups.mesh;
    std::vector<int64_t> at = mesh.coordinates(rank);
    std::string text = "(";
    for (size_t i = 0; i < at.size(); ++i)
      text += (i ? "," : "") + mesh.axes()[i].name + std::to_string(at[i]);
    return text + ")";
  }

  /// Opens the data this rank reads: a first stage the inputs, a last
  /// stage the labels, a middle stage nothing at all.
  void openData() {
    DataNeeds needs{holds(0), holdsLastStage()};
    const DataOptions &data = options.data;
    if (data.path.empty()) {
      source = std::make_unique<SyntheticMicrobatches>(
          package, options.seed, layout, groups.dataParallelRank);
      return;
    }
    TokenDataConfig config =
        tokenDataConfig(package, data.inputName, data.sequenceLength,
                        data.padSequence);
    // Every stage runs the eval batches; a middle stage learns their count
    // from the file's header alone.
    if (!data.evalPath.empty()) {
      checkEvaluable(package);
      evalBatches =
          EvalSampler(tokenWindows(TokenDataset::countTokens(data.evalPath,
                                                             data.tokenWidth),
                                   config.sequenceLength),
                      layout, data.evalBatches)
              .batches();
    }
    if (!needs.inputs && !needs.labels)
      return;
    trainingData = TokenDataset::open(data.path, data.tokenWidth);
    checkTokenDataset(config, *trainingData);
    source = trainingMicrobatches(*trainingData, config, options.seed, layout,
                                  groups.dataParallelRank);
    if (data.evalPath.empty())
      return;
    evalData = TokenDataset::open(data.evalPath, data.tokenWidth);
    checkTokenDataset(config, *evalData);
    evalSource = evalMicrobatches(*evalData, config, layout,
                                  groups.dataParallelRank, data.evalBatches);
  }

  /// Fails before the first step, on every rank alike, for tensors whose
  /// dtype the trainer cannot handle yet.
  void checkDtypes() {
    checkParameterDtypes();
    // A token dataset's inputs and labels are checked when it opens.
    if (!options.data.path.empty())
      return;
    for (const TensorInfo &input : package.inputs)
      checkSyntheticDtype(input.name, input.dtype, /*isLabel=*/false,
                          input.indexBound);
    checkSyntheticDtype(package.labels.name, package.labels.dtype,
                        /*isLabel=*/true);
  }

  void checkParameterDtypes() {
    for (const ParameterInfo &parameter : package.parameters)
      if (parameter.tensor.dtype != PP_DTYPE_F32)
        throw std::runtime_error(std::string(roleName(parameter.tensor.role)) +
                                 " '" + parameter.tensor.name + "' has dtype " +
                                 pp_dtype_name(parameter.tensor.dtype) +
                                 "; pp-run supports f32 parameters so far");
  }

  /// Creates this stage's parameters with the values of `saved` (a
  /// resumed checkpoint's, checked to fit) or else the model's.
  void initializeParameters(const SafeTensorsFile *saved) {
    // A tied parameter has a gradient when any holder's backward returns
    // part of it.
    for (const StageInfo &any : package.stages)
      for (const StageFunctionInfo &function : any.functions)
        for (const TensorInfo &result : function.results)
          if (result.role == Role::Gradient)
            withGradient.insert(result.name);
    layOutTrainedParameters();
    for (const ParameterInfo &parameter : package.parameters) {
      if (!holdsCopyOf(parameter))
        continue;
      const FlatParameter *trained = flat->find(parameter.tensor.name);
      TensorPtr tensor =
          trained ? borrowTensor(parameter.tensor,
                                 flat->values() + trained->offset)
                  : makeTensor(parameter.tensor);
      fillInitialValue(parameter, saved, tensor.get());
      const std::string &name = parameter.tensor.name;
      Placed &placed = placedParameters[name];
      placed.tensor = backend.place(tensor.get(), placed.copy);
      parameters[name] = std::move(tensor);
      // Frozen and constant tensors get no gradient and no updates, nor
      // does anything in a forward-only run.
      if (parameter.tensor.role != Role::Parameter || givenInputs)
        continue;
      TensorPtr gradient =
          trained ? borrowTensor(parameter.tensor,
                                 flat->gradients() + trained->offset)
                  : makeTensor(parameter.tensor);
      prepareGradientSums(parameter, gradient.get());
      gradients[name] = std::move(gradient);
    }
  }

  /// Creates the sums of the parts of `parameter`'s gradient (host tensor
  /// `gradient`) that this rank's stages compute: the gradient itself when
  /// it comes in one part, else a buffer per part, which TiedParameters
  /// adds up after the data-parallel reduction.
  void prepareGradientSums(const ParameterInfo &parameter,
                           pp_tensor *gradient) {
    const std::vector<int64_t> &partStages = parameter.gradientPartStages;
    for (int64_t part = 0; part < static_cast<int64_t>(partStages.size());
         ++part) {
      if (!holds(partStages[part]))
        continue;
      GradientSum &sum = sums[{parameter.tensor.name, part}];
      if (partStages.size() > 1) {
        sum.owned = makeTensor(parameter.tensor);
        sum.host = sum.owned.get();
      } else {
        sum.host = gradient;
      }
      sum.placed.tensor = backend.place(sum.host, sum.placed.copy);
      localParts[{parameter.tensor.name, part}] = sum.host;
    }
  }

  /// Writes `parameter`'s first value into `local` (this rank's shard of
  /// it): the global tensor, then this rank's slice, so that every layout
  /// starts from the same weights. A resumed run takes every tensor from
  /// its checkpoint `saved`; otherwise a tensor --weights gives comes from
  /// its file, and frozen and constant tensors always from the model.
  void fillInitialValue(const ParameterInfo &parameter,
                        const SafeTensorsFile *saved, pp_tensor *local) {
    const std::string &name = parameter.tensor.name;
    if (saved) {
      readShard(*saved, parameter, name, floatsOf(local));
      return;
    }
    TensorPtr global;
    pp_tensor *whole = local;
    if (parameter.sharding) {
      TensorInfo info = parameter.tensor;
      info.shape = parameter.globalShape();
      global = makeTensor(info);
      whole = global.get();
    }
    if (auto bound = weightsBinding.fileNames.find(name);
        bound != weightsBinding.fileNames.end())
      weights->read(bound->second, floatsOf(whole));
    else if (options.init == ParameterInit::Random &&
             parameter.tensor.role == Role::Parameter)
      fillRandomParameter(whole, name, options.seed);
    else if (parameter.fromFile)
      package.readParameter(parameter, whole);
    else
      fillMissingParameter(whole, name);
    if (parameter.sharding)
      sliceShard(*parameter.sharding, groups.tensorParallelRank,
                 floatsOf(whole), floatsOf(local));
  }

  /// Reads the global tensor `name` (of `parameter`'s global shape: the
  /// parameter or a buffer of its optimizer state) from `file` and writes
  /// this rank's shard of it to `local`.
  void readShard(const SafeTensorsFile &file, const ParameterInfo &parameter,
                 const std::string &name, float *local) const {
    if (!parameter.sharding) {
      file.read(name, local);
      return;
    }
    std::vector<float> global(numElements(parameter.globalShape()));
    file.read(name, global.data());
    sliceShard(*parameter.sharding, groups.tensorParallelRank, global.data(),
               local);
  }

  /// Lays out the flat buffers of this stage's trained parameters (in name
  /// order, as the optimizer steps them; none in a forward-only run) and
  /// the update over them. A parameter the loss does not depend on has no
  /// gradient (PyTorch's None) and keeps its value.
  void layOutTrainedParameters() {
    std::vector<FlatParameter> trained;
    if (!givenInputs)
      for (const ParameterInfo &parameter : package.parameters)
        if (holdsCopyOf(parameter) &&
            parameter.tensor.role == Role::Parameter &&
            withGradient.count(parameter.tensor.name))
          trained.push_back(
              {parameter.tensor.name,
               static_cast<int64_t>(parameter.tensor.shape.size()),
               numElements(parameter.tensor.shape)});
    std::sort(trained.begin(), trained.end(),
              [](const FlatParameter &a, const FlatParameter &b) {
                return a.name < b.name;
              });
    flat = std::make_unique<FlatParameters>(std::move(trained),
                                            dataParallel.worldSize());
    update = std::make_unique<ParameterUpdate>(
        options.optimizer, *flat, dataParallel, options.zeroLevel);
    if (update->shardsValues()) {
      std::vector<int64_t> all(dataParallel.worldSize());
      std::iota(all.begin(), all.end(), 0);
      valueGathers = dataParallel.split("zero-3 parameter gathers", all);
    }
  }

  /// Lists this rank's gradient sums for the data-parallel reduction (in
  /// manifest order, each parameter's parts in part order: a part is
  /// reduced on its own) and counts the calls per step that add to each.
  void prepareGradientReduction() {
    std::vector<pp_tensor *> listed;
    // ZeRO-2 and up: the sums of a gradient in one part land on the
    // owners of its flat shares; one the tied holders exchange stays whole.
    GradientShares shares;
    if (update->shardsGradients())
      shares.share = update->shareSize();
    for (const ParameterInfo &parameter : package.parameters)
      for (int64_t part = 0;
           part < static_cast<int64_t>(parameter.gradientPartStages.size());
           ++part)
        if (auto it = sums.find({parameter.tensor.name, part});
            it != sums.end()) {
          it->second.reductionIndex = listed.size();
          listed.push_back(it->second.host);
          const FlatParameter *held = flat->find(parameter.tensor.name);
          bool whole = !held || parameter.gradientPartStages.size() > 1 ||
                       tied->forms(parameter.tensor.name);
          shares.flatOffsets.push_back(whole ? -1 : held->offset);
        }
    if (!update->shardsGradients())
      shares.flatOffsets.clear();
    reducer = std::make_unique<GradientReducer>(
        dataParallel, listed, kGradientBucketBytes, std::move(shares));
    for (int64_t s : myStages)
      for (const StageFunctionInfo &function : functionsOf(s))
        for (const TensorInfo &result : function.results)
          if (result.role == Role::Gradient)
            sums.at({result.name, result.part}).perStep +=
                options.microbatches;
  }

  /// Adds a microbatch's `contribution`, the stage function result
  /// `result`, to its gradient sum; once its step's last contribution is
  /// in, copies the sum to the host and hands it to the data-parallel
  /// reduction.
  void addGradient(const TensorInfo &result, pp_tensor *contribution) {
    GradientSum &sum = sums.at({result.name, result.part});
    backend.accumulate(sum.placed.tensor, contribution);
    if (--sum.left != 0)
      return;
    backend.fetch(sum.placed.tensor, sum.host);
    reducer->ready(sum.reductionIndex);
  }

  /// A batch the schedule runs: a training step or an eval batch (its
  /// index), where its samples come from, and whether dropout drops.
  struct BatchRef {
    int64_t index;
    /// Tells its messages apart from every other batch's.
    int64_t messageStep;
    /// The position of its first sample in its source's order: a training
    /// step's consumed-samples cursor, eval batch e's e * B.
    int64_t start;
    MicrobatchSource *source;
    bool training;
  };

  /// Takes a stage function's result `index` as the function hands it over.
  using ResultHandler = std::function<void(size_t index, pp_tensor *result)>;

  /// Runs one stage function over `args` for microbatch `microbatch` of
  /// `batch`, passing each result to `onResult` as soon as the function
  /// hands it over; returns its results.
  std::vector<TensorPtr> call(int64_t stage, const StageFunctionInfo &function,
                              std::vector<pp_tensor *> args,
                              const BatchRef &batch, int64_t microbatch,
                              const ResultHandler &onResult) {
    pp_frame frame;
    frame.profile = profile.get();
    frame.collectives = backend.tensorCollectives()
                            ? backend.tensorCollectives()
                            : groups.collectives.get();
    frame.args = std::move(args);
    // The generated code is C: a failure becomes the frame's error.
    frame.onResult = [&](int64_t index, pp_tensor *result) {
      if (static_cast<size_t>(index) >= function.results.size())
        return;
      try {
        onResult(static_cast<size_t>(index), result);
      } catch (const std::exception &error) {
        failFrame(&frame, error.what());
      }
    };
    backend.configure(frame, batch.messageStep, microbatch);
    router.prepare(frame.channel, batch.messageStep, microbatch);
    frame.channel = &router;
    // Dropout drops in training calls only.
    frame.position = {
        options.seed, batch.index,
        layout.firstPosition(batch.start, groups.dataParallelRank, microbatch),
        /*training=*/batch.training};
    auto arena = arenas.find(function.symbol);
    if (arena != arenas.end()) {
      frame.arena = arena->second.get();
      frame.arena->begin();
    }
    function.entry(&frame);
    if (frame.error.empty() && frame.arena)
      frame.error = frame.arena->finish();
    heapAllocations += frame.heapAllocations;
    if (!frame.error.empty())
      throw std::runtime_error("stage " + std::to_string(stage) + " (" +
                               function.symbol + "): " + frame.error);
    std::vector<TensorPtr> results;
    for (pp_tensor *result : frame.results)
      results.emplace_back(result);
    frame.results.clear();
    if (results.size() != function.results.size())
      throw std::runtime_error(function.symbol + " returned " +
                               std::to_string(results.size()) +
                               " results, the manifest lists " +
                               std::to_string(function.results.size()));
    return results;
  }

  /// Microbatch `microbatch` of the input `info` a stage function takes:
  /// its rows of the given input in a forward-only run, else the batch's
  /// source's.
  TensorPtr input(const TensorInfo &info, const BatchRef &batch,
                  int64_t microbatch) {
    auto it = std::find_if(
        package.inputs.begin(), package.inputs.end(),
        [&](const TensorInfo &input) { return input.name == info.name; });
    if (it == package.inputs.end())
      throw std::runtime_error("a stage of rank " + std::to_string(rank) +
                               " takes the input '" + info.name +
                               "', which the package does not list");
    TensorPtr tensor = makeTensor(info);
    if (!givenInputs) {
      // The package's entry knows the rows of the table it indexes.
      batch.source->fillInput(*it, batch.start, microbatch, tensor.get());
      return tensor;
    }
    pp_tensor *all = (*givenInputs)[it - package.inputs.begin()];
    size_t bytes = pp_tensor_nbytes(tensor.get());
    std::memcpy(pp_tensor_data(tensor.get()),
                static_cast<const char *>(pp_tensor_data(all)) +
                    microbatch * bytes,
                bytes);
    return tensor;
  }

  /// What the stage functions of a batch share: the batch, its labels and
  /// loss scale (as the functions see them), the loss so far and, per
  /// (stage, microbatch), the saved values later phases take by name.
  struct MicrobatchData {
    BatchRef batch;
    const std::vector<Placed> &labels;
    pp_tensor *lossScale;
    double lossSum;
    std::map<std::pair<int64_t, int64_t>, std::map<std::string, TensorPtr>>
        saved;
    /// Forward-only: per output of this stage, its microbatches in order.
    std::map<std::string, std::vector<TensorPtr>> outputs;
  };

  /// Runs function f of stage `stage` on microbatch `mb`: feeds its
  /// arguments by role, keeps its saved results for the functions after it
  /// and accumulates its gradients.
  void runFunction(int64_t stage, size_t f, int64_t mb, MicrobatchData &data) {
    const StageFunctionInfo &function = functionsOf(stage)[f];
    std::map<std::string, TensorPtr> &saved = data.saved[{stage, mb}];
    std::vector<TensorPtr> inputs;
    std::vector<Placed> placedInputs;
    placedInputs.reserve(function.args.size());
    std::vector<pp_tensor *> args;
    for (const TensorInfo &arg : function.args) {
      switch (arg.role) {
      case Role::Parameter:
      case Role::Frozen:
      case Role::Constant:
        args.push_back(placedParameters.at(arg.name).tensor);
        break;
      case Role::Input:
        inputs.push_back(input(arg, data.batch, mb));
        placedInputs.emplace_back();
        args.push_back(
            backend.place(inputs.back().get(), placedInputs.back().copy));
        break;
      case Role::Label:
        args.push_back(data.labels.at(mb).tensor);
        break;
      case Role::LossScale:
        args.push_back(data.lossScale);
        break;
      case Role::Saved:
        args.push_back(saved.at(arg.name).get());
        break;
      default:
        throw std::runtime_error("argument '" + arg.name + "' of " +
                                 function.symbol + " has role '" +
                                 roleName(arg.role) +
                                 "', which no argument can have");
      }
    }
    // Gradients add up as the function returns them, so that the last
    // microbatch's are reduced over the replicas while it computes the
    // rest; microbatches arrive in order, so each sum's order is fixed.
    std::vector<TensorPtr> results =
        call(stage, function, std::move(args), data.batch, mb,
             [&](size_t index, pp_tensor *result) {
               if (function.results[index].role == Role::Gradient)
                 addGradient(function.results[index], result);
             });
    for (const TensorInfo &arg : function.args)
      if (arg.role == Role::Saved && lastUse.at({stage, arg.name}) == f)
        saved.erase(arg.name);
    for (size_t i = 0; i < results.size(); ++i) {
      const TensorInfo &info = function.results[i];
      if (info.role == Role::Loss) {
        TensorPtr hostLoss = makeTensor({"loss", Role::None, PP_DTYPE_F32, {}});
        backend.fetch(results[i].get(), hostLoss.get());
        data.lossSum += floatsOf(hostLoss.get())[0];
      } else if (info.role == Role::Saved && lastUse.count({stage, info.name})) {
        saved[info.name] = std::move(results[i]);
      } else if (info.role == Role::Output) {
        // The schedule runs a stage's forwards in microbatch order.
        TensorPtr host = makeTensor(info);
        backend.fetch(results[i].get(), host.get());
        data.outputs[info.name].push_back(std::move(host));
      }
    }
    if (saved.empty())
      data.saved.erase({stage, mb});
  }

  /// Runs this rank's `actions` (its row of an action table) over the
  /// batch's microbatches: a compute action runs the stage functions of its
  /// phase, a recv waits for the messages its compute takes from other
  /// ranks, a send marks where its compute's messages have left (sends are
  /// eager: the stage functions hand them to the transport as they produce
  /// them), and the optimizer action runs `optimizer`.
  void runSchedule(const std::vector<Action> &actions, MicrobatchData &data,
                   const std::function<void()> &optimizer = nullptr) {
    // ZeRO-3: the parameters are gathered for the first compute action
    // (started one action ahead) and released after the last.
    constexpr size_t kNone = std::numeric_limits<size_t>::max();
    size_t firstCompute = kNone, lastCompute = kNone;
    if (update && update->shardsValues())
      for (size_t i = 0; i < actions.size(); ++i)
        if (computes(actions[i].kind)) {
          firstCompute = std::min(firstCompute, i);
          lastCompute = i;
        }
    std::future<void> gathered;
    auto gather = [&] {
      gathered = std::async(std::launch::async,
                            [this] { update->gatherValues(*valueGathers); });
    };
    for (size_t i = 0; i < actions.size(); ++i) {
      const Action &action = actions[i];
      if (i + 1 == firstCompute)
        gather();
      if (i == firstCompute) {
        double start = traceClock();
        if (!gathered.valid())
          gather();
        gathered.get();
        traceSpan("gather", action, start);
      }
      double start = traceClock();
      switch (action.kind) {
      case ActionKind::Recv:
        awaitMessages(action, data.batch);
        traceSpan("recv", action, start);
        break;
      case ActionKind::Send:
        traceSpan("send", action, start - router.takeSendSeconds() * 1e6);
        break;
      case ActionKind::Optimizer:
        if (!optimizer)
          throw std::runtime_error("rank " + std::to_string(rank) +
                                   ": the table has an optimizer action "
                                   "where the run has no training step");
        optimizer();
        break;
      default: {
        const std::vector<StageFunctionInfo> &functions =
            functionsOf(action.stage);
        for (size_t f = 0; f < functions.size(); ++f)
          if (actionRunsPhase(action.kind, functions[f].phase))
            runFunction(action.stage, f, action.microbatch, data);
        traceSpan(actionKindName(action.kind), action, start);
      }
      }
      if (i == lastCompute)
        update->releaseValues();
    }
    backend.finishStep();
  }

  /// Whether actions of `kind` run stage functions.
  static bool computes(ActionKind kind) {
    return kind != ActionKind::Recv && kind != ActionKind::Send &&
           kind != ActionKind::Optimizer;
  }

  /// Waits for the messages that `recv`'s compute action takes from stages
  /// on other ranks; those from stages of this rank must be there already.
  void awaitMessages(const Action &recv, const BatchRef &batch) {
    pp_frame frame;
    backend.configure(frame, batch.messageStep, recv.microbatch);
    router.prepare(frame.channel, batch.messageStep, recv.microbatch);
    for (const StageFunctionInfo &function : functionsOf(recv.stage)) {
      if (!actionRunsPhase(recv.of, function.phase))
        continue;
      for (const MessageInfo &message : function.messages) {
        if (message.send)
          continue;
        for (const TensorInfo &tensor : message.tensors)
          if (std::string error = router.await(message.peer, tensor.name);
              !error.empty())
            throw std::runtime_error(
                "rank " + std::to_string(rank) + " at " + formatAction(recv) +
                " (stage " + std::to_string(recv.stage) + ", microbatch " +
                std::to_string(recv.microbatch) + "): " + error);
      }
    }
  }

  /// The labels of `batch`'s microbatches on the last stage (none
  /// elsewhere), placed for the stage functions in `placed`, and the count
  /// of loss terms they hold (elements for mse, tokens that are not
  /// ignore_index for cross_entropy).
  double drawLabels(const BatchRef &batch, std::vector<TensorPtr> &labels,
                    std::vector<Placed> &placed) {
    placed.resize(options.microbatches);
    if (!holdsLastStage())
      return 0;
    double count = 0;
    for (int64_t mb = 0; mb < options.microbatches; ++mb) {
      labels.push_back(makeTensor(package.labels));
      pp_tensor *label = labels.back().get();
      batch.source->fillLabels(batch.start, mb, label);
      placed[mb].tensor = backend.place(label, placed[mb].copy);
      if (package.lossKind == "mse") {
        count += static_cast<double>(pp_tensor_numel(label));
      } else {
        const int64_t *values =
            static_cast<const int64_t *>(pp_tensor_data(label));
        for (int64_t i = 0, n = pp_tensor_numel(label); i < n; ++i)
          count += values[i] != package.ignoreIndex;
      }
    }
    return count;
  }

  /// Sums `values` over the last stages of all data-parallel replicas,
  /// then sends the sums from the last stage to every stage of its
  /// pipeline: each rank ends with the same bits, reduced over dp only.
  void sumOverDataParallel(std::vector<double> &values) {
    if (holdsLastStage())
      dataParallel.allReduceSum(values);
    pipeline.broadcast(values.data(), values.size() * sizeof(double),
                       static_cast<int>(rankOf(package.numStages - 1)));
  }

  StepMetrics trainStep(int64_t step) {
    auto start = std::chrono::steady_clock::now();
    int64_t heapAllocationsBefore = heapAllocations;
    for (auto &[key, sum] : sums) {
      backend.zero(sum.placed.tensor);
      sum.left = sum.perStep;
    }
    reducer->begin();

    // The last stages draw every label of the step first: the loss is
    // divided by the step's element (mse) or token (cross_entropy) count
    // over all data-parallel replicas.
    BatchRef batch{step, step, cursor, source.get(), /*training=*/true};
    std::vector<TensorPtr> labels;
    std::vector<Placed> placedLabels;
    double localCount = drawLabels(batch, labels, placedLabels);
    double count = localCount;
    if (holdsLastStage()) {
      std::vector<double> total = {localCount};
      dataParallel.allReduceSum(total);
      count = total[0];
    }
    TensorPtr lossScale =
        makeTensor({"loss_scale", Role::None, PP_DTYPE_F32, {}});
    floatsOf(lossScale.get())[0] =
        count > 0 ? static_cast<float>(1.0 / count) : 0.0f;
    Placed placedScale;
    placedScale.tensor = backend.place(lossScale.get(), placedScale.copy);
    MicrobatchData data{batch, placedLabels, placedScale.tensor, 0.0, {}, {}};
    double gradNorm = 0;
    float learningRate = 0;
    runSchedule(plan.training[rank], data, [&] {
      heapAllocationsPerStep = heapAllocations - heapAllocationsBefore;
      double start = traceClock();
      std::tie(gradNorm, learningRate) = updateParameters(step);
      traceSpan("optimizer", Action{ActionKind::Optimizer}, start);
    });

    // The loss lives on the last stages, and their clock closes the step:
    // every rank reports the same values.
    std::vector<double> report = {
        data.lossSum, localCount,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count()};
    sumOverDataParallel(report);
    count = report[1];
    double seconds = report[2] / layout.dataParallel;
    double samples = static_cast<double>(layout.globalBatch());
    return {step + 1,
            count > 0 ? report[0] / count : 0.0,
            gradNorm,
            learningRate,
            seconds,
            seconds > 0 ? samples / seconds : 0.0,
            seconds > 0 ? count / seconds : 0.0};
  }

  /// The optimizer action of step `step`: completes the data-parallel
  /// reduction, adds up the gradients that come in parts, clips by the
  /// global norm and updates the parameters. Returns the norm and the
  /// learning rate.
  std::pair<double, float> updateParameters(int64_t step) {
    // The reduction over the data-parallel replicas started during the
    // backward.
    auto waitStart = std::chrono::steady_clock::now();
    double traceStart = traceClock();
    reducer->finish();
    traceSpan("all-reduce", Action{ActionKind::Optimizer}, traceStart);
    reduceWaitSeconds += std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - waitStart)
                             .count();
    tied->sumGradients(localParts, gradients);

    // Global gradient norm: one sum of squares per parameter (in double),
    // summed over the tensor-parallel group (a sharded parameter's shards;
    // a replicated one by the first device alone, counted once), then in
    // manifest order over the pipeline (each parameter counted once:
    // replicas hold the same sums), so the norm is the same bits on every
    // rank and for every stage count; a tied parameter by its owner).
    // ZeRO-2 and up: each replica's share of the sums (the same bits),
    // summed over the replicas (every sum but one is 0).
    std::vector<double> squares(package.parameters.size(), 0.0);
    std::map<std::string, double> shared;
    if (update->shardsGradients())
      shared = update->gradientSquares();
    for (size_t i = 0; i < package.parameters.size(); ++i) {
      const ParameterInfo &parameter = package.parameters[i];
      auto it = gradients.find(parameter.tensor.name);
      if (it == gradients.end() || !holds(parameter.stage) ||
          (!parameter.sharding && groups.tensorParallelRank != 0))
        continue;
      if (update->shardsGradients()) {
        auto share = shared.find(parameter.tensor.name);
        squares[i] = share == shared.end() ? 0.0 : share->second;
        continue;
      }
      const float *g = floatsOf(it->second.get());
      for (int64_t j = 0, n = pp_tensor_numel(it->second.get()); j < n; ++j)
        squares[i] += static_cast<double>(g[j]) * g[j];
    }
    if (update->shardsGradients())
      dataParallel.allReduceSum(squares);
    tensorParallel.allReduceSum(squares);
    pipeline.allReduceSum(squares);
    double total = 0;
    for (double square : squares)
      total += square;
    double gradNorm = std::sqrt(total);
    if (step == 0 && !options.saveGradsPath.empty()) {
      update->gatherGradients();
      if (groups.dataParallelRank == 0)
        saveGradients();
    }
    float clip = 1.0f;
    if (options.maxGradNorm > 0)
      clip = static_cast<float>(
          std::min(1.0, options.maxGradNorm / (gradNorm + 1e-6)));

    float learningRate = learningRateAt(options.learningRate, step + 1);
    update->apply(clip, learningRate);
    cursor += layout.globalBatch();
    for (const FlatParameter &trained : flat->parameters())
      backend.refresh(placedParameters.at(trained.name).tensor,
                      parameters.at(trained.name).get());
    return {gradNorm, learningRate};
  }

  /// Runs the eval schedule over every eval batch with dropout off and
  /// reports the loss over all eval tokens (padding masked out) and its
  /// perplexity, after `step` training steps. The eval functions keep no
  /// activations for a backward and no gradients.
  void evaluate(int64_t step) {
    auto start = std::chrono::steady_clock::now();
    evaluating = true;
    std::vector<double> sums = {0.0, 0.0};
    for (int64_t e = 0; e < evalBatches; ++e) {
      // Eval batches talk on their own message steps, below every
      // training step's.
      BatchRef batch{e, -1 - (evalRound * evalBatches + e),
                     e * layout.globalBatch(), evalSource.get(),
                     /*training=*/false};
      std::vector<TensorPtr> labels;
      std::vector<Placed> placedLabels;
      sums[1] += drawLabels(batch, labels, placedLabels);
      // The eval functions return a microbatch's summed loss and take no
      // loss scale; the mean divides once, by every replica's tokens.
      MicrobatchData data{batch, placedLabels, nullptr, 0.0, {}, {}};
      runSchedule(plan.eval[rank], data);
      sums[0] += data.lossSum;
    }
    ++evalRound;
    evaluating = false;
    sumOverDataParallel(sums);
    double loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!reports)
      return;
    log << "eval after step " << step << "  loss " << std::setprecision(8)
        << loss << "  perplexity " << std::exp(loss) << "  ("
        << static_cast<int64_t>(sums[1]) << " tokens, " << evalBatches
        << (evalBatches == 1 ? " batch, " : " batches, ")
        << std::setprecision(3) << seconds << " s)"
        << std::endl;
    writeMetrics({{"eval_after_step", step},
                  {"eval_loss", loss},
                  {"eval_perplexity", std::exp(loss)},
                  {"eval_tokens", static_cast<int64_t>(sums[1])}});
  }

  /// Writes (rank 0) the metrics' `ranks` line: per rank, how many tokens
  /// or elements it read from the data (a first stage its inputs, a last
  /// stage its labels, a middle stage none), the bytes of the parameters it
  /// holds (its shards of sharded ones; frozen and constant included), its
  /// optimizer state and its activation memory (ActivationMemory.h).
  void reportRankFacts() {
    // The trained parameters' values and gradients as resident in memory
    // (ZeRO-2 and 3 hold shares of them), the others by size.
    int64_t parameterBytes = flat->residentValueBytes();
    for (const auto &[name, tensor] : parameters)
      if (!flat->find(name))
        parameterBytes += pp_tensor_nbytes(tensor.get());
    int64_t gradientBytes = flat->residentGradientBytes();
    for (const auto &[name, tensor] : gradients)
      if (!flat->find(name))
        gradientBytes += pp_tensor_nbytes(tensor.get());
    for (const auto &[key, sum] : sums)
      if (sum.owned)
        gradientBytes += pp_tensor_nbytes(sum.owned.get());
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    StageMemory memory;
    for (int64_t s : myStages)
      memory += stageMemory(package, s, plan.training[rank]);
    const std::vector<std::string> fields = {
        "elements_read",
        "parameter_bytes",
        "gradient_bytes",
        "optimizer_state_bytes",
        "peak_rss_bytes",
        "saved_bytes_per_microbatch",
        "estimated_saved_bytes_per_microbatch",
        "in_flight_microbatches",
        "activation_bytes",
        "arena_bytes",
        "heap_tensor_allocations_per_step"};
    std::vector<double> mine = {
        static_cast<double>((source ? source->elementsRead() : 0) +
                            (evalSource ? evalSource->elementsRead() : 0)),
        static_cast<double>(parameterBytes),
        static_cast<double>(gradientBytes),
        static_cast<double>(update->stateBytes()),
        static_cast<double>(usage.ru_maxrss) * 1024.0,
        static_cast<double>(memory.savedBytesPerMicrobatch),
        memory.estimatedSavedBytes.value_or(-1),
        static_cast<double>(memory.inFlightMicrobatches),
        static_cast<double>(memory.activationBytes()),
        static_cast<double>(arenas.empty() ? 0 : memory.arenaBytes),
        static_cast<double>(heapAllocationsPerStep)};
    int64_t ranks = world.worldSize();
    size_t count = fields.size();
    std::vector<double> all(count * ranks, 0.0);
    std::copy(mine.begin(), mine.end(), all.begin() + count * world.rank());
    world.allReduceSum(all);
    if (!reports)
      return;
    nlohmann::json perRank = nlohmann::json::array();
    for (int64_t rank = 0; rank < ranks; ++rank) {
      nlohmann::json entry = {{"rank", rank}};
      for (size_t i = 0; i < count; ++i)
        entry[fields[i]] = static_cast<int64_t>(all[count * rank + i]);
      std::vector<int64_t> at = groups.mesh.coordinates(rank);
      for (size_t i = 0; i < at.size(); ++i)
        entry[groups.mesh.axes()[i].name] = at[i];
      perRank.push_back(entry);
    }
    writeMetrics({{"ranks", perRank}});
  }

  /// Prints (rank 0) each stage's activation memory: the saved bytes per
  /// microbatch times the microbatches the schedule holds in flight,
  /// pp-partition's estimate of the saved bytes, and the stage functions'
  /// arenas.
  void printActivationMemory() {
    auto mib = [](double bytes) {
      std::ostringstream text;
      text << std::fixed << std::setprecision(3) << bytes / 1048576.0
           << " MiB";
      return text.str();
    };
    log << "activation memory:";
    for (int64_t at = 0; at < package.numStages; ++at) {
      StageMemory memory =
          stageMemory(package, at, plan.training[rankOf(at)]);
      log << (at == 0 ? "" : ";") << " stage " << at << " "
          << memory.inFlightMicrobatches << " x "
          << mib(memory.savedBytesPerMicrobatch) << " = "
          << mib(memory.activationBytes()) << " (estimate "
          << (memory.estimatedSavedBytes ? mib(*memory.estimatedSavedBytes)
                                         : "none")
          << "), arenas " << mib(arenas.empty() ? 0 : memory.arenaBytes);
    }
    log << std::endl;
  }

  /// The model's outputs on stage 0, each the concatenation of its
  /// microbatches (`computed`, on the stage computing it), which that stage
  /// sends to stage 0; nothing on other stages.
  std::vector<TensorPtr>
  gatherOutputs(std::map<std::string, std::vector<TensorPtr>> &computed) {
    std::vector<TensorPtr> gathered;
    for (const OutputInfo &output : package.outputs) {
      const TensorInfo &info = output.tensor;
      TensorInfo whole = info;
      if (!whole.shape.empty())
        whole.shape[0] *= options.microbatches;
      uint64_t slot = messageSlot("outputs/" + info.name);
      if (holds(output.stage)) {
        std::vector<TensorPtr> &parts = computed.at(info.name);
        TensorPtr tensor = makeTensor(whole);
        char *at = static_cast<char *>(pp_tensor_data(tensor.get()));
        for (TensorPtr &part : parts) {
          std::memcpy(at, pp_tensor_data(part.get()),
                      pp_tensor_nbytes(part.get()));
          at += pp_tensor_nbytes(part.get());
        }
        if (rank == 0)
          gathered.push_back(std::move(tensor));
        else
          pipeline.send(0, slot, pp_tensor_data(tensor.get()),
                        pp_tensor_nbytes(tensor.get()));
      } else if (rank == 0) {
        TensorPtr tensor = makeTensor(whole);
        pipeline.recv(static_cast<int>(rankOf(output.stage)), slot,
                      pp_tensor_data(tensor.get()),
                      pp_tensor_nbytes(tensor.get()));
        gathered.push_back(std::move(tensor));
      }
    }
    return gathered;
  }

  /// Takes a streamed tensor on stage 0: its name, shape and values.
  using TensorSink = std::function<void(const std::string &, const Shape &,
                                        const float *)>;
  /// Where a stage holds the values of a tensor it streams, by name.
  using TensorValues = std::function<const float *(const std::string &)>;

  static TensorValues heldIn(const std::map<std::string, TensorPtr> &held) {
    return [&held](const std::string &name) {
      return floatsOf(held.at(name).get());
    };
  }

  /// `listed`'s names and global shapes in name order: the order
  /// streamTensors streams them in.
  static std::vector<TensorEntry>
  entriesByName(const std::vector<ParameterInfo> &listed) {
    std::vector<TensorEntry> entries;
    for (const ParameterInfo &parameter : listed)
      entries.push_back({parameter.tensor.name, parameter.globalShape()});
    std::sort(entries.begin(), entries.end(),
              [](const TensorEntry &a, const TensorEntry &b) {
                return a.name < b.name;
              });
    return entries;
  }

  /// Streams the tensors `listed` (each held, as `valuesOf` finds it, by
  /// the stage its entry names) whole to stage 0 in name order, one at a
  /// time, over message slots named `channel`/NAME: stage 0 hashes each,
  /// hands it to `sink` and returns the ParametersDigest; other stages
  /// return "". Stage 0 asks a stage for each of its tensors in turn, so it
  /// holds its own stage and one other tensor at most, never the whole
  /// model. A sharded tensor's devices first send their shards to the
  /// first one, which assembles the global tensor; only the first device of
  /// each tensor-parallel group streams. Every rank of the pipeline and
  /// tensor-parallel groups calls it. For package.parameters, the digest is
  /// params_sha256.
  std::string streamTensors(const std::vector<ParameterInfo> &listed,
                            const TensorValues &valuesOf,
                            const std::string &channel,
                            const TensorSink &sink) {
    std::map<std::string, const ParameterInfo *> byName;
    for (const ParameterInfo &parameter : listed)
      byName[parameter.tensor.name] = &parameter;
    bool first = groups.tensorParallelRank == 0;
    ParametersDigest digest;
    std::vector<float> received, gathered;
    for (const TensorEntry &entry : entriesByName(listed)) {
      const std::string &name = entry.name;
      const ParameterInfo &parameter = *byName.at(name);
      int64_t count = numElements(entry.shape);
      size_t bytes = count * sizeof(float);
      int owner = static_cast<int>(rankOf(parameter.stage));
      const float *values = nullptr;
      if (owner == rank) {
        values = valuesOf(name);
        if (parameter.sharding) {
          gathered = gatherShardsToFirst(
              *parameter.sharding, tensorParallel,
              messageSlot(channel + "/shards/" + name), values);
          values = gathered.data();
        }
      }
      if (!first)
        continue;
      uint64_t request = messageSlot(channel + "/request/" + name);
      uint64_t slot = messageSlot(channel + "/" + name);
      if (rank != 0) {
        if (owner == rank) {
          // Rank 0 asks for the tensors in name order, whatever it
          // spends on the others': wait for it as long as it is alive.
          char ready = 0;
          pipeline.recv(0, request, &ready, sizeof(ready),
                        Patience::UntilSenderEnds);
          pipeline.send(0, slot, values, bytes);
        }
        continue;
      }
      if (owner != 0) {
        char ready = 1;
        pipeline.send(owner, request, &ready, sizeof(ready));
        received.resize(count);
        pipeline.recv(owner, slot, received.data(), bytes);
        values = received.data();
      }
      digest.add(name, values, count);
      sink(name, entry.shape, values);
    }
    return rank == 0 && first ? digest.finish() : "";
  }

  /// The parameters of the model (every stage's) whose gradients some
  /// stage computes: those the optimizer updates.
  std::vector<ParameterInfo> trainedParameters() const {
    std::set<std::string> computed;
    for (const StageInfo &other : package.stages)
      for (const StageFunctionInfo &function : other.functions)
        for (const TensorInfo &result : function.results)
          if (result.role == Role::Gradient)
            computed.insert(result.name);
    std::vector<ParameterInfo> listed;
    for (const ParameterInfo &parameter : package.parameters)
      if (parameter.tensor.role == Role::Parameter &&
          computed.count(parameter.tensor.name))
        listed.push_back(parameter);
    return listed;
  }

  /// Streams the gradient sums (fetched to the host) of the parameters
  /// whose gradients some stage computes to stage 0, which writes them to
  /// options.saveGradsPath.
  void saveGradients() {
    std::unique_ptr<ParameterFileWriter> saved;
    if (reports)
      saved = std::make_unique<ParameterFileWriter>(options.saveGradsPath);
    streamTensors(trainedParameters(), heldIn(gradients), "grads",
                  [&](const std::string &name, const Shape &shape,
                      const float *values) {
                    saved->add(name, shape, values);
                  });
    if (saved)
      saved->finish();
  }

  /// The model's parameter, frozen and constant tensors by name, with
  /// their global shapes.
  std::map<std::string, Shape> modelTensors() const {
    std::map<std::string, Shape> shapes;
    for (const ParameterInfo &parameter : package.parameters)
      shapes[parameter.tensor.name] = parameter.globalShape();
    return shapes;
  }

  /// The model's fingerprint as state.json records it: every parameter,
  /// frozen and constant tensor's name, role, dtype and global shape in
  /// name order, and the SHA-256 of that list's JSON.
  nlohmann::json modelFingerprint() const {
    std::map<std::string, const ParameterInfo *> byName;
    for (const ParameterInfo &parameter : package.parameters)
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

  /// The identity of the training data, as state.json records it.
  nlohmann::json dataIdentity() const {
    if (options.data.path.empty())
      return {{"kind", "synthetic"}};
    nlohmann::json identity = {
        {"kind", "tokens"},
        {"path", options.data.path},
        {"sequence_length", options.data.sequenceLength}};
    // Rank 0, a first stage, has the training data open.
    if (trainingData) {
      identity["tokens"] = trainingData->size();
      identity["token_width"] = trainingData->tokenWidth();
      if (const TokenDatasetHeader *header = trainingData->header())
        identity["checksum"] = header->checksum;
    }
    return identity;
  }

  /// With --resume, the newest checkpoint that rank 0 finds sound
  /// (newestUsableCheckpoint, warning on stderr about each newer one it
  /// skips; every rank then loads that one); none without --resume or when
  /// the directory holds none. When the directory holds only damaged ones,
  /// every rank throws rank 0's reasons.
  std::optional<CheckpointRef> findResumePoint() {
    const CheckpointOptions &checkpoint = options.checkpoint;
    if (!checkpoint.resume)
      return std::nullopt;
    constexpr int64_t kNone = -1, kRefused = -2;
    int64_t step = kNone;
    std::string refusal;
    if (world.rank() == 0) {
      try {
        if (std::optional<CheckpointRef> usable =
                newestUsableCheckpoint(checkpoint.directory, std::cerr))
          step = usable->step;
      } catch (const std::exception &e) {
        refusal = e.what();
        step = kRefused;
      }
    }
    world.broadcast(&step, sizeof(step), 0);
    if (step == kRefused) {
      // Every rank refuses saying why, whichever the launcher reports.
      uint64_t length = refusal.size();
      world.broadcast(&length, sizeof(length), 0);
      refusal.resize(length);
      world.broadcast(refusal.data(), length, 0);
      throw std::runtime_error(refusal);
    }
    if (step < 0) {
      if (reports)
        log << "resume: no complete checkpoint in '" << checkpoint.directory
            << "'; starting from scratch" << std::endl;
      return std::nullopt;
    }
    return CheckpointRef{step,
                         checkpoint.directory + "/" + checkpointName(step)};
  }

  /// Reads `resumed`'s state.json, checks that it is of this model (naming
  /// the first tensor that differs) and takes its step and cursor; returns
  /// its parameters file, checked to hold exactly the model's tensors.
  SafeTensorsFile openResumedParameters(const CheckpointRef &resumed) {
    CheckpointState state = readCheckpointState(resumed.path);
    checkSameTensors("the model fingerprint in " + resumed.path + "/" +
                         kCheckpointStateFile,
                     modelTensors(), state.tensors,
                     "a checkpoint of another model");
    firstStep = state.step;
    cursor = state.consumedSamples;
    if (reports) {
      if (state.seed != options.seed)
        log << "warning: the checkpoint was saved with --seed " << state.seed
            << ", this run has --seed " << options.seed
            << ": data order and dropout differ from the saved run's"
            << std::endl;
      if (state.data != dataIdentity())
        log << "warning: the checkpoint was saved training on "
            << state.data.dump() << ", this run trains on "
            << dataIdentity().dump() << std::endl;
    }
    SafeTensorsFile parameters =
        SafeTensorsFile::open(resumed.path + "/" + kParametersFile);
    checkSameTensors("checkpoint file '" + parameters.path() + "'",
                     modelTensors(), shapesOf(parameters),
                     "a checkpoint of another model");
    return parameters;
  }

  /// Loads this rank's optimizer state from `resumed` (its share, with
  /// --shard-optimizer), after checking that the file holds exactly the
  /// state this optimizer keeps for the model's trained parameters.
  void restoreOptimizer(const CheckpointRef &resumed) {
    SafeTensorsFile file =
        SafeTensorsFile::open(resumed.path + "/" + kOptimizerFile);
    std::string where = "checkpoint file '" + file.path() + "'";
    auto saved = file.metadata().find("optimizer");
    if (saved == file.metadata().end() ||
        saved->second != options.optimizer.kind)
      throw std::runtime_error(
          where + " holds the state of the optimizer '" +
          (saved == file.metadata().end() ? "" : saved->second) +
          "', this run uses --optimizer " + options.optimizer.kind);
    std::vector<std::string> buffers = optimizerBufferNames(options.optimizer);
    std::map<std::string, Shape> expected;
    std::map<std::string, ParameterInfo> trained;
    for (const ParameterInfo &parameter : trainedParameters()) {
      trained[parameter.tensor.name] = parameter;
      for (const std::string &buffer : buffers)
        expected[parameter.tensor.name + "/" + buffer] =
            parameter.globalShape();
    }
    checkSameTensors(where, expected, shapesOf(file),
                     "a checkpoint of another model, or of --momentum 0 "
                     "when this run has momentum (or the reverse)");
    std::map<std::string, ParameterState> states;
    for (const FlatParameter &held : flat->parameters()) {
      ParameterState &state = states[held.name];
      state.steps = optimizerStepCount(file, held.name);
      for (const std::string &buffer : buffers) {
        std::vector<float> &values = state.buffers[buffer];
        values.resize(held.count);
        readShard(file, trained.at(held.name), held.name + "/" + buffer,
                  values.data());
      }
    }
    update->loadState(states);
  }

  /// Saves the checkpoint after `step` steps (docs/checkpoints.md): the
  /// first replica of each stage streams its parameters and its (gathered)
  /// optimizer state, sharded tensors assembled whole, to rank 0, which writes the files into a temporary
  /// directory, state.json last, and renames it into place; the other
  /// ranks wait for it.
  void saveCheckpoint(int64_t step) {
    auto start = std::chrono::steady_clock::now();
    const CheckpointOptions &checkpoint = options.checkpoint;
    std::string temporary;
    if (reports)
      temporary = beginCheckpoint(checkpoint.directory, step);
    std::string channel = "checkpoint/" + std::to_string(step);
    bool streams = groups.dataParallelRank == 0;

    std::unique_ptr<SafeTensorsWriter> writer;
    // Per file, the digests state.json records (CheckpointVerification.h).
    nlohmann::json files = nlohmann::json::object();
    std::string writing;
    auto writeTo = [&](const std::string &file,
                       const std::vector<ParameterInfo> &listed,
                       const std::map<std::string, std::string> &metadata) {
      if (!reports)
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
      streamTensors(package.parameters, heldIn(parameters),
                    channel + "/params", write);
    finishFile();

    // Each trained parameter's state, whole on every replica; its step
    // count summed over the pipeline (each stage fills its own; a tied
    // parameter's holders share one, which its owner fills).
    std::map<std::string, ParameterState> states =
        update->gatherState();
    std::vector<ParameterInfo> trained = trainedParameters();
    std::vector<double> steps(trained.size(), 0.0);
    for (size_t i = 0; i < trained.size(); ++i)
      if (auto it = states.find(trained[i].tensor.name);
          it != states.end() && holds(trained[i].stage))
        steps[i] = static_cast<double>(it->second.steps);
    pipeline.allReduceSum(steps);
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
      for (const std::string &buffer :
           optimizerBufferNames(options.optimizer)) {
        listed.push_back(trained[i]);
        listed.back().tensor.name = name + "/" + buffer;
      }
    }
    writeTo(kOptimizerFile, listed, metadata);
    if (streams)
      streamTensors(
          listed,
          [&](const std::string &stateName) {
            size_t slash = stateName.rfind('/');
            return states.at(stateName.substr(0, slash))
                .buffers.at(stateName.substr(slash + 1))
                .data();
          },
          channel + "/optimizer", write);
    finishFile();

    if (reports) {
      writeFileSynced(temporary + "/" + kCheckpointStateFile,
                      checkpointState(step, files).dump(2) + "\n");
      std::string path =
          commitCheckpoint(checkpoint.directory, temporary, step);
      if (checkpoint.keepLast > 0)
        keepNewestCheckpoints(checkpoint.directory, checkpoint.keepLast);
      log << "checkpoint after step " << step << " saved to " << path << " ("
          << std::setprecision(3)
          << std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
                 .count()
          << " s)" << std::endl;
    }
    // Every rank continues once the checkpoint is in place.
    char saved = 1;
    world.broadcast(&saved, sizeof(saved), 0);
  }

  /// state.json of the checkpoint after `step` steps, whose files' digests
  /// are `files` (fileRecord per file name).
  nlohmann::json checkpointState(int64_t step,
                                 const nlohmann::json &files) const {
    const OptimizerOptions &optimizer = options.optimizer;
    nlohmann::json meshOrder = nlohmann::json::array();
    for (const MeshAxis &axis : groups.mesh.axes())
      meshOrder.push_back(axis.name);
    return {
        {"format_version", kCheckpointFormatVersion},
        {"step", step},
        {"consumed_samples", cursor},
        {"seed", options.seed},
        {"global_batch", layout.globalBatch()},
        {"data", dataIdentity()},
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
          {"stages", package.numStages},
          {"data_parallel", layout.dataParallel},
          {"tensor_parallel", groups.tensorParallelSize},
          {"microbatches", options.microbatches},
          {"microbatch_size", package.microbatchSize},
          {"zero", options.zeroLevel}}},
        {"files", files}};
  }

  /// Gathers every pipeline rank's profile on rank 0, which writes them with
  /// the run's step seconds to options.profilePath.
  void writeProfile(double stepSeconds) {
    nlohmann::json ops = nlohmann::json::object();
    double opSeconds = 0;
    for (const auto &[kind, totals] : profile->byKind()) {
      ops[kind] = {{"calls", totals.calls}, {"seconds", totals.seconds}};
      opSeconds += totals.seconds;
    }
    std::vector<std::string> all = pipeline.allGatherText(
        nlohmann::json{{"stage", rank},
                       {"stages", myStages},
                       {"op_seconds", opSeconds},
                       {"ops", ops},
                       {"dp_reduce_seconds", reducer->reducingSeconds()},
                       {"dp_reduce_wait_seconds", reduceWaitSeconds}}
            .dump());
    if (!reports)
      return;
    nlohmann::json stages = nlohmann::json::array();
    for (const std::string &text : all)
      stages.push_back(nlohmann::json::parse(text));
    writeOutputFile(options.profilePath,
                    nlohmann::json{{"steps", options.steps},
                                   {"step_seconds", stepSeconds},
                                   {"stages", stages}}
                            .dump(2) +
                        "\n",
                    "--profile");
  }

  Package &package;
  Communicator &world;
  RankGroups &groups;
  /// --weights' files and the parameters they give (model name -> file
  /// name); none without --weights.
  std::optional<PretrainedWeights> weights;
  WeightsBinding weightsBinding;
  /// This rank's pipeline group; its rank is the stage.
  Communicator &pipeline;
  /// The replicas of this rank's stage; its rank is the dp coordinate.
  Communicator &dataParallel;
  /// The devices sharing this rank's sharded parameters; its rank is the
  /// tensor-parallel coordinate.
  Communicator &tensorParallel;
  Backend &backend;
  const TrainerOptions &options;
  std::ostream &log;
  /// This rank's coordinate on the pipeline axis.
  int64_t rank;
  /// Whether this rank prints and writes the metrics (job rank 0).
  bool reports;
  /// How a step's global batch splits over microbatches and replicas.
  BatchLayout layout;
  /// The action tables of every pipeline rank, proven deadlock-free.
  PipelinePlan plan;
  /// Moves the stage functions' messages between stages.
  StageRouter router;
  /// The stages this rank runs, increasing.
  std::vector<int64_t> myStages;
  /// Per (stage, saved value), the index of the last function of the stage
  /// that takes it.
  std::map<std::pair<int64_t, std::string>, size_t> lastUse;
  /// The arena of each stage function with a memory plan, by symbol (none
  /// with options.memoryPlan false or a backend that does not serve them).
  std::map<std::string, std::unique_ptr<MemoryArena>> arenas;
  /// Tensors the stage functions allocated on their own (not from an
  /// arena): so far, and in the last training step's schedule.
  int64_t heapAllocations = 0;
  int64_t heapAllocationsPerStep = 0;
  /// The --metrics file (rank 0), written a line at a time, so that a
  /// crash later keeps the steps so far, and failing at once on a failed
  /// write (a full disk).
  std::unique_ptr<OutputFile> metrics;
  /// The training and eval data this rank reads (null where it reads
  /// none), and the microbatches drawn from them.
  std::unique_ptr<TokenDataset> trainingData, evalData;
  std::unique_ptr<MicrobatchSource> source, evalSource;
  /// Eval batches per evaluation (0: no evaluation), and evaluations so
  /// far.
  int64_t evalBatches = 0;
  int64_t evalRound = 0;
  /// Seconds per op kind of this stage's functions; null without
  /// --profile.
  std::unique_ptr<OpProfile> profile =
      options.profilePath.empty()
          ? nullptr
          : std::make_unique<OpProfile>([this] { backend.synchronize(); });
  /// This stage's trained parameters and their gradient sums, each in one
  /// buffer, and their update.
  std::unique_ptr<FlatParameters> flat;
  std::unique_ptr<ParameterUpdate> update;
  /// ZeRO-3: the data-parallel ranks again, for the parameter gathers that
  /// run ahead of the compute on a thread of their own; null below.
  std::unique_ptr<Communicator> valueGathers;
  /// Host parameters and gradient sums (those of trained parameters views
  /// of `flat`), and where the stages see them.
  std::map<std::string, TensorPtr> parameters, gradients;
  std::map<std::string, Placed> placedParameters;
  /// A sum that a step accumulates over its microbatches: a parameter's
  /// gradient, or a part of it (see ParameterInfo::gradientPartStages).
  struct GradientSum {
    /// The host values (the gradient's for one part, else `owned`) and
    /// where the stage functions' results add up.
    pp_tensor *host = nullptr;
    Placed placed;
    TensorPtr owned;
    /// Its place in the reducer's list, and the results a step adds to it
    /// and, this step, those still to come.
    size_t reductionIndex = 0;
    int64_t perStep = 0, left = 0;
  };
  /// The parts of gradients this rank's stages compute, and their host
  /// values.
  std::map<GradientPartKey, GradientSum> sums;
  std::map<GradientPartKey, pp_tensor *> localParts;
  /// The parameters whose gradients some stage's backward returns.
  std::set<std::string> withGradient;
  /// Sums the gradients over the data-parallel replicas during the backward.
  std::unique_ptr<GradientReducer> reducer;
  /// Seconds the steps waited for the reduction after their backward.
  double reduceWaitSeconds = 0;
  /// Adds up the gradients that come in parts or from several holders.
  std::unique_ptr<TiedParameters> tied;
  /// This rank's spans with --trace (else null), and the step they belong
  /// to.
  std::unique_ptr<TraceRecorder> trace =
      options.tracePath.empty() ? nullptr : std::make_unique<TraceRecorder>();
  int64_t traceStep = 0;
  /// Set while evaluate() runs: the trace holds training steps only.
  bool evaluating = false;
  /// A forward-only run's inputs (Package::inputs order), or null.
  const std::vector<pp_tensor *> *givenInputs;
  /// The step the training loop starts at, and the consumed-samples cursor
  /// of the next step (a resumed checkpoint's, else 0).
  int64_t firstStep = 0;
  int64_t cursor = 0;
};

} // namespace

namespace {

/// The stage functions' collectives over the tensor-parallel `group`, as
/// `choice` says; see TensorCollectives.
std::unique_ptr<CollectiveGroup>
connectTensorCollectives(Communicator &group, TensorCollectives choice) {
  if (group.worldSize() > 1 && choice != TensorCollectives::Tcp) {
    std::string whyNot;
    if (std::unique_ptr<SharedMemoryCollectives> shared =
            SharedMemoryCollectives::connect(group, "tp", whyNot))
      return shared;
    if (choice == TensorCollectives::SharedMemory)
      throw std::runtime_error(
          "--tp-collectives shm: " + whyNot +
          "; use --tp-collectives tcp (or auto, which falls back to TCP) "
          "for tensor-parallel groups whose ranks cannot share memory");
  }
  return std::make_unique<CommunicatorCollectives>(group);
}

} // namespace

std::optional<TensorCollectives>
parseTensorCollectives(const std::string &name) {
  if (name == "auto")
    return TensorCollectives::Auto;
  if (name == "shm")
    return TensorCollectives::SharedMemory;
  if (name == "tcp" || name == "gloo")
    return TensorCollectives::Tcp;
  return std::nullopt;
}

const char *tensorCollectivesName(TensorCollectives collectives) {
  switch (collectives) {
  case TensorCollectives::Auto:
    return "auto";
  case TensorCollectives::SharedMemory:
    return "shm";
  case TensorCollectives::Tcp:
    return "tcp";
  }
  return "unknown";
}

RankGroups connectRankGroups(const Package &package, Communicator &world,
                             int64_t dataParallel,
                             const std::vector<std::string> &meshOrder,
                             TensorCollectives collectives) {
  RankGroups groups;
  groups.mesh = dataParallelMesh(package.mesh, dataParallel, meshOrder);
  const DeviceMesh &mesh = groups.mesh;
  if (world.worldSize() != mesh.deviceCount())
    throw std::runtime_error(
        "the job's mesh " + mesh.describe() + " has device count " +
        std::to_string(mesh.deviceCount()) + ", but the job's WORLD_SIZE is " +
        std::to_string(world.worldSize()) +
        "; start one rank per device (--nproc " +
        std::to_string(mesh.deviceCount()) + ")");
  std::vector<std::string> tensorAxes;
  for (const MeshAxis &axis : mesh.axes()) {
    if (axis.kind == AxisKind::Tensor)
      tensorAxes.push_back(axis.name);
    if (axis.kind == AxisKind::Context && axis.size > 1)
      throw std::runtime_error(
          "the package's mesh has a context axis '" + axis.name +
          "' of size " + std::to_string(axis.size) +
          "; pp-run trains pipeline, data- and tensor-parallel meshes only "
          "so far (context parallelism is not supported yet)");
  }
  DataCoordinates at = dataCoordinates(mesh, world.rank());
  groups.stage = at.stage;
  groups.dataParallelRank = at.dataRank;
  groups.dataParallelSize = at.dataParallel;
  std::vector<std::string> pipelineAxes;
  if (const MeshAxis *axis = mesh.pipelineAxis())
    pipelineAxes.push_back(axis->name);
  groups.pipeline =
      world.split("pipeline", mesh.group(world.rank(), pipelineAxes));
  groups.dataParallel = world.split("dp", mesh.group(world.rank(), {"dp"}));
  groups.tensorParallel =
      world.split("tp", mesh.group(world.rank(), tensorAxes));
  groups.tensorParallelRank = groups.tensorParallel->rank();
  groups.tensorParallelSize = groups.tensorParallel->worldSize();
  groups.collectives =
      connectTensorCollectives(*groups.tensorParallel, collectives);
  return groups;
}

void train(Package &package, Communicator &world, RankGroups &groups,
           Backend &backend, const TrainerOptions &options, std::ostream &log) {
  checkTrainable(package);
  if (groups.pipeline->worldSize() != package.pipelineRanks())
    throw std::runtime_error("the pipeline group has " +
                             std::to_string(groups.pipeline->worldSize()) +
                             " ranks but the package runs on " +
                             std::to_string(package.pipelineRanks()));
  StageTrainer(package, world, groups, backend, options, log).run();
}

std::vector<std::string> checkTrainingData(const Package &package,
                                           const DataOptions &data) {
  std::vector<std::string> warnings;
  if (data.path.empty())
    return warnings;
  if (!data.evalPath.empty())
    checkEvaluable(package);
  TokenDataConfig config =
      tokenDataConfig(package, data.inputName, data.sequenceLength,
                        data.padSequence);
  for (const std::string &path : {data.path, data.evalPath}) {
    if (path.empty())
      continue;
    std::unique_ptr<TokenDataset> dataset =
        TokenDataset::open(path, data.tokenWidth);
    checkTokenDataset(config, *dataset);
    if (dataset->looksLikeWiderTokens())
      warnings.push_back("every second token of '" + path +
                         "' is 0, as when uint32 tokens are read as uint16; "
                         "if the file holds uint32 tokens, pass "
                         "--token-width 4");
  }
  return warnings;
}

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

void checkTrainable(const Package &package) {
  if (package.forwardOnly())
    throw std::runtime_error("the package '" + package.directory +
                             "' is forward-only (compiled with infer=true): "
                             "it has no loss to train; run it with --infer, "
                             "or compile the model with a loss");
}

void checkForwardOnly(const Package &package) {
  if (!package.forwardOnly())
    throw std::runtime_error(
        "the package '" + package.directory +
        "' is compiled for training (it has a " + package.lossKind +
        " loss); compile the model for forward-only runs with "
        "--pp-compile=\"infer=true ...\" or run the model file with --infer");
}

std::vector<TensorPtr> infer(Package &package, Communicator &world,
                             RankGroups &groups, Backend &backend,
                             const std::vector<pp_tensor *> &inputs,
                             int64_t microbatches,
                             const WeightsOptions &weights) {
  checkForwardOnly(package);
  if (inputs.size() != package.inputs.size())
    throw std::runtime_error("a forward-only run got " +
                             std::to_string(inputs.size()) +
                             " inputs, the package takes " +
                             std::to_string(package.inputs.size()));
  TrainerOptions options;
  options.schedule = {ScheduleKind::GPipe, ""};
  options.microbatches = microbatches;
  options.weights = weights;
  if (groups.dataParallelSize != 1)
    throw std::runtime_error("a forward-only run (--infer) runs one "
                             "pipeline; drop --dp");
  std::ostringstream quiet;
  return StageTrainer(package, world, groups, backend, options, quiet,
                      &inputs)
      .runForward();
}

} // namespace pp::runtime
