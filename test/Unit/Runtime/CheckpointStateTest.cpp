//===- CheckpointStateTest.cpp - what a resume reads of a checkpoint ------===//

#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/checkpoints/CheckpointState.h"

#include "TemporaryFiles.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace pp::runtime;

namespace {

/// A checkpoint directory whose state.json is `state`.
std::string checkpointWith(const std::string &state) {
  std::string directory = freshDirectory("pp-checkpoint-state-test");
  writeBytes(directory + "/" + kCheckpointStateFile, state);
  return directory;
}

/// A state.json with `fields` after the format version and the model.
std::string stateWith(const std::string &fields) {
  return R"({"format_version": 1, "model": {"tensors": [{"name": "w",
            "shape": [2, 3]}]}, )" +
         fields + "}";
}

/// The message readCheckpointState throws for `state`.
std::string refusal(const std::string &state) {
  try {
    readCheckpointState(checkpointWith(state));
  } catch (const std::runtime_error &error) {
    return error.what();
  }
  ADD_FAILURE() << "accepted " << state;
  return "";
}

constexpr char kValid[] =
    R"("step": 2, "consumed_samples": 16, "seed": 7, "data": {"kind": "synthetic"})";

TEST(CheckpointState, ReadsTheFieldsAResumeTakes) {
  CheckpointState state = readCheckpointState(checkpointWith(stateWith(kValid)));
  EXPECT_EQ(state.step, 2);
  EXPECT_EQ(state.consumedSamples, 16);
  EXPECT_EQ(state.seed, 7u);
  EXPECT_EQ(state.data, nlohmann::json({{"kind", "synthetic"}}));
  EXPECT_EQ(state.tensors, (std::map<std::string, Shape>{{"w", {2, 3}}}));
}

TEST(CheckpointState, ReadsTheLossScaleWithSkippedStepsZeroWhenAbsent) {
  auto lossScaleOf = [](const std::string &scale) {
    return readCheckpointState(
               checkpointWith(stateWith(std::string(kValid) +
                                        R"(, "loss_scale": )" + scale)))
        .lossScale;
  };
  std::optional<LossScaleState> saved =
      lossScaleOf(R"({"scale": 0.5, "clean_steps": 0, "skipped_steps": 17})");
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->scale, 0.5);
  EXPECT_EQ(saved->skippedSteps, 17);
  // A checkpoint written before skipped_steps was.
  saved = lossScaleOf(R"({"scale": 1024.0, "clean_steps": 3})");
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->cleanSteps, 3);
  EXPECT_EQ(saved->skippedSteps, 0);
  EXPECT_NE(refusal(stateWith(std::string(kValid) +
                              R"(, "loss_scale": {"scale": 2.0,
                                 "clean_steps": 0, "skipped_steps": -1})"))
                .find("the loss scale's skipped_steps -1"),
            std::string::npos);
}

TEST(CheckpointState, RefusesValuesOutOfRange) {
  // nlohmann's get<int64_t>() of 1e300 is undefined behaviour, which the
  // trainer's resume ran into before these checks.
  EXPECT_NE(refusal(stateWith(R"("step": 2, "consumed_samples": 1e300,
                               "seed": 7, "data": {})"))
                .find("has consumed_samples 1e+300, not a non-negative "
                      "integer"),
            std::string::npos);
  EXPECT_NE(refusal(stateWith(R"("step": 2, "consumed_samples": -1,
                               "seed": 7, "data": {})"))
                .find("consumed_samples -1"),
            std::string::npos);
  EXPECT_NE(refusal(stateWith(R"("step": 2, "consumed_samples": 0,
                               "seed": -1, "data": {})"))
                .find("the seed -1"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"format_version": 1, "model": {"tensors": [{"name":
                       "w", "shape": [2, 1e30]}]}, )" +
                    std::string(kValid) + "}")
                .find("the dimension of 'w' 1e+30"),
            std::string::npos);
}

TEST(CheckpointState, RefusesOtherFormatsAndMissingFields) {
  EXPECT_NE(refusal("{\"step\": ").find("is not of checkpoint format "
                                        "version 1"),
            std::string::npos);
  EXPECT_NE(refusal(stateWith(R"("step": 2)")).find("lacks a field"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"format_version": 1, "model": {"tensors": [{"name":
                       "w", "shape": [2]}, {"name": "w", "shape": [3]}]}, )" +
                    std::string(kValid) + "}")
                .find("lists the tensor 'w' twice"),
            std::string::npos);
}

TEST(CheckpointState, OptimizerStepCountsAreCounts) {
  std::string path =
      freshDirectory("pp-checkpoint-state-test") + "/optimizer.safetensors";
  {
    SafeTensorsWriter writer(path, {},
                             {{"a/step", "12"},
                              {"b/step", "x1"},
                              {"c/step", "-3"},
                              {"d/step", "99999999999999999999"}});
    writer.finish();
  }
  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(optimizerStepCount(file, "a"), 12);
  for (const char *name : {"b", "c", "d"})
    EXPECT_THROW(optimizerStepCount(file, name), std::runtime_error) << name;
  EXPECT_EQ(optimizerStepCount(file, "e"), std::nullopt)
      << "a parameter without a step count has taken no step";
}

} // namespace
