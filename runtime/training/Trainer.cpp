//===- Trainer.cpp - one rank's training loop -----------------------------===//

#include "runtime/training/Trainer.h"

#include "runtime/kernels/Frame.h"
#include "runtime/kernels/OpProfile.h"
#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/data/SyntheticData.h"
#include "runtime/data/TokenBatches.h"
#include "runtime/training/GradientReduction.h"
#include "runtime/training/ParameterUpdate.h"
#include "runtime/training/TiedParameters.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
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

float *floatsOf(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

/// The job of one rank: its stage's parameters, gradients and data.
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
        backend(backend), options(options), log(log), stage(groups.stage),
        reports(world.rank() == 0),
        layout{package.microbatchSize, options.microbatches,
               groups.dataParallelSize},
        functions(package.stages[stage].functions),
        update(options.optimizer, dataParallel, options.shardOptimizer),
        givenInputs(givenInputs) {
    // Each saved value lives until the last function of the stage that
    // takes it (Package::load checked that an earlier one returns it).
    for (size_t f = 0; f < functions.size(); ++f)
      for (const TensorInfo &arg : functions[f].args)
        if (arg.role == Role::Saved)
          lastUse[arg.name] = f;
  }

  /// Runs each microbatch of the given inputs through the forward
  /// functions; returns on stage 0 the model's outputs (Package::outputs
  /// order), the microbatches' results concatenated along dimension 0, and
  /// nothing on other stages.
  std::vector<TensorPtr> runForward() {
    checkParameterDtypes();
    initializeParameters();
    checkSchedule();
    std::vector<Placed> noLabels;
    MicrobatchData data{{0, 0, nullptr, /*training=*/false}, noLabels, nullptr,
                        0.0, {}, {}};
    runSchedule(buildSchedule(options.schedule, package.numStages, stage,
                              options.microbatches),
                data);
    return gatherOutputs(data.outputs);
  }

  void run() {
    checkDtypes();
    openData();
    initializeParameters();
    tied = std::make_unique<TiedParameters>(package, pipeline, stage);
    checkSchedule();
    if (reports) {
      printMesh();
      int64_t p = package.numStages, m = options.microbatches;
      log << "pipeline: " << p << (p == 1 ? " stage, " : " stages, ")
          << (options.schedule == ScheduleKind::GPipe ? "gpipe" : "1f1b")
          << ", " << m << " microbatches of " << package.microbatchSize
          << " samples x dp " << layout.dataParallel << " = global batch "
          << layout.globalBatch() << " samples per step; ideal bubble "
          << std::setprecision(3) << 100.0 * (p - 1) / (m + p - 1) << "%"
          << std::endl;
    }
    // Each line is flushed, so that a crash later keeps the steps so far,
    // and checked, so that a failed write (a full disk) stops the run.
    if (reports && !options.metricsPath.empty()) {
      metrics.open(options.metricsPath);
      checkMetrics();
    }
    if (evalBatches > 0)
      evaluate(0);
    double stepSeconds = 0;
    for (int64_t step = 0; step < options.steps; ++step) {
      StepMetrics result = trainStep(step);
      stepSeconds += result.seconds;
      if (reports) {
        log << "step " << result.step << "  loss " << std::setprecision(8)
            << result.loss << "  grad_norm " << result.gradNorm << "  "
            << std::setprecision(4) << result.samplesPerSecond
            << " samples/s  " << result.tokensPerSecond << " tokens/s"
            << std::endl;
        writeMetrics({{"step", result.step},
                      {"loss", result.loss},
                      {"grad_norm", result.gradNorm},
                      {"samples_per_s", result.samplesPerSecond},
                      {"tokens_per_s", result.tokensPerSecond}});
      }
      if (evalBatches > 0 && ((options.data.evalEvery > 0 &&
                          result.step % options.data.evalEvery == 0) ||
                         result.step == options.steps))
        evaluate(result.step);
    }
    reportDataReads();
    tied->checkHoldersAgree(parameters);
    // Data-parallel replicas hold the same parameters: the first one
    // hashes and saves them.
    std::unique_ptr<ParameterFileWriter> saved;
    if (reports && !options.saveParamsPath.empty())
      saved = std::make_unique<ParameterFileWriter>(options.saveParamsPath);
    std::string digest =
        groups.dataParallelRank == 0 ? streamParameters(saved.get()) : "";
    if (profile && groups.dataParallelRank == 0)
      writeProfile(stepSeconds);
    if (reports) {
      log << "params_sha256 " << digest << std::endl;
      writeMetrics({{"params_sha256", digest}});
      if (metrics.is_open()) {
        metrics.close();
        checkMetrics();
      }
      if (saved)
        saved->finish();
    }
  }

private:
  bool isLastStage() const { return stage == package.numStages - 1; }

  void checkMetrics() {
    if (!metrics)
      throw std::runtime_error("cannot write the metrics file '" +
                               options.metricsPath +
                               "': " + std::strerror(errno));
  }

  /// Appends `line` to the metrics file, if there is one.
  void writeMetrics(const nlohmann::json &line) {
    if (!metrics.is_open())
      return;
    metrics << line.dump() << std::endl;
    checkMetrics();
  }

  /// The run's first line: the mesh and every rank's coordinates on it.
  void printMesh() {
    const DeviceMesh &mesh = groups.mesh;
    log << "mesh " << mesh.describe() << " (order ";
    for (size_t i = 0; i < mesh.axes().size(); ++i)
      log << (i ? "," : "") << mesh.axes()[i].name;
    log << "):";
    for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank) {
      std::vector<int64_t> at = mesh.coordinates(rank);
      log << " " << rank << "=(";
      for (size_t i = 0; i < at.size(); ++i)
        log << (i ? "," : "") << mesh.axes()[i].name << at[i];
      log << ")";
    }
    log << std::endl;
  }

  /// Opens the data this rank reads: a first stage the inputs, a last
  /// stage the labels, a middle stage nothing at all.
  void openData() {
    DataNeeds needs = dataNeeds(stage, package.numStages);
    const DataOptions &data = options.data;
    if (data.path.empty()) {
      source = std::make_unique<SyntheticMicrobatches>(
          package, options.seed, layout, groups.dataParallelRank);
      return;
    }
    TokenDataConfig config =
        tokenDataConfig(package, data.inputName, data.sequenceLength);
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

  void initializeParameters() {
    // A tied parameter has a gradient when any holder's backward returns
    // part of it.
    for (const StageInfo &any : package.stages)
      for (const StageFunctionInfo &function : any.functions)
        for (const TensorInfo &result : function.results)
          if (result.role == Role::Gradient)
            withGradient.insert(result.name);
    for (const ParameterInfo &parameter : package.parameters) {
      if (!parameter.heldBy(stage))
        continue;
      TensorPtr tensor = makeTensor(parameter.tensor);
      if (parameter.fromFile) {
        package.readParameter(parameter, tensor.get());
      } else {
        // Seeded by the parameter's name, never by rank or stage, so that
        // every partition starts from the same model.
        fillSynthetic(tensor.get(), 0, "init/" + parameter.tensor.name, 0, 0);
        const Shape &shape = parameter.tensor.shape;
        float bound =
            1.0f / std::sqrt(static_cast<float>(
                       shape.empty() ? 1 : std::max<int64_t>(1, shape.back())));
        for (int64_t i = 0, n = pp_tensor_numel(tensor.get()); i < n; ++i)
          floatsOf(tensor.get())[i] *= bound;
      }
      const std::string &name = parameter.tensor.name;
      Placed &placed = placedParameters[name];
      placed.tensor = backend.place(tensor.get(), placed.copy);
      parameters[name] = std::move(tensor);
      // Frozen and constant tensors get no gradient and no updates, nor
      // does anything in a forward-only run.
      if (parameter.tensor.role != Role::Parameter || givenInputs)
        continue;
      TensorPtr gradient = makeTensor(parameter.tensor);
      Placed &sum = placedGradients[name];
      sum.tensor = backend.place(gradient.get(), sum.copy);
      gradients[name] = std::move(gradient);
    }
  }

  /// Proves, before the first step, that the schedule (and the eval
  /// schedule, when evaluating) cannot deadlock on this package's messages.
  void checkSchedule() {
    std::string error =
        checkPackageSchedule(package, options.schedule, options.microbatches);
    if (error.empty() && evalBatches > 0)
      error = checkEvalSchedule(package, options.microbatches);
    if (!error.empty())
      throw std::runtime_error(error);
  }

  /// A batch the schedule runs: a training step or an eval batch (its
  /// index), where its samples come from, and whether dropout drops.
  struct BatchRef {
    int64_t index;
    /// Tells its messages apart from every other batch's.
    int64_t messageStep;
    MicrobatchSource *source;
    bool training;
  };

  /// Runs one stage function over `args` for microbatch `microbatch` of
  /// `batch`; returns its results.
  std::vector<TensorPtr> call(const StageFunctionInfo &function,
                              std::vector<pp_tensor *> args,
                              const BatchRef &batch, int64_t microbatch) {
    pp_frame frame;
    frame.profile = profile.get();
    frame.args = std::move(args);
    backend.configure(frame, batch.messageStep, microbatch);
    // Dropout drops in training calls only.
    frame.position = {
        options.seed, batch.index,
        firstPosition(layout, batch.index, groups.dataParallelRank, microbatch),
        /*training=*/batch.training};
    function.entry(&frame);
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
      throw std::runtime_error("stage " + std::to_string(stage) +
                               " takes the input '" + info.name +
                               "', which the package does not list");
    TensorPtr tensor = makeTensor(info);
    if (!givenInputs) {
      // The package's entry knows the rows of the table it indexes.
      batch.source->fillInput(*it, batch.index, microbatch, tensor.get());
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
  /// microbatch, the saved values later phases take by name.
  struct MicrobatchData {
    BatchRef batch;
    const std::vector<Placed> &labels;
    pp_tensor *lossScale;
    double lossSum;
    std::map<int64_t, std::map<std::string, TensorPtr>> saved;
    /// Forward-only: per output of this stage, its microbatches in order.
    std::map<std::string, std::vector<TensorPtr>> outputs;
  };

  /// Runs functions[f] on microbatch `mb`: feeds its arguments by role,
  /// keeps its saved results for the functions after it and accumulates
  /// its gradients.
  void runFunction(size_t f, int64_t mb, MicrobatchData &data) {
    const StageFunctionInfo &function = functions[f];
    std::map<std::string, TensorPtr> &saved = data.saved[mb];
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
    std::vector<TensorPtr> results =
        call(function, std::move(args), data.batch, mb);
    for (const TensorInfo &arg : function.args)
      if (arg.role == Role::Saved && lastUse.at(arg.name) == f)
        saved.erase(arg.name);
    for (size_t i = 0; i < results.size(); ++i) {
      const TensorInfo &info = function.results[i];
      if (info.role == Role::Loss) {
        TensorPtr hostLoss = makeTensor({"loss", Role::None, PP_DTYPE_F32, {}});
        backend.fetch(results[i].get(), hostLoss.get());
        data.lossSum += floatsOf(hostLoss.get())[0];
      } else if (info.role == Role::Saved && lastUse.count(info.name)) {
        saved[info.name] = std::move(results[i]);
      } else if (info.role == Role::Output) {
        // The schedule runs a stage's forwards in microbatch order.
        TensorPtr host = makeTensor(info);
        backend.fetch(results[i].get(), host.get());
        data.outputs[info.name].push_back(std::move(host));
      } else if (info.role == Role::Gradient) {
        // Microbatches arrive in order, so the sum's order is fixed.
        backend.accumulate(placedGradients.at(info.name).tensor,
                           results[i].get());
      }
    }
    if (saved.empty())
      data.saved.erase(mb);
  }

  /// Runs this stage's functions in the order of `actions` over the
  /// batch's microbatches and waits for its messages.
  void runSchedule(const std::vector<Action> &actions, MicrobatchData &data) {
    for (const Action &action : actions)
      for (size_t f = 0; f < functions.size(); ++f)
        if (actionRuns(action.phase, functions[f].phase))
          runFunction(f, action.microbatch, data);
    backend.finishStep();
  }

  /// The labels of `batch`'s microbatches on the last stage (none
  /// elsewhere), placed for the stage functions in `placed`, and the count
  /// of loss terms they hold (elements for mse, tokens that are not
  /// ignore_index for cross_entropy).
  double drawLabels(const BatchRef &batch, std::vector<TensorPtr> &labels,
                    std::vector<Placed> &placed) {
    placed.resize(options.microbatches);
    if (!isLastStage())
      return 0;
    double count = 0;
    for (int64_t mb = 0; mb < options.microbatches; ++mb) {
      labels.push_back(makeTensor(package.labels));
      pp_tensor *label = labels.back().get();
      batch.source->fillLabels(batch.index, mb, label);
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
    if (isLastStage())
      dataParallel.allReduceSum(values);
    pipeline.broadcast(values.data(), values.size() * sizeof(double),
                       static_cast<int>(package.numStages - 1));
  }

  StepMetrics trainStep(int64_t step) {
    auto start = std::chrono::steady_clock::now();
    for (auto &[name, sum] : placedGradients)
      backend.zero(sum.tensor);

    // The last stages draw every label of the step first: the loss is
    // divided by the step's element (mse) or token (cross_entropy) count
    // over all data-parallel replicas.
    BatchRef batch{step, step, source.get(), /*training=*/true};
    std::vector<TensorPtr> labels;
    std::vector<Placed> placedLabels;
    double localCount = drawLabels(batch, labels, placedLabels);
    double count = localCount;
    if (isLastStage()) {
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
    runSchedule(buildSchedule(options.schedule, package.numStages, stage,
                              options.microbatches),
                data);

    // Each stage sums its gradients over its data-parallel replicas as
    // soon as its own backward is done.
    std::vector<pp_tensor *> hostGradients;
    for (const ParameterInfo &parameter : package.parameters) {
      auto it = gradients.find(parameter.tensor.name);
      if (it == gradients.end())
        continue;
      backend.fetch(placedGradients.at(it->first).tensor, it->second.get());
      hostGradients.push_back(it->second.get());
    }
    allReduceGradients(dataParallel, hostGradients);
    tied->sumGradients(gradients);

    // Global gradient norm: one sum of squares per parameter (in double),
    // summed in manifest order over the pipeline (each parameter counted
    // once: replicas hold the same sums), so the norm is the same bits on
    // every rank and for every stage count; a tied parameter by its owner).
    std::vector<double> squares(package.parameters.size(), 0.0);
    for (size_t i = 0; i < package.parameters.size(); ++i) {
      auto it = gradients.find(package.parameters[i].tensor.name);
      if (it == gradients.end() || package.parameters[i].stage != stage)
        continue;
      const float *g = floatsOf(it->second.get());
      for (int64_t j = 0, n = pp_tensor_numel(it->second.get()); j < n; ++j)
        squares[i] += static_cast<double>(g[j]) * g[j];
    }
    pipeline.allReduceSum(squares);
    double total = 0;
    for (double square : squares)
      total += square;
    double gradNorm = std::sqrt(total);
    if (step == 0 && !options.saveGradsPath.empty() &&
        groups.dataParallelRank == 0)
      saveGradients();
    float clip = 1.0f;
    if (options.maxGradNorm > 0)
      clip = static_cast<float>(
          std::min(1.0, options.maxGradNorm / (gradNorm + 1e-6)));

    // A parameter the loss does not depend on has no gradient (PyTorch's
    // None) and keeps its value.
    std::vector<ParameterSlot> trained;
    for (auto &[name, parameter] : parameters)
      if (withGradient.count(name))
        trained.push_back({name, floatsOf(parameter.get()),
                           floatsOf(gradients.at(name).get()),
                           pp_tensor_numel(parameter.get())});
    update.apply(trained, clip);
    for (const ParameterSlot &slot : trained)
      backend.refresh(placedParameters.at(slot.name).tensor,
                      parameters.at(slot.name).get());

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
    return {step + 1, count > 0 ? report[0] / count : 0.0, gradNorm, seconds,
            seconds > 0 ? samples / seconds : 0.0,
            seconds > 0 ? count / seconds : 0.0};
  }

  /// Runs the eval schedule over every eval batch with dropout off and
  /// reports the loss over all eval tokens (padding masked out) and its
  /// perplexity, after `step` training steps. The eval functions keep no
  /// activations for a backward and no gradients.
  void evaluate(int64_t step) {
    auto start = std::chrono::steady_clock::now();
    std::vector<double> sums = {0.0, 0.0};
    for (int64_t e = 0; e < evalBatches; ++e) {
      // Eval batches talk on their own message steps, below every
      // training step's.
      BatchRef batch{e, -1 - (evalRound * evalBatches + e), evalSource.get(),
                     /*training=*/false};
      std::vector<TensorPtr> labels;
      std::vector<Placed> placedLabels;
      sums[1] += drawLabels(batch, labels, placedLabels);
      // The eval functions return a microbatch's summed loss and take no
      // loss scale; the mean divides once, by every replica's tokens.
      MicrobatchData data{batch, placedLabels, nullptr, 0.0, {}, {}};
      runSchedule(buildEvalSchedule(options.microbatches), data);
      sums[0] += data.lossSum;
    }
    ++evalRound;
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

  /// Writes (rank 0) how many tokens or elements each rank read from the
  /// data: a first stage its inputs, a last stage its labels, a middle
  /// stage none.
  void reportDataReads() {
    int64_t ranks = world.worldSize();
    // Per rank: elements read, bytes of optimizer state.
    std::vector<double> reads(2 * ranks, 0.0);
    reads[2 * world.rank()] =
        static_cast<double>((source ? source->elementsRead() : 0) +
                            (evalSource ? evalSource->elementsRead() : 0));
    reads[2 * world.rank() + 1] = static_cast<double>(update.stateBytes());
    world.allReduceSum(reads);
    if (!reports)
      return;
    nlohmann::json perRank = nlohmann::json::array();
    for (int64_t rank = 0; rank < ranks; ++rank) {
      nlohmann::json entry = {
          {"rank", rank},
          {"elements_read", static_cast<int64_t>(reads[2 * rank])},
          {"optimizer_state_bytes", static_cast<int64_t>(reads[2 * rank + 1])}};
      std::vector<int64_t> at = groups.mesh.coordinates(rank);
      for (size_t i = 0; i < at.size(); ++i)
        entry[groups.mesh.axes()[i].name] = at[i];
      perRank.push_back(entry);
    }
    writeMetrics({{"ranks", perRank}});
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
      if (stage == output.stage) {
        std::vector<TensorPtr> &parts = computed.at(info.name);
        TensorPtr tensor = makeTensor(whole);
        char *at = static_cast<char *>(pp_tensor_data(tensor.get()));
        for (TensorPtr &part : parts) {
          std::memcpy(at, pp_tensor_data(part.get()),
                      pp_tensor_nbytes(part.get()));
          at += pp_tensor_nbytes(part.get());
        }
        if (stage == 0)
          gathered.push_back(std::move(tensor));
        else
          pipeline.send(0, slot, pp_tensor_data(tensor.get()),
                        pp_tensor_nbytes(tensor.get()));
      } else if (stage == 0) {
        TensorPtr tensor = makeTensor(whole);
        pipeline.recv(static_cast<int>(output.stage), slot,
                      pp_tensor_data(tensor.get()),
                      pp_tensor_nbytes(tensor.get()));
        gathered.push_back(std::move(tensor));
      }
    }
    return gathered;
  }

  /// Streams every parameter, frozen and constant tensor of the model to
  /// stage 0 in name order, one at a time: stage 0 hashes each (and writes
  /// it to `saved`, if given) and returns the digest; other stages return
  /// "". Stage 0 asks a stage for each of its tensors in turn, so it holds
  /// its own stage and one other tensor at most, never the whole model.
  std::string streamParameters(ParameterFileWriter *saved) {
    return streamTensors(package.parameters, parameters, "params", saved);
  }

  /// streamParameters for `listed` (parameters of the package, each held
  /// in `held` by the stage that owns it), over message slots named
  /// `channel`/NAME.
  std::string streamTensors(const std::vector<ParameterInfo> &listed,
                            const std::map<std::string, TensorPtr> &held,
                            const std::string &channel,
                            ParameterFileWriter *saved) {
    std::vector<const ParameterInfo *> byName;
    for (const ParameterInfo &parameter : listed)
      byName.push_back(&parameter);
    std::sort(byName.begin(), byName.end(), [](auto *a, auto *b) {
      return a->tensor.name < b->tensor.name;
    });
    ParametersDigest digest;
    std::vector<float> received;
    for (const ParameterInfo *parameter : byName) {
      const std::string &name = parameter->tensor.name;
      int64_t count = numElements(parameter->tensor.shape);
      size_t bytes = count * sizeof(float);
      int owner = static_cast<int>(parameter->stage);
      uint64_t request = messageSlot(channel + "/request/" + name);
      uint64_t slot = messageSlot(channel + "/" + name);
      if (stage != 0) {
        if (owner == stage) {
          // Rank 0 asks for the parameters in name order, whatever it
          // spends on the others': wait for it as long as it is alive.
          char ready = 0;
          pipeline.recv(0, request, &ready, sizeof(ready),
                        Patience::UntilSenderEnds);
          pipeline.send(0, slot, pp_tensor_data(held.at(name).get()), bytes);
        }
        continue;
      }
      const float *values = nullptr;
      if (owner == 0) {
        values = floatsOf(held.at(name).get());
      } else {
        char ready = 1;
        pipeline.send(owner, request, &ready, sizeof(ready));
        received.resize(count);
        pipeline.recv(owner, slot, received.data(), bytes);
        values = received.data();
      }
      digest.add(name, values, count);
      if (saved)
        saved->add(name, parameter->tensor.shape, values);
    }
    return stage == 0 ? digest.finish() : "";
  }

  /// Streams the gradient sums (fetched to the host) of the parameters
  /// whose gradients some stage computes to stage 0, which writes them to
  /// options.saveGradsPath.
  void saveGradients() {
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
    std::unique_ptr<ParameterFileWriter> saved;
    if (reports)
      saved = std::make_unique<ParameterFileWriter>(options.saveGradsPath);
    streamTensors(listed, gradients, "grads", saved.get());
    if (saved)
      saved->finish();
  }

  /// Sends this stage's profile to stage 0, which writes every stage's with
  /// the run's step seconds to options.profilePath.
  void writeProfile(double stepSeconds) {
    nlohmann::json ops = nlohmann::json::object();
    double opSeconds = 0;
    for (const auto &[kind, totals] : profile->byKind()) {
      ops[kind] = {{"calls", totals.calls}, {"seconds", totals.seconds}};
      opSeconds += totals.seconds;
    }
    std::string mine =
        nlohmann::json{{"stage", stage}, {"op_seconds", opSeconds}, {"ops", ops}}
            .dump();
    uint64_t sizeSlot = messageSlot("profile/size");
    uint64_t slot = messageSlot("profile");
    if (stage != 0) {
      uint64_t size = mine.size();
      pipeline.send(0, sizeSlot, &size, sizeof(size));
      pipeline.send(0, slot, mine.data(), mine.size());
      return;
    }
    nlohmann::json stages = nlohmann::json::array({nlohmann::json::parse(mine)});
    for (int from = 1; from < package.numStages; ++from) {
      uint64_t size = 0;
      pipeline.recv(from, sizeSlot, &size, sizeof(size));
      std::string theirs(size, '\0');
      pipeline.recv(from, slot, theirs.data(), size);
      stages.push_back(nlohmann::json::parse(theirs));
    }
    if (!reports)
      return;
    std::ofstream file(options.profilePath);
    file << nlohmann::json{{"steps", options.steps},
                           {"step_seconds", stepSeconds},
                           {"stages", stages}}
                .dump(2)
         << std::endl;
    if (!file)
      throw std::runtime_error("cannot write the profile '" +
                               options.profilePath +
                               "': " + std::strerror(errno));
  }

  Package &package;
  Communicator &world;
  RankGroups &groups;
  /// This rank's pipeline group; its rank is the stage.
  Communicator &pipeline;
  /// The replicas of this rank's stage; its rank is the dp coordinate.
  Communicator &dataParallel;
  Backend &backend;
  const TrainerOptions &options;
  std::ostream &log;
  int64_t stage;
  /// Whether this rank prints and writes the metrics (job rank 0).
  bool reports;
  /// How a step's global batch splits over microbatches and replicas.
  BatchLayout layout;
  /// This stage's functions, in execution order of their phases.
  const std::vector<StageFunctionInfo> &functions;
  /// Per saved value, the index of the last function that takes it.
  std::map<std::string, size_t> lastUse;
  ParameterUpdate update;
  std::ofstream metrics;
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
  /// Host parameters and gradient sums, and where the stages see them.
  std::map<std::string, TensorPtr> parameters, gradients;
  std::map<std::string, Placed> placedParameters, placedGradients;
  /// The parameters whose gradients some stage's backward returns.
  std::set<std::string> withGradient;
  /// Sums the gradients of the tied parameters this stage holds.
  std::unique_ptr<TiedParameters> tied;
  /// A forward-only run's inputs (Package::inputs order), or null.
  const std::vector<pp_tensor *> *givenInputs;
};

} // namespace

namespace {

/// Whether every stage's `schedules` can run to its end on `package`'s
/// messages: "" if so, else which actions wait on each other.
std::string
checkSchedulesDeadlockFree(const Package &package,
                           const std::vector<std::vector<Action>> &schedules) {
  MessageSources sources(package.numStages);
  for (int64_t s = 0; s < package.numStages; ++s)
    for (const Action &action : schedules[s])
      for (const StageFunctionInfo &function : package.stages[s].functions)
        if (actionRuns(action.phase, function.phase))
          for (const MessageInfo &message : function.messages)
            if (!message.send)
              sources[s][action.phase].insert(message.peer);
  return checkDeadlockFree(schedules, sources);
}

} // namespace

std::string checkPackageSchedule(const Package &package, ScheduleKind kind,
                                 int64_t microbatches) {
  std::vector<std::vector<Action>> schedules;
  for (int64_t s = 0; s < package.numStages; ++s)
    schedules.push_back(buildSchedule(kind, package.numStages, s, microbatches));
  return checkSchedulesDeadlockFree(package, schedules);
}

std::string checkEvalSchedule(const Package &package, int64_t microbatches) {
  return checkSchedulesDeadlockFree(
      package, std::vector<std::vector<Action>>(
                   package.numStages, buildEvalSchedule(microbatches)));
}

RankGroups connectRankGroups(const Package &package, Communicator &world,
                             int64_t dataParallel,
                             const std::vector<std::string> &meshOrder) {
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
  for (const MeshAxis &axis : mesh.axes())
    if (axis.kind != AxisKind::Pipeline &&
        axis.kind != AxisKind::DataReplicate && axis.size > 1)
      throw std::runtime_error(
          "the package's mesh has a " + std::string(axisKindName(axis.kind)) +
          " axis '" + axis.name + "' of size " + std::to_string(axis.size) +
          "; pp-run trains pipeline and data-parallel meshes only so far "
          "(tensor and context parallelism are not supported yet)");
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
  return groups;
}

void train(Package &package, Communicator &world, RankGroups &groups,
           Backend &backend, const TrainerOptions &options, std::ostream &log) {
  checkTrainable(package);
  if (groups.pipeline->worldSize() != package.numStages)
    throw std::runtime_error("the pipeline group has " +
                             std::to_string(groups.pipeline->worldSize()) +
                             " ranks but the package has " +
                             std::to_string(package.numStages) + " stages");
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
      tokenDataConfig(package, data.inputName, data.sequenceLength);
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
                             int64_t microbatches) {
  checkForwardOnly(package);
  if (inputs.size() != package.inputs.size())
    throw std::runtime_error("a forward-only run got " +
                             std::to_string(inputs.size()) +
                             " inputs, the package takes " +
                             std::to_string(package.inputs.size()));
  TrainerOptions options;
  options.schedule = ScheduleKind::GPipe;
  options.microbatches = microbatches;
  if (groups.dataParallelSize != 1)
    throw std::runtime_error("a forward-only run (--infer) runs one "
                             "pipeline; drop --dp");
  std::ostringstream quiet;
  return StageTrainer(package, world, groups, backend, options, quiet,
                      &inputs)
      .runForward();
}

} // namespace pp::runtime
