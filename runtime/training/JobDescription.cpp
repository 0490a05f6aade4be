//===- JobDescription.cpp - what one rank of a job runs -------------------===//
//
// The file is one JSON object. Every key is written and every key is
// required on reading, and an unknown key is refused, so that a writer and
// a reader of different builds cannot silently disagree about an option.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/JobDescription.h"

#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/core/InputFile.h"
#include "runtime/core/OutputFile.h"
#include "runtime/training/ParameterUpdate.h"

#include <nlohmann/json.hpp>

#include <array>
#include <climits>
#include <cmath>
#include <functional>
#include <set>
#include <stdexcept>
#include <utility>

namespace pp::runtime {
namespace {

using Json = nlohmann::ordered_json;

/// How a reader's error ends: what to do about it.
constexpr const char *kRewriteHint =
    "; write the job description again with `pp-run --write-job FILE ...` "
    "of the build this pp-rank belongs to";

/// The output files of a training job: each pp-run option and its path.
std::array<std::pair<const char *, const std::string *>, 6>
outputFiles(const TrainerOptions &options) {
  return {std::pair{"metrics", &options.metricsPath},
          std::pair{"trace", &options.tracePath},
          std::pair{"save-params", &options.saveParamsPath},
          std::pair{"save-weights", &options.weights.savePath},
          std::pair{"save-grads", &options.saveGradsPath},
          std::pair{"profile", &options.profilePath}};
}

Json scheduleJson(const ScheduleChoice &schedule) {
  return {{"kind", scheduleName(schedule.kind)},
          {"file", schedule.file},
          {"offload_activations", schedule.offloadActivations}};
}

Json optimizerJson(const OptimizerOptions &optimizer) {
  return {{"kind", optimizer.kind},
          {"momentum", optimizer.momentum},
          {"weight_decay", optimizer.weightDecay},
          {"beta1", optimizer.beta1},
          {"beta2", optimizer.beta2},
          {"epsilon", optimizer.epsilon},
          {"no_decay", optimizer.noDecay ? Json(*optimizer.noDecay) : Json()}};
}

Json learningRateJson(const LearningRateSchedule &schedule) {
  return {{"peak", schedule.peak},
          {"decay", learningRateDecayName(schedule.decay)},
          {"warmup_steps", schedule.warmupSteps},
          {"decay_steps", schedule.decaySteps},
          {"minimum", schedule.minimum}};
}

Json dataJson(const DataOptions &data) {
  return {{"path", data.path},
          {"token_width", data.tokenWidth},
          {"sequence_length", data.sequenceLength},
          {"pad_sequence", data.padSequence},
          {"input_name", data.inputName},
          {"eval_path", data.evalPath},
          {"eval_every", data.evalEvery},
          {"eval_batches", data.evalBatches}};
}

Json checkpointJson(const CheckpointOptions &checkpoint) {
  return {{"directory", checkpoint.directory},
          {"every", checkpoint.every},
          {"keep_last", checkpoint.keepLast},
          {"resume", checkpoint.resume}};
}

Json weightsJson(const WeightsOptions &weights) {
  return {{"path", weights.path},
          {"prefix", weights.naming.prefix},
          {"strict", weights.naming.strict},
          {"save_path", weights.savePath}};
}

Json trainerJson(const TrainerOptions &options) {
  return {{"schedule", scheduleJson(options.schedule)},
          {"trace_path", options.tracePath},
          {"microbatches", options.microbatches},
          {"steps", options.steps},
          {"seed", options.seed},
          {"metrics_path", options.metricsPath},
          {"save_params_path", options.saveParamsPath},
          {"save_grads_path", options.saveGradsPath},
          {"profile_path", options.profilePath},
          {"max_grad_norm", options.maxGradNorm},
          {"loss_scale_init", options.lossScaling.initialScale},
          {"loss_scale_growth_interval", options.lossScaling.growthInterval},
          {"optimizer", optimizerJson(options.optimizer)},
          {"learning_rate", learningRateJson(options.learningRate)},
          {"init", parameterInitName(options.init)},
          {"zero", options.zeroLevel},
          {"grad_reduce_dtype", reduceDtypeName(options.gradReduceDtype)},
          {"memory_plan", options.memoryPlan},
          {"data", dataJson(options.data)},
          {"checkpoint", checkpointJson(options.checkpoint)},
          {"weights", weightsJson(options.weights)}};
}

Json inferenceJson(const std::optional<InferenceJob> &inference) {
  if (!inference)
    return Json();
  return {{"inputs", inference->inputs},
          {"outputs_dir", inference->outputsDir},
          {"as_given", inference->asGiven}};
}

/// Builds the error of a job description: its source, then `what`.
using Refusal = std::function<std::runtime_error(const std::string &what)>;

/// The keys of one JSON object of the file, read by name and type; the
/// keys it has and nobody read are refused by finish().
class Fields {
public:
  Fields(const Json &object, std::string path, Refusal refuse)
      : json(object), path(std::move(path)), refuse(std::move(refuse)) {
    if (!object.is_object())
      throw this->refuse(where() + " is " + object.dump() +
                         ", not an object");
  }

  std::string string(const char *key) {
    const Json &value = at(key);
    if (!value.is_string())
      throw wrongType(key, value, "a string");
    return value.get<std::string>();
  }

  /// A string or null.
  std::optional<std::string> optionalString(const char *key) {
    const Json &value = at(key);
    if (value.is_null())
      return std::nullopt;
    if (!value.is_string())
      throw wrongType(key, value, "a string or null");
    return value.get<std::string>();
  }

  bool boolean(const char *key) {
    const Json &value = at(key);
    if (!value.is_boolean())
      throw wrongType(key, value, "true or false");
    return value.get<bool>();
  }

  /// An integer in [minimum, maximum].
  int64_t integer(const char *key, int64_t minimum,
                  int64_t maximum = INT64_MAX) {
    const Json &value = at(key);
    bool fits = false;
    if (value.is_number_unsigned()) {
      uint64_t given = value.get<uint64_t>();
      fits = given <= static_cast<uint64_t>(maximum) &&
             (minimum <= 0 || given >= static_cast<uint64_t>(minimum));
    } else if (value.is_number_integer()) {
      int64_t given = value.get<int64_t>();
      fits = given >= minimum && given <= maximum;
    }
    if (!fits)
      throw wrongType(key, value,
                      "an integer from " + std::to_string(minimum) + " to " +
                          std::to_string(maximum));
    return value.get<int64_t>();
  }

  uint64_t unsignedInteger(const char *key) {
    const Json &value = at(key);
    if (!value.is_number_unsigned())
      throw wrongType(key, value, "a non-negative integer");
    return value.get<uint64_t>();
  }

  /// A finite number.
  double number(const char *key) {
    const Json &value = at(key);
    if (!value.is_number() || !std::isfinite(value.get<double>()))
      throw wrongType(key, value, "a finite number");
    return value.get<double>();
  }

  /// A finite number that is finite as a float too.
  float floatNumber(const char *key) {
    double value = number(key);
    if (!std::isfinite(static_cast<float>(value)))
      throw wrongType(key, at(key), "a number within float's range");
    return static_cast<float>(value);
  }

  std::vector<std::string> strings(const char *key) {
    const Json &value = at(key);
    std::vector<std::string> result;
    if (value.is_array())
      for (const Json &element : value)
        if (element.is_string())
          result.push_back(element.get<std::string>());
    if (!value.is_array() || result.size() != value.size())
      throw wrongType(key, value, "an array of strings");
    return result;
  }

  /// The value `parse` makes of the string at `key`; `spellings` lists
  /// the valid ones for the error.
  template <typename Parse>
  auto choice(const char *key, Parse parse, const std::string &spellings) {
    std::string name = string(key);
    auto value = parse(name);
    if (!value)
      throw wrongType(key, at(key), "one of " + spellings);
    return *value;
  }

  Fields object(const char *key) {
    return Fields(at(key), where(key), refuse);
  }

  bool isNull(const char *key) { return at(key).is_null(); }

  /// Refuses the keys no accessor read.
  void finish() const {
    for (const auto &[key, value] : json.items())
      if (!read.count(key))
        throw refuse("has the unknown key '" + where(key.c_str()) +
                     "' (written by another version of pp-run?)" +
                     kRewriteHint);
  }

private:
  std::string where(const char *key = nullptr) const {
    if (!key)
      return path.empty() ? std::string("the top level") : path;
    return path.empty() ? std::string(key) : path + "." + key;
  }

  const Json &at(const char *key) {
    auto found = json.find(key);
    if (found == json.end())
      throw refuse("lacks the key '" + where(key) + "'" + kRewriteHint);
    read.insert(key);
    return *found;
  }

  std::runtime_error wrongType(const char *key, const Json &value,
                               const std::string &expected) const {
    return refuse("key '" + where(key) + "' is " + value.dump() + ", not " +
                  expected + kRewriteHint);
  }

  const Json &json;
  std::string path;
  Refusal refuse;
  std::set<std::string> read;
};

ScheduleChoice readSchedule(Fields fields) {
  ScheduleChoice schedule;
  schedule.kind =
      fields.choice("kind", parseScheduleKind, scheduleNames());
  schedule.file = fields.string("file");
  schedule.offloadActivations = fields.boolean("offload_activations");
  fields.finish();
  return schedule;
}

OptimizerOptions readOptimizer(Fields fields) {
  OptimizerOptions optimizer;
  optimizer.kind = fields.choice(
      "kind",
      [](const std::string &name) {
        return name == "sgd" || name == "adamw" ? std::optional(name)
                                                : std::nullopt;
      },
      "sgd, adamw");
  optimizer.momentum = fields.floatNumber("momentum");
  optimizer.weightDecay = fields.floatNumber("weight_decay");
  optimizer.beta1 = fields.floatNumber("beta1");
  optimizer.beta2 = fields.floatNumber("beta2");
  optimizer.epsilon = fields.floatNumber("epsilon");
  optimizer.noDecay = fields.optionalString("no_decay");
  fields.finish();
  return optimizer;
}

LearningRateSchedule readLearningRate(Fields fields) {
  LearningRateSchedule schedule;
  schedule.peak = fields.number("peak");
  schedule.decay = fields.choice("decay", parseLearningRateDecay,
                                 "constant, cosine, linear");
  schedule.warmupSteps = fields.integer("warmup_steps", 0);
  schedule.decaySteps = fields.integer("decay_steps", 0);
  schedule.minimum = fields.number("minimum");
  fields.finish();
  return schedule;
}

DataOptions readData(Fields fields) {
  DataOptions data;
  data.path = fields.string("path");
  data.tokenWidth = static_cast<int>(fields.integer("token_width", 0, 4));
  data.sequenceLength = fields.integer("sequence_length", 0);
  data.padSequence = fields.boolean("pad_sequence");
  data.inputName = fields.string("input_name");
  data.evalPath = fields.string("eval_path");
  data.evalEvery = fields.integer("eval_every", 0);
  data.evalBatches = fields.integer("eval_batches", 0);
  fields.finish();
  return data;
}

CheckpointOptions readCheckpoint(Fields fields) {
  CheckpointOptions checkpoint;
  checkpoint.directory = fields.string("directory");
  checkpoint.every = fields.integer("every", 0);
  checkpoint.keepLast = fields.integer("keep_last", 0);
  checkpoint.resume = fields.boolean("resume");
  fields.finish();
  return checkpoint;
}

WeightsOptions readWeights(Fields fields) {
  WeightsOptions weights;
  weights.path = fields.string("path");
  weights.naming.prefix = fields.string("prefix");
  weights.naming.strict = fields.boolean("strict");
  weights.savePath = fields.string("save_path");
  fields.finish();
  return weights;
}

TrainerOptions readTrainer(Fields fields) {
  TrainerOptions options;
  options.schedule = readSchedule(fields.object("schedule"));
  options.tracePath = fields.string("trace_path");
  options.microbatches = fields.integer("microbatches", 1);
  options.steps = fields.integer("steps", 1);
  options.seed = fields.unsignedInteger("seed");
  options.metricsPath = fields.string("metrics_path");
  options.saveParamsPath = fields.string("save_params_path");
  options.saveGradsPath = fields.string("save_grads_path");
  options.profilePath = fields.string("profile_path");
  options.maxGradNorm = fields.number("max_grad_norm");
  options.lossScaling.initialScale = fields.number("loss_scale_init");
  options.lossScaling.growthInterval =
      fields.integer("loss_scale_growth_interval", 1);
  options.optimizer = readOptimizer(fields.object("optimizer"));
  options.learningRate = readLearningRate(fields.object("learning_rate"));
  options.init = fields.choice("init", parseParameterInit, "model, random");
  options.zeroLevel =
      static_cast<int>(fields.integer("zero", 0, kMaxZeroLevel));
  options.gradReduceDtype =
      fields.choice("grad_reduce_dtype", parseReduceDtype, "f32, bf16");
  options.memoryPlan = fields.boolean("memory_plan");
  options.data = readData(fields.object("data"));
  options.checkpoint = readCheckpoint(fields.object("checkpoint"));
  options.weights = readWeights(fields.object("weights"));
  fields.finish();
  return options;
}

InferenceJob readInference(Fields fields) {
  InferenceJob inference;
  inference.inputs = fields.strings("inputs");
  inference.outputsDir = fields.string("outputs_dir");
  inference.asGiven = fields.boolean("as_given");
  fields.finish();
  return inference;
}

} // namespace

std::string formatJobDescription(const JobDescription &job) {
  Json json = {{"format_version", kJobFormatVersion},
               {"package", job.packageDir},
               {"device", job.device},
               {"threads", job.threads},
               {"gemm_engine", job.gemmEngine},
               {"dp", job.dataParallel},
               {"mesh_order", job.meshOrder},
               {"tp_collectives", tensorCollectivesName(job.tensorCollectives)},
               {"link_integrity", linkIntegrityName(job.linkIntegrity)},
               {"timeout_seconds", job.timeoutSeconds},
               {"cache_dir", job.cacheDir},
               {"inference", inferenceJson(job.inference)},
               {"trainer", trainerJson(job.trainer)}};
  return json.dump(2) + "\n";
}

JobDescription parseJobDescription(const std::string &text,
                                   const std::string &source) {
  Refusal refuse = [source](const std::string &what) {
    return std::runtime_error("job description '" + source + "' " + what);
  };
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    throw refuse(std::string("is not valid JSON") + kRewriteHint);
  Fields fields(json, "", refuse);
  int64_t version = fields.integer("format_version", 0);
  if (version != kJobFormatVersion)
    throw refuse("is of format version " + std::to_string(version) +
                 ", but this pp-rank reads version " +
                 std::to_string(kJobFormatVersion) + kRewriteHint);
  JobDescription job;
  job.packageDir = fields.string("package");
  job.device = fields.choice(
      "device",
      [](const std::string &name) {
        return name == "cpu" || name == "cuda" ? std::optional(name)
                                               : std::nullopt;
      },
      "cpu, cuda");
  job.threads = static_cast<int>(fields.integer("threads", 0, INT_MAX));
  job.gemmEngine = fields.string("gemm_engine");
  job.dataParallel = fields.integer("dp", 1);
  job.meshOrder = fields.strings("mesh_order");
  job.tensorCollectives = fields.choice(
      "tp_collectives", parseTensorCollectives, "auto, shm, tcp");
  job.linkIntegrity = fields.choice("link_integrity", parseLinkIntegrity,
                                    "off, across-hosts, always");
  job.timeoutSeconds =
      static_cast<int>(fields.integer("timeout_seconds", 1, INT_MAX));
  job.cacheDir = fields.string("cache_dir");
  if (!fields.isNull("inference"))
    job.inference = readInference(fields.object("inference"));
  job.trainer = readTrainer(fields.object("trainer"));
  fields.finish();
  if (std::string problem = learningRateScheduleProblem(job.trainer.learningRate);
      !problem.empty())
    throw refuse("key 'trainer.learning_rate': " + problem + kRewriteHint);
  return job;
}

JobDescription readJobDescription(const std::string &path) {
  return parseJobDescription(readInputFile(path, "the job description"),
                             path);
}

void writeJobDescription(const std::string &path, const JobDescription &job) {
  writeOutputFile(path, formatJobDescription(job), "the job description",
                  0600);
}

std::string jobOutputsProblem(const JobDescription &job) {
  const TrainerOptions &options = job.trainer;
  for (auto [flag, path] : outputFiles(options))
    if (!path->empty())
      if (std::string problem =
              outputPathProblem(*path, "--" + std::string(flag));
          !problem.empty())
        return problem;
  const CheckpointOptions &checkpoint = options.checkpoint;
  if (checkpoint.directory.empty() || checkpoint.every == 0)
    return "";
  std::string problem = checkpointDirectoryProblem(checkpoint.directory);
  if (problem.empty())
    return "";
  return "cannot save checkpoints in --checkpoint-dir '" +
         checkpoint.directory + "': " + problem +
         "; give --checkpoint-dir a directory this user can create or "
         "write in";
}

} // namespace pp::runtime
