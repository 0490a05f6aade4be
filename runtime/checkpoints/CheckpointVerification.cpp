//===- CheckpointVerification.cpp - checked checkpoints -------------------===//

#include "runtime/checkpoints/CheckpointVerification.h"

#include "runtime/core/InputFile.h"
#include "runtime/core/Sha256.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace pp::runtime {
namespace {

/// The oldest format version this pp resumes from.
constexpr char kDamagedPrefix[] = "damaged-";

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The field `key` of `state` (read from `path`), an integer in
/// [0, INT64_MAX]; throws otherwise.
int64_t stateInteger(const nlohmann::json &state, const std::string &key,
                     const std::string &path) {
  auto it = state.find(key);
  if (it == state.end())
    throw std::runtime_error("'" + path + "' has no \"" + key + "\"");
  bool inRange = it->is_number_integer() &&
                 (it->is_number_unsigned()
                      ? it->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)
                      : it->get<int64_t>() >= 0);
  if (!inRange)
    throw std::runtime_error("'" + path + "': \"" + key + "\" is " +
                             it->dump() + ", not an integer in [0, " +
                             std::to_string(INT64_MAX) + "]");
  return it->get<int64_t>();
}

/// Element `flat` of `shape` as "[i, j, ...]".
std::string formatIndex(const Shape &shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  std::string text = "[";
  for (size_t d = 0; d < index.size(); ++d)
    text += (d ? ", " : "") + std::to_string(index[d]);
  return text + "]";
}

/// Moves the damaged checkpoint `checkpoint` of `dir` to a name no resume
/// finds (DIR/damaged-step-..., numbered on when taken); returns the new
/// path, or "" with `problem` set when it cannot.
std::string moveAside(const std::string &dir, const CheckpointRef &checkpoint,
                      std::string &problem) {
  std::string base =
      (fs::path(dir) / (kDamagedPrefix + checkpointName(checkpoint.step)))
          .string();
  std::string target = base;
  std::error_code error;
  for (int n = 2; fs::exists(target, error); ++n)
    target = base + "-" + std::to_string(n);
  fs::rename(checkpoint.path, target, error);
  if (error) {
    problem = error.message();
    return "";
  }
  return target;
}

/// "step N is trained again", or "steps N to M are ...".
std::string trainedAgain(int64_t first, int64_t last) {
  return first == last ? "step " + std::to_string(first) + " is trained again"
                       : "steps " + std::to_string(first) + " to " +
                             std::to_string(last) + " are trained again";
}

} // namespace

std::string metadataDigest(const std::map<std::string, std::string> &metadata) {
  Sha256 sha;
  for (const auto &[key, value] : metadata) {
    sha.update(key.data(), key.size() + 1);
    sha.update(value.data(), value.size() + 1);
  }
  return sha.hex();
}

nlohmann::json fileRecord(const SafeTensorsWriter &writer) {
  return {{"metadata_sha256", metadataDigest(writer.metadata())},
          {"tensors", writer.digests()}};
}

int64_t parseStepCount(const std::string &text, const std::string &what) {
  int64_t value = 0;
  const char *end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  bool integer = error == std::errc() && stop == end && !text.empty();
  if (integer && value >= 0)
    return value;
  if (integer)
    throw std::runtime_error(what + " is " + text +
                             ": a step count is never negative");
  throw std::runtime_error(what + " is '" + text + "', not an integer in [0, " +
                           std::to_string(INT64_MAX) + "]");
}

nlohmann::json readCheckpointState(const CheckpointRef &checkpoint) {
  std::string path = checkpoint.path + "/" + kCheckpointStateFile;
  std::string text = readInputFile(path, "the checkpoint state");
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    throw std::runtime_error("'" + path + "' is not JSON: " + e.what());
  }
  if (!state.is_object())
    throw std::runtime_error("'" + path + "' is not a JSON object");
  auto version = state.find("format_version");
  if (version == state.end() || !version->is_number_integer() ||
      version->get<int64_t>() < kOldestReadableFormatVersion ||
      version->get<int64_t>() > kCheckpointFormatVersion)
    throw std::runtime_error("'" + path + "' is of checkpoint format version " +
                             (version == state.end()
                                  ? std::string("(none given)")
                                  : version->dump()) +
                             "; this pp reads versions " +
                             std::to_string(kOldestReadableFormatVersion) +
                             " to " + std::to_string(kCheckpointFormatVersion) +
                             " (a newer pp's checkpoint needs that pp)");
  int64_t step = stateInteger(state, "step", path);
  stateInteger(state, "consumed_samples", path);
  if (step != checkpoint.step)
    throw std::runtime_error(
        "'" + path + "' names step " + std::to_string(step) +
        ", but its directory is of step " + std::to_string(checkpoint.step));
  return state;
}

void verifyDigests(const SafeTensorsFile &file, const nlohmann::json &record) {
  std::string where = "'" + file.path() + "'";
  if (!record.is_object() || !record.contains("tensors") ||
      !record["tensors"].is_object() || !record.contains("metadata_sha256") ||
      !record["metadata_sha256"].is_string())
    throw std::runtime_error(
        "state.json records no digests of " + where +
        " (\"files\" lacks {\"metadata_sha256\", \"tensors\"} for it)");
  const nlohmann::json &tensors = record["tensors"];
  std::map<std::string, std::string> namedByDigest;
  for (const auto &[name, digest] : tensors.items())
    if (digest.is_string())
      namedByDigest[digest.get<std::string>()] = name;
  for (const TensorEntry &entry : file.entries()) {
    auto recorded = tensors.find(entry.name);
    if (recorded == tensors.end() || !recorded->is_string())
      throw std::runtime_error(
          where + " holds the tensor '" + entry.name +
          "', for which state.json records no digest: the file is not the "
          "one saved with it");
    std::string digest = file.sha256(entry.name);
    if (digest == recorded->get<std::string>())
      continue;
    auto other = namedByDigest.find(digest);
    throw std::runtime_error(
        "the tensor '" + entry.name + "' in " + where +
        " is damaged: the SHA-256 of its bytes is " + digest +
        ", state.json records " + recorded->get<std::string>() +
        (other == namedByDigest.end()
             ? std::string()
             : " (its data_offsets point at the bytes of '" + other->second +
                   "': the header is damaged)"));
  }
  for (const auto &[name, digest] : tensors.items())
    if (!file.find(name))
      throw std::runtime_error(where + " lacks the tensor '" + name +
                               "', which state.json records");
  std::string digest = metadataDigest(file.metadata());
  if (digest != record["metadata_sha256"].get<std::string>())
    throw std::runtime_error(
        "the metadata of " + where +
        " (format, step counts) is damaged: its SHA-256 is " + digest +
        ", state.json records " + record["metadata_sha256"].get<std::string>());
}

void checkTensorValues(const SafeTensorsFile &file,
                       const std::set<std::string> &unchecked) {
  for (const TensorEntry &entry : file.entries()) {
    bool finite = !unchecked.count(entry.name);
    bool moment = endsWith(entry.name, "/exp_avg_sq");
    if (entry.dtype != "F32" || (!finite && !moment))
      continue;
    // By the bits, so that no compiler flag folds the tests away.
    std::string_view bytes = file.bytes(entry.name);
    int64_t count = static_cast<int64_t>(bytes.size() / sizeof(uint32_t));
    int64_t first = -1, bad = 0;
    bool firstNonFinite = false;
    for (int64_t i = 0; i < count; ++i) {
      uint32_t bits;
      std::memcpy(&bits, bytes.data() + i * sizeof(bits), sizeof(bits));
      bool nonFinite = (bits & 0x7f800000u) == 0x7f800000u;
      bool negative = (bits >> 31) != 0 && (bits & 0x7fffffffu) != 0;
      if ((finite && nonFinite) || (moment && negative)) {
        if (first < 0) {
          first = i;
          firstNonFinite = finite && nonFinite;
        }
        ++bad;
      }
    }
    if (first < 0)
      continue;
    float value;
    std::memcpy(&value, bytes.data() + first * sizeof(value), sizeof(value));
    std::ostringstream message;
    message << "the tensor '" << entry.name << "' in '" << file.path()
            << "' holds " << std::setprecision(9) << value << " at element "
            << first << " (" << formatIndex(entry.shape, first) << " of shape "
            << formatShape(entry.shape) << "; " << bad << " of its " << count
            << " values " << (bad == 1 ? "is " : "are ");
    if (firstNonFinite)
      message << "not finite): the run that saved it diverged, or the file "
                 "is damaged";
    else
      message << "negative): AdamW's second moment (exp_avg_sq) is an "
                 "average of squares and never negative, so the file is "
                 "damaged";
    throw std::runtime_error(message.str());
  }
  for (const auto &[key, value] : file.metadata())
    if (endsWith(key, "/step"))
      parseStepCount(value, "the step count '" + key +
                                "' in the metadata of '" + file.path() + "'");
}

void verifyCheckpoint(const CheckpointRef &checkpoint,
                      const nlohmann::json &state) {
  // Constants may hold -inf by design (attention masks): their digests
  // guard them, not a value check.
  std::set<std::string> constants;
  if (state.contains("model") && state["model"].is_object() &&
      state["model"].contains("tensors") &&
      state["model"]["tensors"].is_array())
    for (const nlohmann::json &tensor : state["model"]["tensors"])
      if (tensor.is_object() && tensor.value("role", "") == "constant" &&
          tensor.contains("name") && tensor["name"].is_string())
        constants.insert(tensor["name"].get<std::string>());
  bool digests = state["format_version"].get<int64_t>() >= 2;
  std::string statePath = checkpoint.path + "/" + kCheckpointStateFile;
  for (CheckpointContent content :
       {CheckpointContent::Parameters, CheckpointContent::Optimizer}) {
    std::vector<CheckpointFile> listed =
        checkpointFiles(state, statePath, content);
    CheckpointTensors tensors =
        CheckpointTensors::open(checkpoint.path, listed);
    for (size_t i = 0; i < listed.size(); ++i) {
      const SafeTensorsFile &file = tensors.files()[i];
      if (digests)
        verifyDigests(file, listed[i].record);
      checkTensorValues(file, content == CheckpointContent::Parameters
                                  ? constants
                                  : std::set<std::string>());
    }
  }
}

std::optional<CheckpointRef> newestUsableCheckpoint(const std::string &dir,
                                                    std::ostream &warnings) {
  std::vector<std::string> misnamed;
  std::vector<CheckpointRef> found = checkpointDirectories(dir, &misnamed);
  for (const std::string &problem : misnamed)
    warnings << "pp: warning: resume: " << problem << "; it is ignored"
             << std::endl;
  std::optional<CheckpointRef> chosen;
  std::vector<std::pair<CheckpointRef, std::string>> failed;
  for (auto it = found.rbegin(); it != found.rend() && !chosen; ++it) {
    try {
      nlohmann::json state = readCheckpointState(*it);
      verifyCheckpoint(*it, state);
      if (state["format_version"].get<int64_t>() < 2)
        warnings << "pp: warning: resume: the checkpoint '" << it->path
                 << "' is of format version "
                 << state["format_version"].get<int64_t>()
                 << ", which records no digests: its values are checked, "
                    "its bytes not"
                 << std::endl;
      chosen = *it;
    } catch (const std::exception &e) {
      failed.emplace_back(*it, e.what());
    }
  }
  auto describe = [](const CheckpointRef &checkpoint) {
    return "'" + checkpoint.path + "' (step " +
           std::to_string(checkpoint.step) + ")";
  };
  if (!chosen) {
    if (failed.empty())
      return std::nullopt;
    std::string message =
        "resume: no checkpoint in '" + dir + "' can be resumed from:";
    for (size_t i = 0; i < failed.size(); ++i)
      message += (i ? "; " : " ") + describe(failed[i].first) + ": " +
                 failed[i].second;
    message += ". Restore the damaged files from a copy, or move these "
               "checkpoints out of '" +
               dir + "' to start from scratch";
    throw std::runtime_error(message);
  }
  for (const auto &[checkpoint, why] : failed) {
    warnings << "pp: warning: resume: skipping the checkpoint "
             << describe(checkpoint) << ": " << why << std::endl;
    std::string problem;
    std::string moved = moveAside(dir, checkpoint, problem);
    if (!moved.empty())
      warnings << "pp: warning: resume: moved it to '" << moved
               << "' (rename it back to try it again)" << std::endl;
    else
      warnings << "pp: warning: resume: cannot move it aside (" << problem
               << "); remove it, or --keep-last may keep it and delete "
                  "sound checkpoints"
               << std::endl;
  }
  if (!failed.empty())
    warnings << "pp: warning: resume: resuming from " << describe(*chosen)
             << ", not from the newest checkpoint (step "
             << failed.front().first.step << "): "
             << trainedAgain(chosen->step + 1, failed.front().first.step)
             << std::endl;
  return chosen;
}

} // namespace pp::runtime
