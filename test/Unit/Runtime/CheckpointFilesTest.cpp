//===- CheckpointFilesTest.cpp - safetensors files, checkpoint dirs -------===//

#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/checkpoints/PretrainedWeights.h"
#include "runtime/checkpoints/SafeTensors.h"

#include "TemporaryFiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <tuple>

using namespace pp::runtime;
namespace fs = std::filesystem;

namespace {

/// A fresh temporary directory.
std::string freshDirectory() {
  return ::freshDirectory("pp-checkpoint-test");
}

/// A safetensors file of `header` (JSON text) and `data`.
std::string safetensors(const std::string &header, const std::string &data) {
  std::string bytes;
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>(length >> (8 * i)));
  return bytes + header + data;
}

/// Expects SafeTensorsFile::open of `bytes` to throw a message holding
/// `expected`.
void expectRefused(const std::string &bytes, const std::string &expected) {
  std::string path = freshDirectory() + "/bad.safetensors";
  writeBytes(path, bytes);
  try {
    SafeTensorsFile::open(path);
    FAIL() << "accepted a file that should be refused: " << expected;
  } catch (const std::runtime_error &error) {
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos);
  }
}

TEST(SafeTensors, RoundTripsTensorsAndMetadata) {
  std::string path = freshDirectory() + "/t.safetensors";
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, -0.125f};
  std::vector<float> b = {42.0f};
  {
    SafeTensorsWriter writer(path, {{"layer.w", {2, 3}}, {"scalar", {}},
                                    {"empty", {0, 4}}},
                             {{"step", "7"}});
    writer.add("layer.w", a.data());
    writer.add("scalar", b.data());
    writer.add("empty", nullptr);
    writer.finish();
  }
  // The data starts at a multiple of 8.
  std::string bytes = readBytes(path);
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  EXPECT_EQ((8 + length) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + length + 7 * 4);

  SafeTensorsFile file = SafeTensorsFile::open(path);
  ASSERT_EQ(file.entries().size(), 3u);
  EXPECT_EQ(file.entries()[0].name, "layer.w");
  EXPECT_EQ(file.find("layer.w")->shape, (Shape{2, 3}));
  EXPECT_EQ(file.find("scalar")->shape, Shape{});
  EXPECT_EQ(file.find("empty")->shape, (Shape{0, 4}));
  EXPECT_EQ(file.find("missing"), nullptr);
  EXPECT_EQ(file.metadata().at("step"), "7");
  std::vector<float> readA(6), readB(1);
  file.read("layer.w", readA.data());
  file.read("scalar", readB.data());
  EXPECT_EQ(readA, a);
  EXPECT_EQ(readB, b);
  EXPECT_THROW(file.read("missing", readB.data()), std::runtime_error);
}

TEST(SafeTensors, ReadsHalfBfloatAndDoubleTensorsAsFloat) {
  // F16 1.5, -2, the smallest and the largest subnormal (2^-24 and
  // 1023 x 2^-24), infinity and a NaN; BF16 1.5, -2;
  // F64 0.1 (rounded to the nearest float); I64 7 (not a float).
  uint16_t half[] = {0x3e00, 0xc000, 0x0001, 0x03ff, 0x7c00, 0x7e00};
  uint16_t bfloat[] = {0x3fc0, 0xc000};
  double wide = 0.1;
  int64_t integer = 7;
  std::string data(reinterpret_cast<const char *>(half), sizeof(half));
  data.append(reinterpret_cast<const char *>(bfloat), sizeof(bfloat));
  data.append(reinterpret_cast<const char *>(&wide), sizeof(wide));
  data.append(reinterpret_cast<const char *>(&integer), sizeof(integer));
  std::string path = freshDirectory() + "/t.safetensors";
  writeBytes(path,
             safetensors(
                 R"({"h":{"dtype":"F16","shape":[6],"data_offsets":[0,12]},)"
                 R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[12,16]},)"
                 R"("d":{"dtype":"F64","shape":[],"data_offsets":[16,24]},)"
                 R"("i":{"dtype":"I64","shape":[],"data_offsets":[24,32]}})",
                 data));
  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(file.find("b")->dtype, "BF16");
  std::vector<float> h(6), b(2);
  float d = 0, i = 0;
  file.read("h", h.data());
  file.read("b", b.data());
  file.read("d", &d);
  EXPECT_EQ(std::vector<float>(h.begin(), h.end() - 1),
            (std::vector<float>{1.5f, -2.0f, std::ldexp(1.0f, -24),
                                std::ldexp(1023.0f, -24), INFINITY}));
  EXPECT_TRUE(std::isnan(h.back()));
  EXPECT_EQ(b, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(d, 0.1f);
  try {
    file.read("i", &i);
    FAIL() << "converted an I64 tensor";
  } catch (const std::runtime_error &error) {
    EXPECT_NE(std::string(error.what()).find("'i' is I64, which pp cannot "
                                             "convert to the model's f32"),
              std::string::npos)
        << error.what();
  }
}

TEST(PretrainedWeights, ReadsAShardedCheckpointThroughItsIndex) {
  std::string directory = freshDirectory();
  float one = 1.0f, two = 2.0f;
  for (auto [file, name, value] :
       {std::tuple{"a.safetensors", "x", &one},
        std::tuple{"b.safetensors", "y", &two}}) {
    SafeTensorsWriter writer(directory + "/" + file, {{name, {1}}}, {});
    writer.add(name, value);
    writer.finish();
  }
  writeBytes(directory + "/model.safetensors.index.json",
             R"({"metadata":{},"weight_map":{"x":"a.safetensors",)"
             R"("y":"b.safetensors"}})");
  PretrainedWeights weights = PretrainedWeights::open(directory);
  EXPECT_EQ(weights.names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_NE(weights.description().find("(2 shards)"), std::string::npos);
  float read = 0;
  weights.read("y", &read);
  EXPECT_EQ(read, 2.0f);
  for (const char *outside : {"../b.safetensors", "/tmp/b.safetensors"}) {
    writeBytes(directory + "/model.safetensors.index.json",
               std::string(R"({"weight_map":{"x":"a.safetensors","y":")") +
                   outside + "\"}}");
    try {
      PretrainedWeights::open(directory);
      FAIL() << "read a shard outside the index's folder: " << outside;
    } catch (const std::runtime_error &error) {
      EXPECT_NE(std::string(error.what())
                    .find("not a file name beside the index"),
                std::string::npos)
          << error.what();
    }
  }
  writeBytes(directory + "/model.safetensors.index.json",
             R"({"weight_map":{"x":"b.safetensors"}})");
  EXPECT_THROW(PretrainedWeights::open(directory), std::runtime_error);
}

TEST(PretrainedWeights, BindsATiedWeightUnderItsOtherNameByItsShape) {
  std::string path = freshDirectory() + "/model.safetensors";
  std::vector<float> zeros(12);
  {
    SafeTensorsWriter writer(
        path, {{"wte.weight", {4, 3}}, {"ln.weight", {3}}}, {});
    writer.add("wte.weight", zeros.data());
    writer.add("ln.weight", zeros.data());
    writer.finish();
  }
  PretrainedWeights weights = PretrainedWeights::open(path);
  // save_pretrained dropped the tie's target, which the model is named by.
  WeightsBinding binding = bindWeights(
      weights, {{"lm_head.weight", {4, 3}}, {"ln.weight", {3}}}, {});
  EXPECT_EQ(binding.fileNames.at("lm_head.weight"), "wte.weight");
  EXPECT_EQ(binding.fileNames.at("ln.weight"), "ln.weight");
  ASSERT_EQ(binding.renamed.size(), 1u);
  // No name in common: no tie guessed, every tensor reported.
  try {
    bindWeights(weights, {{"a.weight", {4, 3}}, {"b.weight", {3}}}, {});
    FAIL() << "bound weights that share no name with the model";
  } catch (const std::runtime_error &error) {
    EXPECT_NE(std::string(error.what())
                  .find("missing (the model's, not in the file): "
                        "'a.weight', 'b.weight'"),
              std::string::npos)
        << error.what();
  }
  // Not strict, a missing tensor keeps the model's value.
  WeightsBinding partial = bindWeights(
      weights, {{"ln.weight", {3}}, {"other", {5}}}, {"", false});
  EXPECT_EQ(partial.fileNames.size(), 1u);
  EXPECT_EQ(partial.missing, std::vector<std::string>{"other"});
  // A model name without the prefix is looked up as it is: two model
  // tensors must not read one file tensor.
  try {
    bindWeights(weights, {{"ln.weight", {3}}, {"p.ln.weight", {3}}},
                {"p.", false});
    FAIL() << "bound one file tensor to two model tensors";
  } catch (const std::runtime_error &error) {
    EXPECT_NE(std::string(error.what())
                  .find("repeated: 'ln.weight' would give both 'ln.weight' "
                        "and 'p.ln.weight'"),
              std::string::npos)
        << error.what();
  }
}

TEST(SafeTensors, ReadsTensorsStoredInAnotherOrder) {
  // Offsets need not follow the header's order.
  float values[] = {1.0f, 2.0f};
  std::string data(reinterpret_cast<const char *>(values), sizeof(values));
  std::string path = freshDirectory() + "/t.safetensors";
  writeBytes(path,
             safetensors(
                 R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                 R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 data));
  SafeTensorsFile file = SafeTensorsFile::open(path);
  float a = 0, b = 0;
  file.read("a", &a);
  file.read("b", &b);
  EXPECT_EQ(a, 2.0f);
  EXPECT_EQ(b, 1.0f);
}

TEST(SafeTensors, WritesBfloatAndHalfTensorsRoundedToNearestEven) {
  std::string path = freshDirectory() + "/t.safetensors";
  // 1 + 2^-9 is a tie between two bf16 values: it rounds to the even one,
  // 1; 1 + 3 x 2^-9 rounds up. 65520 is beyond f16's largest: infinity.
  std::vector<float> values = {1.0f + 0x1p-9f, 1.0f + 3 * 0x1p-9f, 65520.0f};
  {
    SafeTensorsWriter writer(
        path, {{"b", {3}, "BF16"}, {"h", {3}, "F16"}, {"f", {3}, "F32"}}, {});
    writer.add("b", values.data());
    writer.add("h", values.data());
    writer.add("f", values.data());
    writer.finish();
  }
  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(file.find("b")->dtype, "BF16");
  EXPECT_EQ(file.find("h")->dtype, "F16");
  std::vector<float> b(3), h(3), f(3);
  file.read("b", b.data());
  file.read("h", h.data());
  file.read("f", f.data());
  EXPECT_EQ(b, (std::vector<float>{1.0f, 1.0f + 0x1p-7f, 65536.0f}));
  EXPECT_EQ(h[0], 1.0f + 0x1p-9f) << "f16 holds it exactly";
  EXPECT_EQ(h[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f, values);
  EXPECT_THROW(SafeTensorsWriter(path, {{"x", {1}, "F64"}}, {}),
               std::runtime_error);
}

TEST(SafeTensors, WriterRefusesMisuse) {
  std::string path = freshDirectory() + "/t.safetensors";
  EXPECT_THROW(SafeTensorsWriter(path, {{"x", {1}}, {"x", {2}}}, {}),
               std::runtime_error);
  EXPECT_THROW(SafeTensorsWriter(path, {{"__metadata__", {1}}}, {}),
               std::runtime_error);
  float value = 1;
  SafeTensorsWriter writer(path, {{"x", {1}}, {"y", {1}}}, {});
  EXPECT_THROW(writer.add("y", &value), std::runtime_error);
  writer.add("x", &value);
  EXPECT_THROW(writer.finish(), std::runtime_error);
  EXPECT_THROW(SafeTensorsWriter("/nonexistent-dir/t.safetensors", {}, {}),
               std::runtime_error);
}

TEST(SafeTensors, RefusesMalformedFiles) {
  std::string four(4, '\0'), eight(8, '\0');
  auto one = [](const std::string &fields) {
    return "{\"x\":{" + fields + "}}";
  };
  std::string good = R"("dtype":"F32","shape":[1],"data_offsets":[0,4])";
  expectRefused("abc", "fewer than the 8 of the header length");
  expectRefused(safetensors("{}", "").substr(0, 8) + "{",
                "runs past the end of the file");
  expectRefused(safetensors("{\"x\":", ""), "the header is not JSON");
  expectRefused(safetensors("[1,2]", ""), "not a JSON object");
  expectRefused(safetensors("{\"x\":1,\"x\":2}", ""),
                "repeats the key 'x'");
  expectRefused(safetensors(one(R"("dtype":"F32","shape":[1])"), four),
                "not an object of exactly dtype, shape and data_offsets");
  expectRefused(safetensors(one(good + R"(,"extra":1)"), four),
                "not an object of exactly dtype, shape and data_offsets");
  // One tensor 'x' of these fields over these data bytes.
  struct Case {
    const char *fields;
    std::string data;
    const char *expected;
  };
  for (const Case &bad : {
           Case{R"("dtype":"F17","shape":[1],"data_offsets":[0,2])", "ab",
                "has dtype \"F17\", which pp does not know"},
           Case{R"("dtype":"BF16","shape":[2],"data_offsets":[0,2])", "ab",
                "BF16 needs 4 bytes but its data_offsets span 2"},
           Case{R"("dtype":"F32","shape":[-1],"data_offsets":[0,4])", four,
                "has the dimension -1"},
           Case{R"("dtype":"F32","shape":[1.5],"data_offsets":[0,4])", four,
                "has the dimension 1.5"},
           Case{R"("dtype":"F32","shape":{},"data_offsets":[0,4])", four,
                "shape that is not an array"},
           Case{R"("dtype":"F32","shape":[1],"data_offsets":[0])", four,
                "not two non-negative integers"},
           Case{R"("dtype":"F32","shape":[1],"data_offsets":[0,8])", four,
                "outside the 4 data bytes"},
           Case{R"("dtype":"F32","shape":[2],"data_offsets":[0,4])", four,
                "needs 8 bytes but its data_offsets span 4"},
           Case{R"("dtype":"F32","shape":[4611686018427387904,4],)"
                R"("data_offsets":[0,4])",
                four, "needs more bytes"},
           Case{R"("dtype":"F32","shape":[1],"data_offsets":[4,8])", eight,
                "(a hole)"},
           Case{good.c_str(), eight, "trailing bytes"},
       })
    expectRefused(safetensors(one(bad.fields), bad.data), bad.expected);
  expectRefused(
      safetensors(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                  four),
      "(they overlap)");
  expectRefused(safetensors(R"({"__metadata__":[]})", ""),
                "__metadata__ is not an object");
  expectRefused(safetensors(R"({"__metadata__":{"step":3}})", ""),
                "__metadata__ entry 'step' is not a string");
  std::string directory = freshDirectory();
  EXPECT_THROW(SafeTensorsFile::open(directory), std::runtime_error);
  EXPECT_THROW(SafeTensorsFile::open(directory + "/missing"),
               std::runtime_error);
}

/// Writes a checkpoint of `step` into `dir` as the trainer does (a state
/// file, then the commit); returns its path.
std::string saveCheckpoint(const std::string &dir, int64_t step) {
  std::string temporary = beginCheckpoint(dir, step);
  writeBytes(temporary + "/parameters.safetensors", "data");
  writeFileSynced(temporary + "/" + kCheckpointStateFile,
                  "{\"step\": " + std::to_string(step) + "}");
  return commitCheckpoint(dir, temporary, step);
}

TEST(CheckpointDirectory, NamesStepsWithEightDigits) {
  EXPECT_EQ(checkpointName(3), "step-00000003");
  EXPECT_EQ(checkpointName(123456789), "step-123456789");
}

TEST(CheckpointDirectory, CommitsAtomicallyAndFindsTheNewest) {
  std::string dir = freshDirectory() + "/checkpoints";
  EXPECT_TRUE(completeCheckpoints(dir).empty());
  EXPECT_FALSE(newestCheckpoint(dir));
  std::string temporary = beginCheckpoint(dir, 5);
  EXPECT_EQ(fs::path(temporary).filename().string().rfind(
                ".tmp-step-00000005-", 0),
            0u);
  // Until committed, it is not a checkpoint.
  writeFileSynced(temporary + "/" + kCheckpointStateFile, "{\"step\": 5}");
  EXPECT_FALSE(newestCheckpoint(dir));
  std::string path = commitCheckpoint(dir, temporary, 5);
  EXPECT_EQ(path, dir + "/step-00000005");
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_EQ(readBytes(path + "/" + kCheckpointStateFile), "{\"step\": 5}");
  saveCheckpoint(dir, 12);
  saveCheckpoint(dir, 9);
  ASSERT_EQ(newestCheckpoint(dir)->step, 12);
  EXPECT_EQ(newestCheckpoint(dir)->path, dir + "/step-00000012");
  std::vector<CheckpointRef> all = completeCheckpoints(dir);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].step, 5);
  EXPECT_EQ(all[1].step, 9);
  // Saving a step again replaces it.
  saveCheckpoint(dir, 9);
  EXPECT_EQ(completeCheckpoints(dir).size(), 3u);
}

TEST(CheckpointDirectory, IgnoresIncompleteCheckpoints) {
  std::string dir = freshDirectory();
  saveCheckpoint(dir, 2);
  // Newer directories without a state file, with a truncated one, or with
  // one naming another step, and other names, are no checkpoints.
  fs::create_directories(dir + "/step-00000007");
  fs::create_directories(dir + "/step-00000008");
  writeBytes(dir + "/step-00000008/state.json", "{\"step\": 8");
  fs::create_directories(dir + "/step-00000009");
  writeBytes(dir + "/step-00000009/state.json", "{\"step\": 3}");
  fs::create_directories(dir + "/step-10");
  writeBytes(dir + "/step-10/state.json", "{\"step\": 10}");
  writeBytes(dir + "/step-00000011", "{\"step\": 11}");
  fs::create_directories(dir + "/.tmp-step-00000012-abc");
  writeBytes(dir + "/.tmp-step-00000012-abc/state.json", "{\"step\": 12}");
  ASSERT_EQ(completeCheckpoints(dir).size(), 1u);
  EXPECT_EQ(newestCheckpoint(dir)->step, 2);
}

TEST(CheckpointDirectory, NextSaveRemovesStaleTemporaries) {
  std::string dir = freshDirectory();
  fs::create_directories(dir + "/.tmp-step-00000004-dead/nested");
  writeBytes(dir + "/.tmp-step-00000004-dead/nested/x", "partial");
  writeBytes(dir + "/unrelated", "kept");
  saveCheckpoint(dir, 5);
  EXPECT_FALSE(fs::exists(dir + "/.tmp-step-00000004-dead"));
  EXPECT_TRUE(fs::exists(dir + "/unrelated"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto &entry : fs::directory_iterator(dir))
    ++entries;
  EXPECT_EQ(entries, 2u);
}

TEST(CheckpointDirectory, KeepsTheNewest) {
  std::string dir = freshDirectory();
  for (int64_t step : {1, 2, 3, 4})
    saveCheckpoint(dir, step);
  fs::create_directories(dir + "/step-00000000");
  keepNewestCheckpoints(dir, 2);
  std::vector<CheckpointRef> kept = completeCheckpoints(dir);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].step, 3);
  EXPECT_EQ(kept[1].step, 4);
  // An incomplete directory is not a checkpoint: keep-last leaves it.
  EXPECT_TRUE(fs::exists(dir + "/step-00000000"));
  EXPECT_FALSE(fs::exists(dir + "/step-00000001"));
  keepNewestCheckpoints(dir, 5);
  EXPECT_EQ(completeCheckpoints(dir).size(), 2u);
}

} // namespace
