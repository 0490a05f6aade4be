//===- CheckpointShardsTest.cpp - a checkpoint's tensor files -------------===//

#include "runtime/checkpoints/CheckpointShards.h"

#include "runtime/checkpoints/CheckpointState.h"
#include "runtime/checkpoints/CheckpointVerification.h"
#include "runtime/checkpoints/PretrainedWeights.h"

#include "ErrorOf.h"
#include "TemporaryFiles.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

using namespace pp::runtime;
namespace fs = std::filesystem;

namespace {

/// Expects `message` to hold each of `expected`.
void expectHolds(const std::string &message,
                 const std::vector<std::string> &expected) {
  for (const std::string &part : expected)
    EXPECT_NE(message.find(part), std::string::npos) << message;
}

/// A checkpoint after step 3 as two stages' writers (job ranks 0 and 2)
/// save one in format version 3: stage 0 holds "a" (2) and AdamW state for
/// it, stage 1 "b" (3) and its state; each tensor's values are its own.
struct ShardedCheckpoint {
  CheckpointRef ref;
  std::string file(CheckpointContent content, int64_t stage) const {
    return ref.path + "/" + shardFileName(content, stage);
  }
  nlohmann::json state() const { return readCheckpointState(ref); }
};

ShardedCheckpoint writeShardedCheckpoint(const std::string &dir) {
  const int64_t step = 3;
  std::string temporary = beginCheckpoint(dir, step);
  nlohmann::json files = nlohmann::json::object();
  auto write = [&](CheckpointContent content, int64_t stage,
                   const std::vector<std::pair<std::string, Shape>> &tensors,
                   const std::map<std::string, std::string> &metadata) {
    std::vector<TensorEntry> entries;
    for (const auto &[tensor, shape] : tensors)
      entries.push_back({tensor, shape});
    std::string name = shardFileName(content, stage);
    SafeTensorsWriter writer(temporary + "/" + name, entries, metadata);
    for (const auto &[tensor, shape] : tensors) {
      std::vector<float> values(numElements(shape),
                                static_cast<float>(tensor.size() + stage));
      writer.add(tensor, values.data());
    }
    writer.finish();
    files[name] = fileRecord(writer);
    files[name]["holds"] = contentName(content);
    files[name]["stage"] = stage;
    files[name]["writer_rank"] = 2 * stage;
  };
  for (int64_t stage : {0, 1}) {
    std::string tensor = stage == 0 ? "a" : "b";
    Shape shape = {stage + 2};
    write(CheckpointContent::Parameters, stage, {{tensor, shape}},
          {{"format", "pp-parameters"}});
    write(CheckpointContent::Optimizer, stage,
          {{tensor + "/exp_avg", shape}, {tensor + "/exp_avg_sq", shape}},
          {{"format", "pp-optimizer"},
           {"optimizer", "adamw"},
           {tensor + "/step", std::to_string(step + stage)}});
  }
  nlohmann::json state = {
      {"format_version", kCheckpointFormatVersion},
      {"step", step},
      {"consumed_samples", 12},
      {"seed", 1},
      {"data", nullptr},
      {"model",
       {{"tensors",
         {{{"name", "a"}, {"role", "parameter"}, {"shape", {2}}},
          {{"name", "b"}, {"role", "parameter"}, {"shape", {3}}}}}}},
      {"files", files}};
  writeFileSynced(temporary + "/" + kCheckpointStateFile, state.dump(2));
  commitCheckpoint(dir, temporary, step);
  return {{step, dir + "/" + checkpointName(step)}};
}

TEST(CheckpointShards, NamesEachStagesFiles) {
  EXPECT_EQ(shardFileName(CheckpointContent::Parameters, 3),
            "parameters-stage-00003.safetensors");
  EXPECT_EQ(shardFileName(CheckpointContent::Optimizer, 123456),
            "optimizer-stage-123456.safetensors");
}

TEST(CheckpointShards, ListsTheFilesStateJsonNames) {
  ShardedCheckpoint checkpoint =
      writeShardedCheckpoint(freshDirectory("pp-checkpoint-shards-test"));
  std::vector<CheckpointFile> parameters = checkpointFiles(
      checkpoint.state(), "state.json", CheckpointContent::Parameters);
  ASSERT_EQ(parameters.size(), 2u);
  EXPECT_EQ(parameters[1].name, "parameters-stage-00001.safetensors");
  EXPECT_EQ(parameters[1].stage, 1);
  EXPECT_EQ(parameters[1].writer, 2);
  EXPECT_TRUE(parameters[1].record.contains("tensors"));
  // A version 1 or 2 checkpoint has one file of each.
  nlohmann::json old = {{"format_version", 2}};
  std::vector<CheckpointFile> single =
      checkpointFiles(old, "state.json", CheckpointContent::Optimizer);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].name, kOptimizerFile);
  EXPECT_EQ(single[0].stage, -1);
  EXPECT_TRUE(single[0].record.is_null());
}

TEST(CheckpointShards, RefusesAStateThatListsFilesWrongly) {
  nlohmann::json state = {{"format_version", 3}};
  auto expectRefused = [&](const std::string &expected) {
    expectHolds(errorOf([&] {
                  checkpointFiles(state, "DIR/state.json",
                                  CheckpointContent::Parameters);
                }),
                {"'DIR/state.json'", expected});
  };
  expectRefused("has no \"files\" object");
  state["files"] = {{"../elsewhere.safetensors", {{"holds", "parameters"}}}};
  expectRefused("lists the file '../elsewhere.safetensors', not a tensor "
                "file's name");
  state["files"] = {{"p.safetensors", {{"holds", "gradients"}}}};
  expectRefused("without saying what it holds");
  state["files"] = {{"p.safetensors", {{"holds", "parameters"}, {"stage", 0}}}};
  expectRefused("lists the file 'p.safetensors' without a \"writer_rank\"");
  state["files"]["p.safetensors"]["writer_rank"] = -1;
  expectRefused("without a \"writer_rank\" that is a non-negative integer");
}

TEST(CheckpointShards, FindsEachTensorInItsStagesFile) {
  ShardedCheckpoint checkpoint =
      writeShardedCheckpoint(freshDirectory("pp-checkpoint-shards-test"));
  nlohmann::json state = checkpoint.state();
  CheckpointTensors parameters = CheckpointTensors::open(
      checkpoint.ref.path,
      checkpointFiles(state, "state.json", CheckpointContent::Parameters));
  EXPECT_EQ(parameters.fileOf("b")->path(),
            checkpoint.file(CheckpointContent::Parameters, 1));
  EXPECT_EQ(parameters.fileOf("missing"), nullptr);
  EXPECT_EQ(parameters.shapes(),
            (std::map<std::string, Shape>{{"a", {2}}, {"b", {3}}}));
  std::vector<float> b(3);
  parameters.read("b", b.data());
  EXPECT_EQ(b, std::vector<float>(3, 2.0f));
  expectHolds(errorOf([&] { parameters.read("c", b.data()); }),
              {"no file of the checkpoint holds 'c'"});
  EXPECT_EQ(parameters.description(),
            "the checkpoint files '" +
                checkpoint.file(CheckpointContent::Parameters, 0) + "' and '" +
                checkpoint.file(CheckpointContent::Parameters, 1) + "'");

  // Each step count is in its stage's file's metadata.
  CheckpointTensors optimizer = CheckpointTensors::open(
      checkpoint.ref.path,
      checkpointFiles(state, "state.json", CheckpointContent::Optimizer));
  EXPECT_EQ(optimizerStepCount(optimizer, "a"), 3);
  EXPECT_EQ(optimizerStepCount(optimizer, "b"), 4);
  EXPECT_EQ(optimizerStepCount(optimizer, "c"), std::nullopt);
}

TEST(CheckpointShards, RefusesAMissingFileNamingItsStageAndWriter) {
  ShardedCheckpoint checkpoint =
      writeShardedCheckpoint(freshDirectory("pp-checkpoint-shards-test"));
  fs::remove(checkpoint.file(CheckpointContent::Optimizer, 1));
  expectHolds(
      errorOf([&] { verifyCheckpoint(checkpoint.ref, checkpoint.state()); }),
      {"the checkpoint '" + checkpoint.ref.path +
           "' lacks the file 'optimizer-stage-00001.safetensors', stage 1's "
           "tensors, which state.json lists as written by rank 2",
       "--checkpoint-dir must be one directory that every machine shares",
       "Copy the file into it, or resume from another checkpoint"});
}

TEST(CheckpointShards, RefusesATensorTwoFilesHold) {
  std::string dir = freshDirectory("pp-checkpoint-shards-test");
  for (const char *name : {"x.safetensors", "y.safetensors"}) {
    SafeTensorsWriter writer(dir + "/" + name, {{"a", {1}}}, {});
    float value = 1;
    writer.add("a", &value);
    writer.finish();
  }
  expectHolds(errorOf([&] {
                CheckpointTensors::open(dir,
                                        {{"x.safetensors", 0, 0, nullptr},
                                         {"y.safetensors", 1, 1, nullptr}});
              }),
              {"the tensor 'a' is in '" + dir + "/x.safetensors' and in '" +
               dir + "/y.safetensors': a checkpoint holds each tensor once"});
}

TEST(CheckpointShards, VerifiesEveryStagesFile) {
  ShardedCheckpoint checkpoint =
      writeShardedCheckpoint(freshDirectory("pp-checkpoint-shards-test"));
  EXPECT_NO_THROW(verifyCheckpoint(checkpoint.ref, checkpoint.state()));
  // A byte of stage 1's parameters changed: its digest names the file.
  std::string path = checkpoint.file(CheckpointContent::Parameters, 1);
  std::string bytes = readBytes(path);
  bytes.back() ^= 0x01;
  writeBytes(path, bytes);
  expectHolds(
      errorOf([&] { verifyCheckpoint(checkpoint.ref, checkpoint.state()); }),
      {"the tensor 'b' in '" + path + "' is damaged"});
}

TEST(CheckpointShards, WeightsReadACheckpointsParameterFiles) {
  ShardedCheckpoint checkpoint =
      writeShardedCheckpoint(freshDirectory("pp-checkpoint-shards-test"));
  PretrainedWeights weights = PretrainedWeights::open(checkpoint.ref.path);
  EXPECT_EQ(weights.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(weights.description(),
            checkpoint.ref.path +
                "/state.json (2 parameter files of a pp checkpoint)");
  std::vector<float> a(2);
  weights.read("a", a.data());
  EXPECT_EQ(a, std::vector<float>(2, 1.0f));
}

} // namespace
