//===- JobDescriptionTest.cpp - job description files round-trip ----------===//

#include "runtime/training/JobDescription.h"

#include "FieldCount.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>

using namespace pp::runtime;
using pp::runtime::test::fieldCount;

namespace {

// A new field must be written and read by JobDescription.cpp, and set to a
// value other than its default in nonDefaultJob() below; then update its
// struct's count here.
static_assert(fieldCount<JobDescription>() == 12, "JobDescription changed");
static_assert(fieldCount<InferenceJob>() == 3, "InferenceJob changed");
static_assert(fieldCount<TrainerOptions>() == 20, "TrainerOptions changed");
static_assert(fieldCount<LossScalerOptions>() == 2,
              "LossScalerOptions changed");
static_assert(fieldCount<ScheduleChoice>() == 3, "ScheduleChoice changed");
static_assert(fieldCount<OptimizerOptions>() == 7, "OptimizerOptions changed");
static_assert(fieldCount<LearningRateSchedule>() == 5,
              "LearningRateSchedule changed");
static_assert(fieldCount<DataOptions>() == 8, "DataOptions changed");
static_assert(fieldCount<CheckpointOptions>() == 4,
              "CheckpointOptions changed");
static_assert(fieldCount<WeightsOptions>() == 3, "WeightsOptions changed");
static_assert(fieldCount<WeightsNaming>() == 2, "WeightsNaming changed");

/// A job whose every field differs from its default.
JobDescription nonDefaultJob() {
  JobDescription job;
  job.packageDir = "/packages/gpt";
  job.device = "cuda";
  job.threads = 3;
  job.gemmEngine = "blis";
  job.dataParallel = 2;
  job.meshOrder = {"dp", "pp"};
  job.tensorCollectives = TensorCollectives::Tcp;
  job.linkIntegrity = LinkIntegrity::Always;
  job.timeoutSeconds = 17;
  job.cacheDir = "/cache";
  job.inference.emplace();
  job.inference->inputs = {"/in/a.pb", "/in/b.pb"};
  job.inference->outputsDir = "/out";
  job.inference->asGiven = true;
  TrainerOptions &options = job.trainer;
  options.schedule.kind = ScheduleKind::ZeroBubbleH1;
  options.schedule.file = "/table.txt";
  options.schedule.offloadActivations = true;
  options.tracePath = "/trace.json";
  options.microbatches = 4;
  options.steps = 9;
  options.seed = 18446744073709551615ull;
  options.metricsPath = "/metrics.jsonl";
  options.saveParamsPath = "/params.bin";
  options.saveGradsPath = "/grads.bin";
  options.profilePath = "/profile.json";
  options.maxGradNorm = 0.7;
  options.lossScaling = {1024.0, 7};
  options.optimizer.kind = "adamw";
  options.optimizer.momentum = 0.5f;
  options.optimizer.weightDecay = 0.1f;
  options.optimizer.beta1 = 0.8f;
  options.optimizer.beta2 = 0.99f;
  options.optimizer.epsilon = 1e-7f;
  options.optimizer.noDecay = "bias.*";
  options.learningRate.peak = 1e-7;
  options.learningRate.decay = LearningRateDecay::Cosine;
  options.learningRate.warmupSteps = 2;
  options.learningRate.decaySteps = 8;
  options.learningRate.minimum = 1e-9;
  options.init = ParameterInit::Random;
  options.zeroLevel = 3;
  options.gradReduceDtype = ReduceDtype::BF16;
  options.memoryPlan = false;
  options.data.path = "/train.tok";
  options.data.tokenWidth = 2;
  options.data.sequenceLength = 32;
  options.data.padSequence = true;
  options.data.inputName = "tokens";
  options.data.evalPath = "/eval.tok";
  options.data.evalEvery = 5;
  options.data.evalBatches = 3;
  options.checkpoint.directory = "/checkpoints";
  options.checkpoint.every = 2;
  options.checkpoint.keepLast = 1;
  options.checkpoint.resume = true;
  options.weights.path = "/weights";
  options.weights.naming.prefix = "model.";
  options.weights.naming.strict = false;
  options.weights.savePath = "/out.safetensors";
  return job;
}

/// Every leaf of `json` by its dotted key.
void leaves(const nlohmann::json &json, const std::string &key,
            std::map<std::string, nlohmann::json> &result) {
  if (json.is_object() && !json.empty()) {
    for (const auto &[name, value] : json.items())
      leaves(value, key.empty() ? name : key + "." + name, result);
    return;
  }
  result[key] = json;
}

std::map<std::string, nlohmann::json> leavesOf(const JobDescription &job) {
  std::map<std::string, nlohmann::json> result;
  leaves(nlohmann::json::parse(formatJobDescription(job)), "", result);
  return result;
}

/// The error parseJobDescription throws for `text`.
std::string parseError(const std::string &text) {
  try {
    parseJobDescription(text, "job.json");
  } catch (const std::runtime_error &failure) {
    return failure.what();
  }
  return "";
}

/// The non-default job's JSON, edited by `edit`.
std::string editedJob(void (*edit)(nlohmann::json &)) {
  nlohmann::json json = nlohmann::json::parse(formatJobDescription(nonDefaultJob()));
  edit(json);
  return json.dump();
}

TEST(JobDescriptionTest, EveryFieldSurvivesARoundTrip) {
  JobDescription job = nonDefaultJob();
  JobDescription back =
      parseJobDescription(formatJobDescription(job), "job.json");
  EXPECT_EQ(back.packageDir, job.packageDir);
  EXPECT_EQ(back.device, job.device);
  EXPECT_EQ(back.threads, job.threads);
  EXPECT_EQ(back.gemmEngine, job.gemmEngine);
  EXPECT_EQ(back.dataParallel, job.dataParallel);
  EXPECT_EQ(back.meshOrder, job.meshOrder);
  EXPECT_EQ(back.tensorCollectives, job.tensorCollectives);
  EXPECT_EQ(back.linkIntegrity, job.linkIntegrity);
  EXPECT_EQ(back.timeoutSeconds, job.timeoutSeconds);
  EXPECT_EQ(back.cacheDir, job.cacheDir);
  ASSERT_TRUE(back.inference);
  EXPECT_EQ(back.inference->inputs, job.inference->inputs);
  EXPECT_EQ(back.inference->outputsDir, job.inference->outputsDir);
  EXPECT_EQ(back.inference->asGiven, job.inference->asGiven);
  const TrainerOptions &a = back.trainer, &b = job.trainer;
  EXPECT_EQ(a.schedule.kind, b.schedule.kind);
  EXPECT_EQ(a.schedule.file, b.schedule.file);
  EXPECT_EQ(a.schedule.offloadActivations, b.schedule.offloadActivations);
  EXPECT_EQ(a.tracePath, b.tracePath);
  EXPECT_EQ(a.microbatches, b.microbatches);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.metricsPath, b.metricsPath);
  EXPECT_EQ(a.saveParamsPath, b.saveParamsPath);
  EXPECT_EQ(a.saveGradsPath, b.saveGradsPath);
  EXPECT_EQ(a.profilePath, b.profilePath);
  EXPECT_EQ(a.maxGradNorm, b.maxGradNorm);
  EXPECT_EQ(a.lossScaling.initialScale, b.lossScaling.initialScale);
  EXPECT_EQ(a.lossScaling.growthInterval, b.lossScaling.growthInterval);
  EXPECT_EQ(a.optimizer.kind, b.optimizer.kind);
  EXPECT_EQ(a.optimizer.momentum, b.optimizer.momentum);
  EXPECT_EQ(a.optimizer.weightDecay, b.optimizer.weightDecay);
  EXPECT_EQ(a.optimizer.beta1, b.optimizer.beta1);
  EXPECT_EQ(a.optimizer.beta2, b.optimizer.beta2);
  EXPECT_EQ(a.optimizer.epsilon, b.optimizer.epsilon);
  EXPECT_EQ(a.optimizer.noDecay, b.optimizer.noDecay);
  EXPECT_EQ(a.learningRate.peak, b.learningRate.peak);
  EXPECT_EQ(a.learningRate.decay, b.learningRate.decay);
  EXPECT_EQ(a.learningRate.warmupSteps, b.learningRate.warmupSteps);
  EXPECT_EQ(a.learningRate.decaySteps, b.learningRate.decaySteps);
  EXPECT_EQ(a.learningRate.minimum, b.learningRate.minimum);
  EXPECT_EQ(a.init, b.init);
  EXPECT_EQ(a.zeroLevel, b.zeroLevel);
  EXPECT_EQ(a.gradReduceDtype, b.gradReduceDtype);
  EXPECT_EQ(a.memoryPlan, b.memoryPlan);
  EXPECT_EQ(a.data.path, b.data.path);
  EXPECT_EQ(a.data.tokenWidth, b.data.tokenWidth);
  EXPECT_EQ(a.data.sequenceLength, b.data.sequenceLength);
  EXPECT_EQ(a.data.padSequence, b.data.padSequence);
  EXPECT_EQ(a.data.inputName, b.data.inputName);
  EXPECT_EQ(a.data.evalPath, b.data.evalPath);
  EXPECT_EQ(a.data.evalEvery, b.data.evalEvery);
  EXPECT_EQ(a.data.evalBatches, b.data.evalBatches);
  EXPECT_EQ(a.checkpoint.directory, b.checkpoint.directory);
  EXPECT_EQ(a.checkpoint.every, b.checkpoint.every);
  EXPECT_EQ(a.checkpoint.keepLast, b.checkpoint.keepLast);
  EXPECT_EQ(a.checkpoint.resume, b.checkpoint.resume);
  EXPECT_EQ(a.weights.path, b.weights.path);
  EXPECT_EQ(a.weights.naming.prefix, b.weights.naming.prefix);
  EXPECT_EQ(a.weights.naming.strict, b.weights.naming.strict);
  EXPECT_EQ(a.weights.savePath, b.weights.savePath);
  // What is read writes the same file again.
  EXPECT_EQ(formatJobDescription(back), formatJobDescription(job));
}

TEST(JobDescriptionTest, TheTestJobDiffersFromTheDefaultInEveryKey) {
  // The default job has no inference (null); the test job's inference keys
  // are compared with InferenceJob's defaults.
  std::map<std::string, nlohmann::json> given = leavesOf(nonDefaultJob()),
                                        plain = leavesOf(JobDescription());
  InferenceJob inference;
  plain["inference.inputs"] = inference.inputs;
  plain["inference.outputs_dir"] = inference.outputsDir;
  plain["inference.as_given"] = inference.asGiven;
  plain.erase("inference");
  EXPECT_EQ(given.size(), plain.size());
  for (const auto &[key, value] : given) {
    if (key == "format_version")
      continue;
    ASSERT_TRUE(plain.count(key)) << key;
    EXPECT_NE(value, plain[key]) << key << " keeps its default value";
  }
}

TEST(JobDescriptionTest, RefusesMalformedFilesNamingFileAndKey) {
  EXPECT_NE(parseError("{").find("job description 'job.json' is not valid "
                                 "JSON"),
            std::string::npos);
  EXPECT_NE(parseError(editedJob([](nlohmann::json &json) {
              json["format_version"] = 99;
            })).find("is of format version 99, but this pp-rank reads "
                     "version 1; write the job description again with "
                     "`pp-run --write-job FILE ...`"),
            std::string::npos);
  EXPECT_NE(parseError(editedJob([](nlohmann::json &json) {
              json["trainer"]["data"]["colour"] = "red";
            })).find("has the unknown key 'trainer.data.colour'"),
            std::string::npos);
  EXPECT_NE(parseError(editedJob([](nlohmann::json &json) {
              json["trainer"]["optimizer"].erase("beta2");
            })).find("lacks the key 'trainer.optimizer.beta2'"),
            std::string::npos);
  EXPECT_NE(parseError(editedJob([](nlohmann::json &json) {
              json["trainer"]["steps"] = "many";
            })).find("key 'trainer.steps' is \"many\", not an integer from 1"),
            std::string::npos);
  EXPECT_NE(parseError(editedJob([](nlohmann::json &json) {
              json["trainer"]["microbatches"] = 0;
            })).find("key 'trainer.microbatches' is 0, not an integer from 1"),
            std::string::npos);
  EXPECT_NE(parseError(editedJob([](nlohmann::json &json) {
              json["trainer"]["schedule"]["kind"] = "2f2b";
            })).find("key 'trainer.schedule.kind' is \"2f2b\", not one of "),
            std::string::npos);
  EXPECT_NE(parseError(editedJob([](nlohmann::json &json) {
              json["trainer"]["grad_reduce_dtype"] = "f16";
            })).find("key 'trainer.grad_reduce_dtype' is \"f16\", not one "
                     "of f32, bf16"),
            std::string::npos);
  EXPECT_NE(parseError(editedJob([](nlohmann::json &json) {
              json["device"] = "tpu";
            })).find("key 'device' is \"tpu\", not one of cpu, cuda"),
            std::string::npos);
}

} // namespace
