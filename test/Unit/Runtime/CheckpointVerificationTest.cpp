//===- CheckpointVerificationTest.cpp - checked checkpoints ---------------===//

#include "runtime/checkpoints/CheckpointVerification.h"

#include "TemporaryFiles.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <stdexcept>

using namespace pp::runtime;
namespace fs = std::filesystem;

namespace {

std::string freshDirectory() {
  return ::freshDirectory("pp-checkpoint-verification-test");
}

/// Expects `run` to throw std::runtime_error whose message holds each of
/// `expected`.
template <typename Run>
void expectThrows(Run run, const std::vector<std::string> &expected) {
  try {
    run();
    FAIL() << "no error; expected: " << expected.front();
  } catch (const std::runtime_error &error) {
    for (const std::string &part : expected)
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
          << error.what();
  }
}

/// A checkpoint as the trainer saved one in format version 2, all stages'
/// tensors in one file each (CheckpointShardsTest has version 3's files
/// per stage): parameters "w" (2x2), "b" (2) and the constant "mask" (2,
/// holding -inf), AdamW state for w and b.
struct Checkpoint {
  std::string dir;
  CheckpointRef ref;
  std::string parameters() const { return ref.path + "/" + kParametersFile; }
  std::string optimizer() const { return ref.path + "/" + kOptimizerFile; }
};

Checkpoint writeCheckpoint(const std::string &dir, int64_t step) {
  std::string temporary = beginCheckpoint(dir, step);
  nlohmann::json files;
  auto write = [&](const char *name,
                   const std::vector<std::pair<std::string, Shape>> &tensors,
                   const std::map<std::string, std::string> &metadata) {
    std::vector<TensorEntry> entries;
    for (const auto &[tensor, shape] : tensors)
      entries.push_back({tensor, shape});
    SafeTensorsWriter writer(temporary + "/" + name, entries, metadata);
    for (const auto &[tensor, shape] : tensors) {
      std::vector<float> values(numElements(shape), 0.5f + step);
      if (tensor == "mask")
        values[1] = -std::numeric_limits<float>::infinity();
      writer.add(tensor, values.data());
    }
    writer.finish();
    files[name] = fileRecord(writer);
  };
  std::string steps = std::to_string(step);
  write(kParametersFile, {{"b", {2}}, {"mask", {2}}, {"w", {2, 2}}},
        {{"format", "pp-parameters"}, {"step", steps}});
  write(kOptimizerFile,
        {{"b/exp_avg", {2}},
         {"b/exp_avg_sq", {2}},
         {"w/exp_avg", {2, 2}},
         {"w/exp_avg_sq", {2, 2}}},
        {{"format", "pp-optimizer"},
         {"optimizer", "adamw"},
         {"step", steps},
         {"b/step", steps},
         {"w/step", steps}});
  nlohmann::json state = {{"format_version", 2},
                          {"step", step},
                          {"consumed_samples", 4 * step},
                          {"model",
                           {{"tensors",
                             {{{"name", "b"}, {"role", "parameter"}},
                              {{"name", "mask"}, {"role", "constant"}},
                              {{"name", "w"}, {"role", "parameter"}}}}}},
                          {"files", files}};
  writeFileSynced(temporary + "/" + kCheckpointStateFile, state.dump(2));
  commitCheckpoint(dir, temporary, step);
  return {dir, {step, dir + "/" + checkpointName(step)}};
}

/// Runs every check on `checkpoint`, as a resume does.
void verify(const Checkpoint &checkpoint) {
  verifyCheckpoint(checkpoint.ref, readCheckpointState(checkpoint.ref));
}

/// Rewrites the safetensors file `path` through `edit` of its header
/// (JSON) and data.
template <typename Edit> void editFile(const std::string &path, Edit edit) {
  std::string bytes = readBytes(path);
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, length));
  std::string data = bytes.substr(8 + length);
  edit(header, data);
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  length = text.size();
  std::string prefix(8, '\0');
  std::memcpy(prefix.data(), &length, 8);
  writeBytes(path, prefix + text + data);
}

/// Writes `value` at element `element` of tensor `name` in `path`.
void setValue(const std::string &path, const std::string &name, int64_t element,
              float value) {
  editFile(path, [&](nlohmann::json &header, std::string &data) {
    uint64_t begin = header[name]["data_offsets"][0].get<uint64_t>();
    std::memcpy(data.data() + begin + 4 * element, &value, 4);
  });
}

/// Records the digests of `checkpoint`'s files as they are now, so that
/// only the value checks see an edit.
void rehash(const Checkpoint &checkpoint) {
  std::string statePath = checkpoint.ref.path + "/" + kCheckpointStateFile;
  nlohmann::json state = nlohmann::json::parse(readBytes(statePath));
  for (const char *name : {kParametersFile, kOptimizerFile}) {
    SafeTensorsFile file =
        SafeTensorsFile::open(checkpoint.ref.path + "/" + name);
    nlohmann::json tensors = nlohmann::json::object();
    for (const TensorEntry &entry : file.entries())
      tensors[entry.name] = file.sha256(entry.name);
    state["files"][name] = {
        {"metadata_sha256", metadataDigest(file.metadata())},
        {"tensors", tensors}};
  }
  writeBytes(statePath, state.dump());
}

TEST(CheckpointVerification, WriterDigestsAreTheFilesDigests) {
  std::string path = freshDirectory() + "/t.safetensors";
  std::vector<float> a = {1, 2, 3}, b = {4};
  SafeTensorsWriter writer(path, {{"a", {3}}, {"b", {1}}, {"e", {0}}}, {});
  writer.add("a", a.data());
  writer.add("b", b.data());
  writer.add("e", nullptr);
  writer.finish();
  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(writer.digests().size(), 3u);
  for (const char *name : {"a", "b", "e"})
    EXPECT_EQ(writer.digests().at(name), file.sha256(name)) << name;
  EXPECT_EQ(file.bytes("a").size(), 12u);
  // The SHA-256 of no bytes.
  EXPECT_EQ(file.sha256("e"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b"
                              "934ca495991b7852b855");
  EXPECT_THROW(file.sha256("missing"), std::runtime_error);
}

TEST(CheckpointVerification, AcceptsASoundCheckpoint) {
  // The constant mask's -inf is no corruption.
  Checkpoint checkpoint = writeCheckpoint(freshDirectory(), 3);
  EXPECT_NO_THROW(verify(checkpoint));
}

TEST(CheckpointVerification, RefusesAFlippedByteNamingTheTensor) {
  Checkpoint checkpoint = writeCheckpoint(freshDirectory(), 3);
  editFile(checkpoint.parameters(),
           [](nlohmann::json &header, std::string &data) {
             data[header["w"]["data_offsets"][0].get<size_t>() + 5] ^= 0x10;
           });
  expectThrows([&] { verify(checkpoint); },
               {"the tensor 'w' in '" + checkpoint.parameters() +
                    "' is damaged: the SHA-256 of its bytes is",
                "state.json records"});
}

TEST(CheckpointVerification, RefusesSwappedDataOffsetsOfSameSizeTensors) {
  Checkpoint checkpoint = writeCheckpoint(freshDirectory(), 3);
  // exp_avg and exp_avg_sq of b differ in value once edited; swap them.
  setValue(checkpoint.optimizer(), "b/exp_avg", 0, 7.0f);
  rehash(checkpoint);
  editFile(checkpoint.optimizer(), [](nlohmann::json &header, std::string &) {
    std::swap(header["b/exp_avg"]["data_offsets"],
              header["b/exp_avg_sq"]["data_offsets"]);
  });
  expectThrows([&] { verify(checkpoint); },
               {"is damaged", "its data_offsets point at the bytes of"});
}

TEST(CheckpointVerification, RefusesEditedMetadataAndUnrecordedTensors) {
  Checkpoint checkpoint = writeCheckpoint(freshDirectory(), 3);
  editFile(checkpoint.optimizer(), [](nlohmann::json &header, std::string &) {
    header["__metadata__"]["w/step"] = "2";
  });
  expectThrows([&] { verify(checkpoint); },
               {"the metadata of '" + checkpoint.optimizer() +
                "' (format, step counts) is damaged"});
  SafeTensorsFile file = SafeTensorsFile::open(checkpoint.parameters());
  nlohmann::json record = {{"metadata_sha256", metadataDigest(file.metadata())},
                           {"tensors", {{"b", file.sha256("b")}}}};
  expectThrows([&] { verifyDigests(file, record); },
               {"holds the tensor 'mask', for which state.json records no "
                "digest"});
  record["tensors"] = {{"b", file.sha256("b")},
                       {"mask", file.sha256("mask")},
                       {"w", file.sha256("w")},
                       {"v", file.sha256("w")}};
  expectThrows([&] { verifyDigests(file, record); },
               {"lacks the tensor 'v', which state.json records"});
  expectThrows([&] { verifyDigests(file, nlohmann::json()); },
               {"state.json records no digests of"});
}

TEST(CheckpointVerification, RefusesNonFiniteValuesNamingTheElement) {
  Checkpoint checkpoint = writeCheckpoint(freshDirectory(), 3);
  // With the digest recomputed, only the value check can see the NaN.
  setValue(checkpoint.parameters(), "w", 2, std::nanf(""));
  setValue(checkpoint.parameters(), "w", 3, INFINITY);
  rehash(checkpoint);
  expectThrows([&] { verify(checkpoint); },
               {"the tensor 'w' in '" + checkpoint.parameters() +
                "' holds nan at element 2 ([1, 0] of shape 2x2; 2 of "
                "its 4 values are not finite)"});
  // Without it, the digest does.
  setValue(checkpoint.parameters(), "w", 3, 1.0f);
  expectThrows([&] { verify(checkpoint); }, {"'w'", "is damaged"});

  Checkpoint moments = writeCheckpoint(freshDirectory(), 3);
  setValue(moments.optimizer(), "w/exp_avg", 1, -INFINITY);
  rehash(moments);
  expectThrows([&] { verify(moments); },
               {"'w/exp_avg'", "holds -inf at element 1 ([0, 1] of shape "
                               "2x2; 1 of its 4 values is not finite)"});
}

TEST(CheckpointVerification, RefusesNegativeSecondMoments) {
  Checkpoint checkpoint = writeCheckpoint(freshDirectory(), 3);
  // -0 is an average of squares that underflowed: accepted.
  setValue(checkpoint.optimizer(), "b/exp_avg_sq", 0, -0.0f);
  rehash(checkpoint);
  EXPECT_NO_THROW(verify(checkpoint));
  setValue(checkpoint.optimizer(), "b/exp_avg_sq", 1, -0.25f);
  rehash(checkpoint);
  expectThrows([&] { verify(checkpoint); },
               {"the tensor 'b/exp_avg_sq' in '" + checkpoint.optimizer() +
                "' holds -0.25 at element 1 ([1] of shape 2; 1 of its 2 "
                "values is negative): AdamW's second moment"});
  // A negative first moment is fine.
  Checkpoint first = writeCheckpoint(freshDirectory(), 3);
  setValue(first.optimizer(), "b/exp_avg", 1, -0.25f);
  rehash(first);
  EXPECT_NO_THROW(verify(first));
}

TEST(CheckpointVerification, RefusesStepCountsOutOfRange) {
  EXPECT_EQ(parseStepCount("0", "x"), 0);
  EXPECT_EQ(parseStepCount("9223372036854775807", "x"), INT64_MAX);
  expectThrows([] { parseStepCount("-5", "the count"); },
               {"the count is -5: a step count is never negative"});
  for (const char *text :
       {"9223372036854775808", "99999999999999999999", "", "3x", "+3", "1.5"})
    expectThrows([&] { parseStepCount(text, "the count"); },
                 {"the count is '" + std::string(text) +
                  "', not an integer in [0, 9223372036854775807]"});

  Checkpoint checkpoint = writeCheckpoint(freshDirectory(), 3);
  editFile(checkpoint.optimizer(), [](nlohmann::json &header, std::string &) {
    header["__metadata__"]["w/step"] = "-5";
  });
  rehash(checkpoint);
  expectThrows([&] { verify(checkpoint); },
               {"the step count 'w/step' in the metadata of '" +
                checkpoint.optimizer() + "' is -5"});
}

TEST(CheckpointVerification, ReadsStateFilesCarefully) {
  std::string dir = freshDirectory();
  Checkpoint checkpoint = writeCheckpoint(dir, 3);
  std::string path = checkpoint.ref.path + "/" + kCheckpointStateFile;
  nlohmann::json state = nlohmann::json::parse(readBytes(path));
  auto expectState = [&](const nlohmann::json &edited,
                         const std::string &expected) {
    writeBytes(path, edited.dump());
    expectThrows([&] { readCheckpointState(checkpoint.ref); },
                 {path, expected});
  };
  nlohmann::json edited = state;
  edited["format_version"] = 4;
  expectState(edited, "is of checkpoint format version 4; this pp reads "
                      "versions 1 to 3");
  edited.erase("format_version");
  expectState(edited, "format version (none given)");
  edited = state;
  edited["step"] = 4;
  expectState(edited, "names step 4, but its directory is of step 3");
  edited["step"] = 18446744073709551615u;
  expectState(edited, "\"step\" is 18446744073709551615, not an integer in "
                      "[0, 9223372036854775807]");
  edited = state;
  edited["consumed_samples"] = -1;
  expectState(edited, "\"consumed_samples\" is -1");
  writeBytes(path, "{\"step\": ");
  expectThrows([&] { readCheckpointState(checkpoint.ref); },
               {"'" + path + "' is not JSON"});
  // Version 1 has no digests: its values are still checked.
  edited = state;
  edited["format_version"] = 1;
  edited.erase("files");
  writeBytes(path, edited.dump());
  EXPECT_NO_THROW(verify(checkpoint));
  setValue(checkpoint.parameters(), "b", 0, std::nanf(""));
  expectThrows([&] { verify(checkpoint); }, {"'b'", "holds nan"});
}

TEST(CheckpointVerification, FallsBackLoudlyFromADamagedNewest) {
  std::string dir = freshDirectory();
  EXPECT_FALSE(newestUsableCheckpoint(dir + "/missing", std::cerr));
  writeCheckpoint(dir, 2);
  Checkpoint middle = writeCheckpoint(dir, 4);
  Checkpoint newest = writeCheckpoint(dir, 6);
  writeBytes(newest.ref.path + "/" + kCheckpointStateFile, "{\"step\": ");
  setValue(middle.parameters(), "b", 0, 1.0f);
  fs::create_directories(dir + "/step-000000009");
  std::ostringstream warnings;
  std::optional<CheckpointRef> chosen = newestUsableCheckpoint(dir, warnings);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->step, 2);
  std::string text = warnings.str();
  for (const std::string &expected :
       {"pp: warning: resume: '" + dir +
            "/step-000000009' is no checkpoint name: pp names the "
            "checkpoint of step 9 'step-00000009'",
        "skipping the checkpoint '" + newest.ref.path + "' (step 6): '" +
            newest.ref.path + "/state.json' is not JSON",
        "skipping the checkpoint '" + middle.ref.path +
            "' (step 4): the tensor 'b'",
        "moved it to '" + dir + "/damaged-step-00000006'",
        "moved it to '" + dir + "/damaged-step-00000004'",
        "resuming from '" + dir +
            "/step-00000002' (step 2), not from the newest checkpoint (step "
            "6): steps 3 to 6 are trained again"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n"
                                                      << text;
  // The damaged ones are out of the way of --keep-last and later resumes.
  EXPECT_EQ(completeCheckpoints(dir).size(), 1u);
  std::ostringstream quiet;
  EXPECT_EQ(newestUsableCheckpoint(dir, quiet)->step, 2);
  EXPECT_EQ(quiet.str().find("skipping"), std::string::npos);
}

TEST(CheckpointVerification, RefusesWhenEveryCheckpointIsDamaged) {
  std::string dir = freshDirectory();
  Checkpoint only = writeCheckpoint(dir, 5);
  setValue(only.optimizer(), "w/exp_avg", 0, 1.0f);
  std::ostringstream warnings;
  expectThrows(
      [&] { newestUsableCheckpoint(dir, warnings); },
      {"resume: no checkpoint in '" + dir + "' can be resumed from: '" +
           only.ref.path + "' (step 5): the tensor 'w/exp_avg'",
       "move these checkpoints out of '" + dir + "' to start from scratch"});
  // Nothing is moved when nothing resumes.
  EXPECT_TRUE(fs::exists(only.ref.path));
}

TEST(CheckpointDirectory, NamesCheckpointsOneWay) {
  std::string problem;
  EXPECT_EQ(parseCheckpointName("step-00000012", problem), 12);
  EXPECT_EQ(parseCheckpointName("step-123456789", problem), 123456789);
  EXPECT_EQ(parseCheckpointName("step-9223372036854775807", problem),
            INT64_MAX);
  EXPECT_FALSE(parseCheckpointName("step-000000012", problem));
  EXPECT_NE(problem.find("pp names the checkpoint of step 12 "
                         "'step-00000012'"),
            std::string::npos)
      << problem;
  EXPECT_FALSE(parseCheckpointName("step-12", problem));
  EXPECT_NE(problem.find("'step-00000012'"), std::string::npos);
  EXPECT_FALSE(parseCheckpointName("step-9223372036854775808", problem));
  EXPECT_NE(problem.find("its step is out of range"), std::string::npos);
  for (const char *other : {"step-", "step-1x", "steps", "damaged-step-1"}) {
    EXPECT_FALSE(parseCheckpointName(other, problem));
    EXPECT_EQ(problem, "") << other;
  }
}

TEST(CheckpointDirectory, SaysWhyADirectoryCannotHoldCheckpoints) {
  std::string dir = freshDirectory();
  EXPECT_EQ(checkpointDirectoryProblem(dir), "");
  EXPECT_EQ(checkpointDirectoryProblem(dir + "/new/nested"), "");
  // The probe leaves nothing behind.
  EXPECT_TRUE(fs::is_empty(dir));
  writeBytes(dir + "/file", "x");
  EXPECT_EQ(checkpointDirectoryProblem(dir + "/file"),
            "it exists and is not a directory");
  EXPECT_EQ(checkpointDirectoryProblem(dir + "/file/ckpt/deeper"),
            "'" + dir +
                "/file' is not a directory, so nothing can be "
                "created in it");
  // Permission bits do not bind root: the probe of a read-only folder runs
  // in a child as user nobody (65534) then.
  fs::create_directories(dir + "/locked");
  ::chmod(dir.c_str(), 0755);
  ::chmod((dir + "/locked").c_str(), 0555);
  EXPECT_EXIT(
      {
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
          std::_Exit(2);
        std::string problem = checkpointDirectoryProblem(dir + "/locked/ckpt");
        std::fprintf(stderr, "%s\n", problem.c_str());
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      "cannot create a directory in '" + dir + "/locked'");
  ::chmod((dir + "/locked").c_str(), 0755);
}

} // namespace
