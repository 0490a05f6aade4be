//===- Trainer.cpp - one rank's training loop -----------------------------===//

#include "runtime/training/Trainer.h"

#include "runtime/kernels/Frame.h"
#include "runtime/kernels/OpProfile.h"
#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/data/SyntheticData.h"

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

  /// Trains on synthetic data, or, given `givenInputs` (one host tensor
  /// per package input, holding every microbatch), runs forward only.
  StageTrainer(Package &package, Communicator &pipeline, bool reports,
               Backend &backend, const TrainerOptions &options,
               std::ostream &log,
               const std::vector<pp_tensor *> *givenInputs = nullptr)
      : package(package), pipeline(pipeline), backend(backend),
        options(options), log(log), stage(pipeline.rank()), reports(reports),
        functions(package.stages[stage].functions),
        optimizer(options.optimizer), givenInputs(givenInputs) {
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
    MicrobatchData data{0, noLabels, nullptr, 0.0, {}, {}};
    runSchedule(data);
    return gatherOutputs(data.outputs);
  }

  void run() {
    checkDtypes();
    initializeParameters();
    checkSchedule();
    if (reports) {
      int64_t p = package.numStages, m = options.microbatches;
      log << "pipeline: " << p << (p == 1 ? " stage, " : " stages, ")
          << (options.schedule == ScheduleKind::GPipe ? "gpipe" : "1f1b")
          << ", " << m << " microbatches of " << package.microbatchSize
          << " samples per step; ideal bubble " << std::setprecision(3)
          << 100.0 * (p - 1) / (m + p - 1) << "%" << std::endl;
    }
    std::ofstream metrics;
    // Each line is flushed, so that a crash later keeps the steps so far,
    // and checked, so that a failed write (a full disk) stops the run.
    auto checkMetrics = [&]() {
      if (!metrics)
        throw std::runtime_error("cannot write the metrics file '" +
                                 options.metricsPath +
                                 "': " + std::strerror(errno));
    };
    auto writeMetrics = [&](const nlohmann::json &line) {
      metrics << line.dump() << std::endl;
      checkMetrics();
    };
    if (reports && !options.metricsPath.empty()) {
      metrics.open(options.metricsPath);
      checkMetrics();
    }
    double stepSeconds = 0;
    for (int64_t step = 0; step < options.steps; ++step) {
      StepMetrics result = trainStep(step);
      stepSeconds += result.seconds;
      if (!reports)
        continue;
      log << "step " << result.step << "  loss " << std::setprecision(8)
          << result.loss << "  grad_norm " << result.gradNorm << "  "
          << std::setprecision(4) << result.samplesPerSecond << " samples/s"
          << std::endl;
      if (metrics.is_open())
        writeMetrics({{"step", result.step},
                      {"loss", result.loss},
                      {"grad_norm", result.gradNorm},
                      {"samples_per_s", result.samplesPerSecond}});
    }
    std::unique_ptr<ParameterFileWriter> saved;
    if (reports && !options.saveParamsPath.empty())
      saved = std::make_unique<ParameterFileWriter>(options.saveParamsPath);
    std::string digest = streamParameters(saved.get());
    if (profile)
      writeProfile(stepSeconds);
    if (reports) {
      log << "params_sha256 " << digest << std::endl;
      if (metrics.is_open()) {
        writeMetrics({{"params_sha256", digest}});
        metrics.close();
        checkMetrics();
      }
      if (saved)
        saved->finish();
    }
  }

private:
  bool isLastStage() const { return stage == package.numStages - 1; }

  /// Fails before the first step, on every rank alike, for tensors whose
  /// dtype the trainer cannot handle yet.
  void checkDtypes() {
    for (const TensorInfo &input : package.inputs)
      checkSyntheticDtype(input.name, input.dtype, /*isLabel=*/false,
                          input.indexBound);
    checkSyntheticDtype(package.labels.name, package.labels.dtype,
                        /*isLabel=*/true);
    checkParameterDtypes();
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
    for (const StageFunctionInfo &function : functions)
      for (const TensorInfo &result : function.results)
        if (result.role == Role::Gradient)
          withGradient.insert(result.name);
    for (const ParameterInfo &parameter : package.parameters) {
      if (parameter.stage != stage)
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

  /// Proves, before the first step, that the schedule cannot deadlock on
  /// this package's messages.
  void checkSchedule() {
    std::string error =
        checkPackageSchedule(package, options.schedule, options.microbatches);
    if (!error.empty())
      throw std::runtime_error(error);
  }

  /// Runs one stage function over `args`; returns its results.
  std::vector<TensorPtr> call(const StageFunctionInfo &function,
                              std::vector<pp_tensor *> args, int64_t step,
                              int64_t microbatch) {
    pp_frame frame;
    frame.profile = profile.get();
    frame.args = std::move(args);
    backend.configure(frame, step, microbatch);
    // Dropout drops in training calls only.
    frame.position = {options.seed, step, firstSample(step, microbatch),
                      /*training=*/givenInputs == nullptr};
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

  int64_t firstSample(int64_t step, int64_t microbatch) const {
    return (step * options.microbatches + microbatch) * package.microbatchSize;
  }

  /// Microbatch `microbatch` of the input `info` a stage function takes:
  /// its rows of the given input in a forward-only run, else synthetic
  /// samples (integer ids below the input's index bound).
  TensorPtr input(const TensorInfo &info, int64_t step, int64_t microbatch) {
    auto it = std::find_if(
        package.inputs.begin(), package.inputs.end(),
        [&](const TensorInfo &input) { return input.name == info.name; });
    if (it == package.inputs.end())
      throw std::runtime_error("stage " + std::to_string(stage) +
                               " takes the input '" + info.name +
                               "', which the package does not list");
    if (!givenInputs) {
      TensorPtr tensor = makeTensor(info);
      fillSynthetic(tensor.get(), options.seed, info.name,
                    firstSample(step, microbatch), it->indexBound);
      return tensor;
    }
    pp_tensor *all = (*givenInputs)[it - package.inputs.begin()];
    TensorPtr tensor = makeTensor(info);
    size_t bytes = pp_tensor_nbytes(tensor.get());
    std::memcpy(pp_tensor_data(tensor.get()),
                static_cast<const char *>(pp_tensor_data(all)) +
                    microbatch * bytes,
                bytes);
    return tensor;
  }

  /// What the stage functions of a step share: the step, its labels and
  /// loss scale (as the functions see them), the loss so far and, per
  /// microbatch, the saved values later phases take by name.
  struct MicrobatchData {
    int64_t step;
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
        inputs.push_back(input(arg, data.step, mb));
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
        call(function, std::move(args), data.step, mb);
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

  /// Runs this stage's functions in the schedule's order over the step's
  /// microbatches and waits for its messages.
  void runSchedule(MicrobatchData &data) {
    for (const Action &action : buildSchedule(
             options.schedule, package.numStages, stage, options.microbatches))
      for (size_t f = 0; f < functions.size(); ++f)
        if (actionRuns(action.phase, functions[f].phase))
          runFunction(f, action.microbatch, data);
    backend.finishStep();
  }

  StepMetrics trainStep(int64_t step) {
    auto start = std::chrono::steady_clock::now();
    for (auto &[name, sum] : placedGradients)
      backend.zero(sum.tensor);

    // The last stage draws every label of the step first: the loss is
    // divided by the step's element (mse) or token (cross_entropy) count.
    std::vector<TensorPtr> labels;
    std::vector<Placed> placedLabels(options.microbatches);
    double count = 0;
    if (isLastStage()) {
      for (int64_t mb = 0; mb < options.microbatches; ++mb) {
        labels.push_back(makeTensor(package.labels));
        fillSyntheticLabels(labels.back().get(), options.seed,
                            package.labels.name, firstSample(step, mb),
                            package.lossClasses, package.ignoreIndex);
        pp_tensor *label = labels.back().get();
        placedLabels[mb].tensor = backend.place(label, placedLabels[mb].copy);
        if (package.lossKind == "mse") {
          count += static_cast<double>(pp_tensor_numel(label));
        } else {
          const int64_t *values =
              static_cast<const int64_t *>(pp_tensor_data(label));
          for (int64_t i = 0, n = pp_tensor_numel(label); i < n; ++i)
            count += values[i] != package.ignoreIndex;
        }
      }
    }
    TensorPtr lossScale =
        makeTensor({"loss_scale", Role::None, PP_DTYPE_F32, {}});
    floatsOf(lossScale.get())[0] =
        count > 0 ? static_cast<float>(1.0 / count) : 0.0f;
    Placed placedScale;
    placedScale.tensor = backend.place(lossScale.get(), placedScale.copy);
    MicrobatchData data{step, placedLabels, placedScale.tensor, 0.0, {}, {}};
    runSchedule(data);

    // Global gradient norm: one sum of squares per parameter (in double),
    // summed in manifest order on every rank, so the norm is the same bits
    // for every stage count.
    std::vector<double> squares(package.parameters.size(), 0.0);
    for (size_t i = 0; i < package.parameters.size(); ++i) {
      auto it = gradients.find(package.parameters[i].tensor.name);
      if (it == gradients.end())
        continue;
      backend.fetch(placedGradients.at(it->first).tensor, it->second.get());
      const float *g = floatsOf(it->second.get());
      for (int64_t j = 0, n = pp_tensor_numel(it->second.get()); j < n; ++j)
        squares[i] += static_cast<double>(g[j]) * g[j];
    }
    pipeline.allReduceSum(squares);
    double total = 0;
    for (double square : squares)
      total += square;
    double gradNorm = std::sqrt(total);
    if (step == 0 && !options.saveGradsPath.empty())
      saveGradients();
    float clip = 1.0f;
    if (options.maxGradNorm > 0)
      clip = static_cast<float>(
          std::min(1.0, options.maxGradNorm / (gradNorm + 1e-6)));

    for (auto &[name, parameter] : parameters) {
      // A parameter the loss does not depend on has no gradient (PyTorch's
      // None) and keeps its value.
      if (!withGradient.count(name))
        continue;
      float *g = floatsOf(gradients.at(name).get());
      int64_t n = pp_tensor_numel(parameter.get());
      if (clip < 1.0f)
        for (int64_t j = 0; j < n; ++j)
          g[j] *= clip;
      optimizer.step(name, floatsOf(parameter.get()), g, n);
      backend.refresh(placedParameters.at(name).tensor, parameter.get());
    }

    // The loss lives on the last stage, and its clock closes the step:
    // every rank reports the same values.
    double report[2] = {
        count > 0 ? data.lossSum / count : 0.0,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count()};
    pipeline.broadcast(report, sizeof(report),
                       static_cast<int>(package.numStages - 1));
    auto [loss, seconds] = report;
    double samples =
        static_cast<double>(options.microbatches * package.microbatchSize);
    return {step + 1, loss, gradNorm, seconds,
            seconds > 0 ? samples / seconds : 0.0};
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
  /// This rank's pipeline group; its rank is the stage.
  Communicator &pipeline;
  Backend &backend;
  const TrainerOptions &options;
  std::ostream &log;
  int64_t stage;
  /// Whether this rank prints and writes the metrics (job rank 0).
  bool reports;
  /// This stage's functions, in execution order of their phases.
  const std::vector<StageFunctionInfo> &functions;
  /// Per saved value, the index of the last function that takes it.
  std::map<std::string, size_t> lastUse;
  Optimizer optimizer;
  /// Seconds per op kind of this stage's functions; null without
  /// --profile.
  std::unique_ptr<OpProfile> profile =
      options.profilePath.empty()
          ? nullptr
          : std::make_unique<OpProfile>([this] { backend.synchronize(); });
  /// Host parameters and gradient sums, and where the stages see them.
  std::map<std::string, TensorPtr> parameters, gradients;
  std::map<std::string, Placed> placedParameters, placedGradients;
  /// The parameters whose gradients this stage's backward returns.
  std::set<std::string> withGradient;
  /// A forward-only run's inputs (Package::inputs order), or null.
  const std::vector<pp_tensor *> *givenInputs;
};

} // namespace

std::string checkPackageSchedule(const Package &package, ScheduleKind kind,
                                 int64_t microbatches) {
  int64_t stages = package.numStages;
  std::vector<std::vector<Action>> schedules;
  MessageSources sources(stages);
  for (int64_t s = 0; s < stages; ++s) {
    schedules.push_back(buildSchedule(kind, stages, s, microbatches));
    for (const Action &action : schedules.back())
      for (const StageFunctionInfo &function : package.stages[s].functions)
        if (actionRuns(action.phase, function.phase))
          for (const MessageInfo &message : function.messages)
            if (!message.send)
              sources[s][action.phase].insert(message.peer);
  }
  return checkDeadlockFree(schedules, sources);
}

std::unique_ptr<Communicator> connectPipelineGroup(const Package &package,
                                                   Communicator &world) {
  const DeviceMesh &mesh = package.mesh;
  if (world.worldSize() != mesh.deviceCount())
    throw std::runtime_error(
        "the package's device mesh " + mesh.describe() + " has device count " +
        std::to_string(mesh.deviceCount()) + ", but the job's WORLD_SIZE is " +
        std::to_string(world.worldSize()) +
        "; start one rank per device (--nproc " +
        std::to_string(mesh.deviceCount()) + ")");
  const MeshAxis *axis = mesh.pipelineAxis();
  std::vector<std::string> axes;
  if (axis)
    axes.push_back(axis->name);
  return world.split("pipeline", mesh.group(world.rank(), axes));
}

void train(Package &package, Communicator &world, Communicator &pipeline,
           Backend &backend, const TrainerOptions &options, std::ostream &log) {
  for (const MeshAxis &axis : package.mesh.axes())
    if (axis.kind != AxisKind::Pipeline && axis.size > 1)
      throw std::runtime_error(
          "the package's mesh has a " + std::string(axisKindName(axis.kind)) +
          " axis '" + axis.name + "' of size " + std::to_string(axis.size) +
          "; pp-run trains pipeline meshes only so far (data, tensor and "
          "context parallelism are not supported yet)");
  checkTrainable(package);
  if (pipeline.worldSize() != package.numStages)
    throw std::runtime_error("the pipeline group has " +
                             std::to_string(pipeline.worldSize()) +
                             " ranks but the package has " +
                             std::to_string(package.numStages) + " stages");
  StageTrainer(package, pipeline, world.rank() == 0, backend, options, log)
      .run();
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

std::vector<TensorPtr> infer(Package &package, Communicator &pipeline,
                             Backend &backend,
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
  std::ostringstream quiet;
  return StageTrainer(package, pipeline, pipeline.rank() == 0, backend,
                      options, quiet, &inputs)
      .runForward();
}

} // namespace pp::runtime
