//===- TensorParallelTest.cpp - the trainer on a pp x dp x tp mesh --------===//
//
// The rank groups of a mesh with a tensor axis, and a one-stage linear
// model y = x . w + b whose stage functions (written here) hold a shard of
// w and sum their partial products over the frame's CollectiveGroup, as
// generated code does: trained at tp 2 it matches tp 1 step by step, its
// parameter files and checkpoints hold global tensors, and a checkpoint
// saved at one tp degree resumes at another.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/Trainer.h"

#include "TemporaryFiles.h"
#include "ThreadRanks.h"

#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/kernels/CollectivePlans.h"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <sstream>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

constexpr int64_t kFeatures = 4, kRows = 2;
/// The blocks of w's sharding in the current job (its stage functions
/// read it).
int64_t blocks = 1;

pp_tensor *newFloats(Shape shape) {
  pp_tensor *tensor = nullptr;
  pp_tensor_create(PP_DTYPE_F32, static_cast<int64_t>(shape.size()),
                   shape.data(), &tensor);
  return tensor;
}

const float *argFloats(pp_frame *frame, int64_t arg) {
  return static_cast<const float *>(pp_tensor_data(pp_frame_arg(frame, arg)));
}

float *floats(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

/// The group the stage functions' collectives over "tp" run on, as the
/// trainer keys it in the frame (at tp 1, where the package has no tensor
/// axis, its group of one under no axes).
CollectiveGroup &tensorGroup(pp_frame *frame) {
  const char *axes = frame->collectiveGroups.count("tp") ? "tp" : "";
  CollectiveGroup *group = collectiveGroup(frame, "the test's stage", axes);
  if (!group)
    throw std::logic_error(frame->error);
  return *group;
}

/// The global feature that this device's element `j` of w is.
int64_t feature(pp_frame *frame, int64_t j) {
  int64_t parts = tensorGroup(frame).size();
  int64_t block = kFeatures / blocks, piece = block / parts;
  return j / piece * block + tensorGroup(frame).rank() * piece + j % piece;
}

/// (x [2, 4], w (local), b [1], labels [2, 1]) -> (loss, saved r = y - labels,
/// saved x): y = x . w + b, the partial products of the device's features
/// summed in double over the group in group order.
void forward(pp_frame *frame) {
  const float *x = argFloats(frame, 0), *w = argFloats(frame, 1),
              *b = argFloats(frame, 2), *labels = argFloats(frame, 3);
  int64_t local = kFeatures / tensorGroup(frame).size();
  double partial[kRows] = {0, 0};
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < local; ++j)
      partial[i] += static_cast<double>(x[i * kFeatures + feature(frame, j)]) *
                    w[j];
  std::vector<double> all(kRows * tensorGroup(frame).size());
  tensorGroup(frame).allGather(partial, sizeof(partial), all.data(),
                               hostDevice().defaultQueue());
  pp_tensor *loss = newFloats({});
  pp_tensor *residual = newFloats({kRows});
  double sum = 0;
  for (int64_t i = 0; i < kRows; ++i) {
    double y = b[0];
    for (int64_t r = 0; r < tensorGroup(frame).size(); ++r)
      y += all[r * kRows + i];
    floats(residual)[i] = static_cast<float>(y) - labels[i];
    sum += static_cast<double>(floats(residual)[i]) * floats(residual)[i];
  }
  floats(loss)[0] = static_cast<float>(sum);
  pp_tensor *saved = newFloats({kRows, kFeatures});
  std::memcpy(floats(saved), x, sizeof(float) * kRows * kFeatures);
  pp_frame_result(frame, loss, 0);
  pp_frame_result(frame, residual, 1);
  pp_frame_result(frame, saved, 2);
}

/// (saved r, saved x, loss_scale) -> (gradient of w (local), of b).
void backward(pp_frame *frame) {
  const float *r = argFloats(frame, 0), *x = argFloats(frame, 1);
  float scale = argFloats(frame, 2)[0];
  int64_t local = kFeatures / tensorGroup(frame).size();
  pp_tensor *dw = newFloats({local}), *db = newFloats({1});
  for (int64_t j = 0; j < local; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < kRows; ++i)
      sum += static_cast<double>(r[i]) * x[i * kFeatures + feature(frame, j)];
    floats(dw)[j] = static_cast<float>(2 * sum * scale);
  }
  floats(db)[0] = static_cast<float>(2.0 * (r[0] + r[1]) * scale);
  pp_frame_result(frame, dw, 0);
  pp_frame_result(frame, db, 1);
}

TensorInfo tensor(const std::string &name, Role role, Shape shape) {
  return {name, role, PP_DTYPE_F32, std::move(shape)};
}

/// The linear model compiled for `tp` devices: w sharded over "tp" in
/// `blocks` blocks when tp > 1 (no tensor axis at tp 1, as pp-compile
/// emits it), b replicated.
Package linearPackage(int64_t tp) {
  Package package;
  package.directory = "(in memory)";
  std::vector<MeshAxis> axes = {{"pp", 1, AxisKind::Pipeline}};
  if (tp > 1)
    axes.push_back({"tp", tp, AxisKind::Tensor});
  package.mesh = DeviceMesh(axes);
  package.numStages = 1;
  package.stageRanks = {0};
  package.microbatchSize = kRows;
  package.lossKind = "mse";
  package.inputs = {tensor("x", Role::Input, {kRows, kFeatures})};
  package.labels = tensor("labels", Role::Label, {kRows, 1});
  ParameterInfo w{tensor("w", Role::Parameter, {kFeatures / tp}), 0};
  if (tp > 1)
    w.sharding = ParameterSharding{"tp", 0, blocks, tp, {kFeatures}};
  package.parameters = {w, {tensor("b", Role::Parameter, {1}), 0}};
  StageFunctionInfo f{"forward",
                      Phase::Forward,
                      {package.inputs[0], w.tensor,
                       tensor("b", Role::Parameter, {1}), package.labels},
                      {tensor("loss", Role::Loss, {}),
                       tensor("r", Role::Saved, {kRows}),
                       tensor("xs", Role::Saved, {kRows, kFeatures})},
                      {},
                      &forward,
                      std::nullopt};
  StageFunctionInfo bwd{"backward",
                        Phase::Backward,
                        {tensor("r", Role::Saved, {kRows}),
                         tensor("xs", Role::Saved, {kRows, kFeatures}),
                         tensor("loss_scale", Role::LossScale, {})},
                        {tensor("w", Role::Gradient, {kFeatures / tp}),
                         tensor("b", Role::Gradient, {1})},
                        {},
                        &backward,
                        std::nullopt};
  package.stages = {StageInfo{{f, bwd}}};
  package.indexGradientParts();
  return package;
}

/// Options of a short AdamW run from random weights with clipping active.
TrainerOptions trainingOptions(int64_t steps) {
  TrainerOptions options;
  options.steps = steps;
  options.microbatches = 2;
  options.seed = 7;
  options.init = ParameterInit::Random;
  options.optimizer.kind = "adamw";
  options.learningRate.peak = 0.05;
  options.maxGradNorm = 0.5;
  return options;
}

/// Trains linearPackage(tp) on a dp x tp job of thread ranks; returns job
/// rank 0's log.
std::string train(int64_t tp, int64_t dp, const TrainerOptions &options) {
  std::string log;
  std::mutex mutex;
  runRanks(static_cast<int>(tp * dp), [&](Communicator &world) {
    Package package = linearPackage(tp);
    RankGroups groups = connectRankGroups(package, world, dp, {});
    std::unique_ptr<Backend> backend = createCpuBackend(*groups.pipeline);
    std::ostringstream mine;
    pp::runtime::train(package, world, groups, *backend, options, mine);
    std::lock_guard<std::mutex> lock(mutex);
    if (world.rank() == 0)
      log = mine.str();
  });
  return log;
}

/// The lines of `log` that start with `prefix`s: the steps and the digest.
std::string linesOf(const std::string &log,
                    const std::vector<std::string> &prefixes = {
                        "step ", "params_sha256 "}) {
  std::istringstream lines(log);
  std::string line, kept;
  while (std::getline(lines, line))
    for (const std::string &prefix : prefixes)
      if (line.rfind(prefix, 0) == 0) {
        // Throughputs vary from run to run.
        kept += line.substr(0, line.rfind("  ", line.find(" samples/s"))) +
                "\n";
        break;
      }
  return kept;
}

TEST(TensorParallel, RankGroupsFollowTheMeshAndTheFrameGathersOverTp) {
  runRanks(8, [](Communicator &world) {
    Package package;
    package.mesh = DeviceMesh(
        {{"pp", 2, AxisKind::Pipeline}, {"tp", 2, AxisKind::Tensor}});
    RankGroups groups = connectRankGroups(package, world, 2, {});
    // pp,dp,tp: rank = pp * 4 + dp * 2 + tp.
    EXPECT_EQ(groups.mesh.describe(), "pp=2 x dp=2 x tp=2");
    int64_t rank = world.rank();
    EXPECT_EQ(groups.stage, rank / 4);
    EXPECT_EQ(groups.dataParallelRank, rank / 2 % 2);
    EXPECT_EQ(groups.tensorParallelRank, rank % 2);
    EXPECT_EQ(groups.tensorParallelSize, 2);
    EXPECT_EQ(groups.pipeline->rank(), rank / 4);
    EXPECT_EQ(groups.dataParallel->rank(), rank / 2 % 2);
    // Each group's ranks say who they are: the others differ only along
    // the group's axes.
    auto members = [](Communicator &group, int64_t rank) {
      std::vector<float> all(group.worldSize());
      float mine = static_cast<float>(rank);
      group.allGather(&mine, 1, all.data());
      return std::vector<int64_t>(all.begin(), all.end());
    };
    int64_t tp = rank % 2, dp = rank / 2 % 2, pp = rank / 4;
    EXPECT_EQ(members(*groups.pipeline, rank),
              (std::vector<int64_t>{dp * 2 + tp, 4 + dp * 2 + tp}));
    EXPECT_EQ(members(*groups.dataParallel, rank),
              (std::vector<int64_t>{pp * 4 + tp, pp * 4 + 2 + tp}));
    EXPECT_EQ(members(*groups.tensorParallel, rank),
              (std::vector<int64_t>{rank - tp, rank - tp + 1}));
    // The stage functions' group: bytes in tp order.
    CollectiveGroup &collectives = *groups.collectives;
    EXPECT_EQ(collectives.rank(), tp);
    EXPECT_EQ(collectives.size(), 2);
    char mine[3] = {static_cast<char>('a' + rank), 'x', 'y'};
    char all[6] = {};
    collectives.allGather(mine, sizeof(mine), all,
                          hostDevice().defaultQueue());
    std::string expected = {static_cast<char>('a' + rank - tp), 'x', 'y',
                            static_cast<char>('a' + rank - tp + 1), 'x', 'y'};
    EXPECT_EQ(std::string(all, 6), expected);
  });
}

TEST(TensorParallel, TrainingAtTp2MatchesTp1StepByStep) {
  std::string one = train(1, 1, trainingOptions(3));
  ASSERT_NE(linesOf(one).find("params_sha256"), std::string::npos) << one;
  for (int64_t b : {1, 2}) {
    blocks = b;
    std::string two = train(2, 1, trainingOptions(3));
    EXPECT_EQ(linesOf(two), linesOf(one)) << "blocks " << b;
    EXPECT_NE(two.find("mesh pp=1 x dp=1 x tp=2 (order pp,dp,tp): "
                       "0=(pp0,dp0,tp0) 1=(pp0,dp0,tp1)"),
              std::string::npos)
        << two;
  }
  blocks = 1;
}

TEST(TensorParallel, ParameterAndGradientFilesHoldGlobalTensors) {
  std::string directory = freshDirectory("pp-tp-files");
  std::map<std::string, std::string> files;
  for (int64_t tp : {1, 2}) {
    TrainerOptions options = trainingOptions(2);
    options.saveParamsPath = directory + "/params" + std::to_string(tp);
    options.saveGradsPath = directory + "/grads" + std::to_string(tp);
    train(tp, 1, options);
    std::map<std::string, ParameterValues> params =
        readParameterFile(options.saveParamsPath);
    EXPECT_EQ(params.at("w").shape, (Shape{kFeatures}));
    EXPECT_EQ(readParameterFile(options.saveGradsPath).at("w").shape,
              (Shape{kFeatures}));
    files["params" + std::to_string(tp)] =
        readBytes(options.saveParamsPath);
    files["grads" + std::to_string(tp)] =
        readBytes(options.saveGradsPath);
  }
  EXPECT_EQ(files["params1"], files["params2"]);
  EXPECT_EQ(files["grads1"], files["grads2"]);
}

TEST(TensorParallel, DataAndTensorParallelWithAShardedOptimizerMatchTp1) {
  TrainerOptions options = trainingOptions(3);
  options.zeroLevel = 1;
  std::string one = train(1, 2, options);
  options.metricsPath = freshDirectory("pp-tp-metrics") + "/metrics.jsonl";
  std::string two = train(2, 2, options);
  EXPECT_EQ(linesOf(two), linesOf(one));
  // Each rank's entry names its coordinates, tp included.
  std::string metrics = readBytes(options.metricsPath);
  for (const char *coordinate : {"\"tp\":0}", "\"tp\":1}", "\"dp\":1,"})
    EXPECT_NE(metrics.find(coordinate), std::string::npos) << metrics;
  EXPECT_NE(two.find("mesh pp=1 x dp=2 x tp=2 (order pp,dp,tp): "
                     "0=(pp0,dp0,tp0) 1=(pp0,dp0,tp1) 2=(pp0,dp1,tp0) "
                     "3=(pp0,dp1,tp1)"),
            std::string::npos)
      << two;
}

TEST(TensorParallel, ACheckpointResumesAtAnotherTpDegree) {
  std::string whole = linesOf(train(1, 1, trainingOptions(4)));
  for (auto [saving, resuming] : {std::pair{2, 1}, std::pair{1, 2}}) {
    TrainerOptions options = trainingOptions(2);
    options.checkpoint.directory = freshDirectory("pp-tp-checkpoint");
    options.checkpoint.every = 2;
    train(saving, 1, options);
    options.steps = 4;
    options.checkpoint.resume = true;
    std::string resumed = train(resuming, 1, options);
    EXPECT_NE(resumed.find("resumed from"), std::string::npos) << resumed;
    // Steps 3 and 4 and the final digest as one uninterrupted run.
    EXPECT_NE(whole.find(linesOf(resumed)), std::string::npos)
        << "saved at tp " << saving << ", resumed at tp " << resuming << "\n"
        << linesOf(resumed) << "\nwhole:\n"
        << whole;
  }
}

} // namespace
