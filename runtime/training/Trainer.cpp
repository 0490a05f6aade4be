//===- Trainer.cpp - one rank's training loop -----------------------------===//
//
// Composes the pieces of a rank's run: its parameter store, the step
// executor that runs its row of the action table, the data feeder, the
// checkpoint manager and the reporter.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/Trainer.h"

#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/data/GivenMicrobatches.h"
#include "runtime/data/TokenBatches.h"
#include "runtime/schedules/MessageOrder.h"
#include "runtime/training/CheckpointManager.h"
#include "runtime/training/DataFeeder.h"
#include "runtime/training/HostTensors.h"
#include "runtime/training/LossScaler.h"
#include "runtime/training/ParameterStore.h"
#include "runtime/training/RankStages.h"
#include "runtime/training/RunReporter.h"
#include "runtime/training/StepBreakdown.h"
#include "runtime/training/StepExecutor.h"
#include "runtime/training/TensorStreaming.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace pp::runtime {
namespace {

/// Throws when `backend` pairs the messages between two ranks in order and
/// a table of `plan` takes them in another.
void checkMessageOrder(const PipelinePlan &plan, const Backend &backend) {
  if (!backend.pairsMessagesInOrder())
    return;
  for (const auto &[table, what] :
       {std::pair(&plan.training, "the training schedule"),
        std::pair(&plan.eval, "the eval schedule")})
    if (std::string problem =
            messageOrderProblem(*table, plan.layout, plan.messages);
        !problem.empty())
      throw std::runtime_error(plan.label + ": " + what + ": " + problem);
}

/// The job of one rank: its stages' parameters, gradients and data.
class StageTrainer {
public:
  /// Trains on the data `options` name, or, given `givenInputs` (one host
  /// tensor per package input, holding every microbatch), runs forward
  /// only.
  StageTrainer(Package &package, Communicator &world, RankGroups &groups,
               Backend &backend, const TrainerOptions &options,
               std::ostream &log,
               const std::vector<pp_tensor *> *givenInputs = nullptr)
      : package(package), world(world), groups(groups), backend(backend),
        options(options), log(log), stages(package, groups.stage),
        layout{package.microbatchSize, options.microbatches,
               groups.dataParallelSize},
        plan(planPipeline(package, options.schedule, options.microbatches,
                          {groups.dataParallelSize, options.zeroLevel},
                          &options.optimizer)),
        context{package, world, groups, stages, options, layout, log},
        weights(package, options.weights),
        parameters(package, stages, groups, backend, options,
                   /*forwardOnly=*/givenInputs != nullptr),
        data(package, stages, options, layout, groups.dataParallelRank),
        reporter(context, plan, backend),
        executor({package, stages, groups, backend, parameters,
                  reporter.tracer(), reporter.profile(), options.seed, layout,
                  options.memoryPlan,
                  /*measuresMemory=*/!options.metricsPath.empty()}),
        streamer(stages, groups),
        checkpoints(context, parameters, streamer, data) {
    if (package.precision == "fp16")
      scaler.emplace(options.lossScaling);
    checkMessageOrder(plan, backend);
    backend.connectMessages(crossRankStreams(package));
    if (givenInputs)
      given = std::make_unique<GivenMicrobatches>(package, *givenInputs);
  }

  /// Runs each microbatch of the given inputs through the forward
  /// functions; returns on stage 0 the model's outputs (Package::outputs
  /// order), the microbatches' results concatenated along dimension 0, and
  /// nothing on other stages.
  std::vector<TensorPtr> runForward() {
    checkParameterDtypes(package);
    parameters.initialize(nullptr, weights);
    std::vector<Placed> noLabels;
    MicrobatchData batch{{0, 0, 0, given.get(), /*training=*/false},
                         noLabels, nullptr, LossSum(backend), {}, {}};
    executor.run(plan.training[stages.rank()], batch);
    return gatherOutputs(batch.outputs);
  }

  void run() {
    checkParameterDtypes(package);
    data.checkDtypes();
    data.open();
    std::optional<CheckpointRef> resumed = checkpoints.findResumePoint();
    std::optional<ResumePoint> resumePoint;
    if (resumed) {
      resumePoint.emplace(checkpoints.open(*resumed));
      firstStep = resumePoint->step;
      cursor = resumePoint->cursor;
      if (scaler && resumePoint->lossScale)
        scaler->restore(*resumePoint->lossScale);
    }
    parameters.initialize(resumePoint ? &resumePoint->parameters : nullptr,
                          weights);
    parameters.prepareTraining();
    if (scaler)
      checkHalfRange(parameters.hostValues());
    if (resumed)
      checkpoints.restoreOptimizer(*resumePoint);
    // ZeRO-3 holds its share between uses from the start.
    parameters.releaseValues();
    reporter.begin(executor.usesArenas());
    if (reporter.reports() && resumed)
      log << "resumed from " << resumed->path << ": step " << firstStep
          << ", " << cursor << " samples consumed"
          << (firstStep >= options.steps
                  ? "; it reaches --steps " + std::to_string(options.steps) +
                        ", nothing left to train"
                  : "")
          << std::endl;
    int64_t evalBatches = data.evalBatches();
    if (evalBatches > 0)
      evaluate(firstStep);
    double stepSeconds = 0;
    const CheckpointOptions &checkpoint = options.checkpoint;
    for (int64_t step = firstStep; step < options.steps; ++step) {
      reporter.tracer().beginStep(step);
      StepMetrics result = trainStep(step);
      stepSeconds += result.seconds;
      reporter.reportStep(result);
      // Every rank's scaler saw the same global norms: all stop together,
      // before a checkpoint of this step.
      if (scaler && scaler->exhausted())
        throw std::runtime_error(
            exhaustedMessage(result.step, scaler->state()));
      if (evalBatches > 0 && ((options.data.evalEvery > 0 &&
                               result.step % options.data.evalEvery == 0) ||
                              result.step == options.steps))
        evaluate(result.step);
      if (checkpoint.every > 0 && (result.step % checkpoint.every == 0 ||
                                   result.step == options.steps)) {
        if (parameters.shardsValues())
          parameters.gatherValues();
        checkpoints.save(result.step, cursor,
                         scaler ? std::optional(scaler->state())
                                : std::nullopt);
        parameters.releaseValues();
      }
    }
    reporter.reportRankFacts(
        {data.elementsRead(), parameters.residentBytes(), executor.usesArenas(),
         heapAllocationsPerStep, executor.peakHeld(),
         executor.mostActivationsHeld(), executor.mostActivationsOffloaded(),
         hostDeviceBytesPerStep});
    if (parameters.shardsValues())
      parameters.gatherValues();
    if (reporter.tracer().spans())
      reporter.writeTrace();
    parameters.checkHoldersAgree();
    TrainedFiles files;
    std::string digest = streamTrainedParameters(files);
    if (reporter.profile() && groups.dataParallelRank == 0)
      reporter.writeProfile(stepSeconds, parameters.reducingSeconds(),
                            parameters.reduceWaitSeconds(),
                            parameters.reduceBytesPerStep(),
                            {parameters.computeCopyConversions(),
                             parameters.computeCopyBytes()},
                            breakdown);
    reporter.finish(digest);
    finishTrainedFiles(files);
  }

private:
  /// The files the trained parameters go to: --save-params and
  /// --save-weights (rank 0 only).
  struct TrainedFiles {
    std::unique_ptr<ParameterFileWriter> parameters;
    std::unique_ptr<SafeTensorsWriter> weights;
    /// The model names of the tensors `weights` takes.
    std::set<std::string> weightNames;
  };

  /// Hashes the trained parameters and adds them to `files`: data-parallel
  /// replicas hold the same parameters, and the first one streams them to
  /// rank 0. Returns params_sha256 on rank 0, "" elsewhere.
  std::string streamTrainedParameters(TrainedFiles &files) {
    if (reporter.reports()) {
      if (!options.saveParamsPath.empty())
        files.parameters =
            std::make_unique<ParameterFileWriter>(options.saveParamsPath);
      if (weights.saves()) {
        files.weights = weights.createSavedFile();
        for (const ParameterInfo &parameter : weights.toSave())
          files.weightNames.insert(parameter.tensor.name);
      }
    }
    if (groups.dataParallelRank != 0)
      return "";
    return streamer.stream(
        package.parameters, heldIn(parameters.hostValues()), "params",
        [&](const std::string &name, const Shape &shape,
            const float *values) {
          if (files.parameters)
            files.parameters->add(name, shape, values);
          if (files.weightNames.count(name))
            files.weights->add(weights.savedNameOf(name), values);
        });
  }

  /// Completes the files of the trained parameters.
  void finishTrainedFiles(TrainedFiles &files) {
    if (files.parameters)
      files.parameters->finish();
    if (files.weights) {
      files.weights->finish();
      log << "saved the trained weights to '" << options.weights.savePath
          << "'" << std::endl;
    }
  }

  /// Sums `values` over the last stages of all data-parallel replicas,
  /// then sends the sums from the last stage to every stage of its
  /// pipeline: each rank ends with the same bits, reduced over dp only.
  void sumOverDataParallel(std::vector<double> &values) {
    if (stages.holdsLastStage())
      groups.dataParallel->allReduceSum(values);
    groups.pipeline->broadcast(values.data(), values.size() * sizeof(double),
                               static_cast<int>(stages.lastStageRank()));
  }

  /// The parts of the step measured so far (with --profile); the wait
  /// for the data-parallel reduction is one for replicas, when there are.
  PartSeconds measuredSoFar() const {
    return measuredParts(reporter.profile()->byCategory(),
                         executor.actionSeconds(),
                         groups.dataParallelSize > 1
                             ? parameters.reduceWaitSeconds()
                             : 0.0);
  }

  StepMetrics trainStep(int64_t step) {
    auto start = std::chrono::steady_clock::now();
    PartSeconds measuredBefore{};
    if (reporter.profile())
      measuredBefore = measuredSoFar();
    int64_t heapAllocationsBefore = executor.heapAllocations();
    int64_t hostDeviceBytesBefore = backend.hostDeviceBytes();
    parameters.beginStep();

    // The last stages draw every label of the step first: the loss is
    // divided by the step's element (mse) or token (cross_entropy) count
    // over all data-parallel replicas.
    BatchRef batch{step, step, cursor, data.training(), /*training=*/true};
    std::vector<TensorPtr> labels;
    std::vector<Placed> placedLabels;
    double localCount = data.drawLabels(batch, backend, labels, placedLabels);
    double count = localCount;
    if (stages.holdsLastStage()) {
      std::vector<double> total = {localCount};
      groups.dataParallel->allReduceSum(total);
      count = total[0];
    }
    // The seed of the backward: one over the count, times the fp16 loss
    // scale.
    double scale = scaler ? scaler->scale() : 1.0;
    TensorPtr lossScale =
        makeTensor({"loss_scale", Role::None, PP_DTYPE_F32, {}});
    floatsOf(lossScale.get())[0] =
        count > 0 ? static_cast<float>(scale / count) : 0.0f;
    Placed placedScale;
    placedScale.tensor = backend.place(lossScale.get(), placedScale.copy);
    MicrobatchData microbatches{
        batch, placedLabels, placedScale.tensor, LossSum(backend), {}, {}};
    Update update;
    executor.run(plan.training[stages.rank()], microbatches, [&] {
      heapAllocationsPerStep =
          executor.heapAllocations() - heapAllocationsBefore;
      ActionTracer &tracer = reporter.tracer();
      double start = tracer.now();
      update = updateParameters(step, scale);
      tracer.span("optimizer", Action{ActionKind::Optimizer}, start);
    });

    hostDeviceBytesPerStep = backend.hostDeviceBytes() - hostDeviceBytesBefore;
    // The loss lives on the last stages, and their clock closes the step:
    // every rank reports the same values.
    double lossSum = microbatches.lossSum.read();
    double localSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (reporter.profile())
      breakdown.addStep(localSeconds, measuredBefore, measuredSoFar());
    std::vector<double> report = {lossSum, localCount, localSeconds};
    sumOverDataParallel(report);
    count = report[1];
    double seconds = report[2] / layout.dataParallel;
    double samples = static_cast<double>(layout.globalBatch());
    return {step + 1,
            count > 0 ? report[0] / count : 0.0,
            update.gradNorm,
            update.learningRate,
            seconds,
            seconds > 0 ? samples / seconds : 0.0,
            seconds > 0 ? count / seconds : 0.0,
            scaler ? scale : 0.0,
            update.skipped};
  }

  /// What a step's optimizer action did.
  struct Update {
    double gradNorm = 0;
    float learningRate = 0;
    /// Its gradients overflowed (fp16): the parameters stayed.
    bool skipped = false;
  };

  /// The optimizer action of step `step`, whose gradients hold `scale`
  /// times their values: completes the data-parallel reduction, adds up
  /// the gradients that come in parts, divides the scale out, clips by the
  /// global norm and updates the parameters. With fp16 loss scaling, a
  /// step whose global norm is not finite (some gradient overflowed on
  /// some rank: the norm sums every stage's, replica's and shard's squares,
  /// so every rank sees it) leaves the parameters as they are on every
  /// rank, and the scaler backs off.
  Update updateParameters(int64_t step, double scale) {
    ActionTracer &tracer = reporter.tracer();
    double traceStart = tracer.now();
    parameters.finishReduction();
    tracer.span("all-reduce", Action{ActionKind::Optimizer}, traceStart);
    // A power of two: dividing it out is exact.
    if (scale != 1.0)
      parameters.scaleGradients(static_cast<float>(1.0 / scale));
    double gradNorm = parameters.gradientNorm();
    if (step == 0 && !options.saveGradsPath.empty()) {
      parameters.gatherGradients();
      if (groups.dataParallelRank == 0)
        saveGradients();
    }
    float learningRate = learningRateAt(options.learningRate, step + 1);
    cursor += layout.globalBatch();
    if (scaler && !scaler->update(std::isfinite(gradNorm))) {
      parameters.skip();
      return {gradNorm, learningRate, /*skipped=*/true};
    }
    float clip = 1.0f;
    if (options.maxGradNorm > 0)
      clip = static_cast<float>(
          std::min(1.0, options.maxGradNorm / (gradNorm + 1e-6)));
    parameters.apply(clip, learningRate);
    return {gradNorm, learningRate, /*skipped=*/false};
  }

  /// Streams the gradient sums of the parameters whose gradients some
  /// stage computes to stage 0, which writes them to --save-grads.
  void saveGradients() {
    std::unique_ptr<ParameterFileWriter> saved;
    if (reporter.reports())
      saved = std::make_unique<ParameterFileWriter>(options.saveGradsPath);
    streamer.stream(trainedParameters(package),
                    heldIn(parameters.hostGradients()), "grads",
                    [&](const std::string &name, const Shape &shape,
                        const float *values) {
                      saved->add(name, shape, values);
                    });
    if (saved)
      saved->finish();
  }

  /// Runs the eval schedule over every eval batch with dropout off and
  /// reports the loss over all eval tokens (padding masked out) and its
  /// perplexity, after `step` training steps. The eval functions keep no
  /// activations for a backward and no gradients.
  void evaluate(int64_t step) {
    auto start = std::chrono::steady_clock::now();
    reporter.tracer().beginEval();
    int64_t evalBatches = data.evalBatches();
    std::vector<double> sums = {0.0, 0.0};
    for (int64_t e = 0; e < evalBatches; ++e) {
      // Eval batches talk on their own message steps, below every training
      // step's.
      BatchRef batch{e, -1 - (evalRound * evalBatches + e),
                     e * layout.globalBatch(), data.eval(),
                     /*training=*/false};
      std::vector<TensorPtr> labels;
      std::vector<Placed> placedLabels;
      sums[1] += data.drawLabels(batch, backend, labels, placedLabels);
      // The eval functions return a microbatch's summed loss and take no
      // loss scale; the mean divides once, by every replica's tokens.
      MicrobatchData microbatches{
          batch, placedLabels, nullptr, LossSum(backend), {}, {}};
      executor.run(plan.eval[stages.rank()], microbatches);
      sums[0] += microbatches.lossSum.read();
    }
    ++evalRound;
    reporter.tracer().endEval();
    sumOverDataParallel(sums);
    double loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    reporter.reportEval(step, loss, static_cast<int64_t>(sums[1]), evalBatches,
                        seconds);
  }

  /// The model's outputs on stage 0, each the concatenation of its
  /// microbatches (`computed`, on the stage computing it), which that stage
  /// sends to stage 0; nothing on other stages.
  std::vector<TensorPtr>
  gatherOutputs(std::map<std::string, std::vector<TensorPtr>> &computed) {
    Communicator &pipeline = *groups.pipeline;
    int64_t rank = stages.rank();
    std::vector<TensorPtr> gathered;
    for (const OutputInfo &output : package.outputs) {
      const TensorInfo &info = output.tensor;
      TensorInfo whole = info;
      if (!whole.shape.empty())
        whole.shape[0] *= options.microbatches;
      uint64_t slot = messageSlot("outputs/" + info.name);
      if (stages.holds(output.stage)) {
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
        pipeline.recv(static_cast<int>(stages.rankOf(output.stage)), slot,
                      pp_tensor_data(tensor.get()),
                      pp_tensor_nbytes(tensor.get()));
        gathered.push_back(std::move(tensor));
      }
    }
    return gathered;
  }

  Package &package;
  Communicator &world;
  RankGroups &groups;
  Backend &backend;
  const TrainerOptions &options;
  std::ostream &log;
  RankStages stages;
  /// How a step's global batch splits over microbatches and replicas.
  BatchLayout layout;
  /// The action tables of every pipeline rank, proven deadlock-free.
  PipelinePlan plan;
  /// What the pieces of the run see of it.
  RankContext context;
  ModelWeights weights;
  ParameterStore parameters;
  DataFeeder data;
  RunReporter reporter;
  StepExecutor executor;
  TensorStreamer streamer;
  CheckpointManager checkpoints;
  /// A forward-only run's inputs, or null.
  std::unique_ptr<GivenMicrobatches> given;
  /// The loss scaling of an fp16 package; none for f32 and bf16.
  std::optional<LossScaler> scaler;
  /// Tensors the stage functions allocated on their own in the last
  /// training step, and the bytes it copied between host and device.
  int64_t heapAllocationsPerStep = 0;
  int64_t hostDeviceBytesPerStep = 0;
  /// Where this rank's training steps went (with --profile).
  StepBreakdown breakdown;
  /// Evaluations so far.
  int64_t evalRound = 0;
  /// The step the training loop starts at, and the consumed-samples cursor
  /// of the next step (a resumed checkpoint's, else 0).
  int64_t firstStep = 0;
  int64_t cursor = 0;
};

} // namespace

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
