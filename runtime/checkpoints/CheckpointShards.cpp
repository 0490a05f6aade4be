//===- CheckpointShards.cpp - a checkpoint's tensor files -----------------===//

#include "runtime/checkpoints/CheckpointShards.h"

#include "runtime/checkpoints/CheckpointDirectory.h"

#include <filesystem>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace pp::runtime {
namespace {

/// The first format version that writes a file per stage.
constexpr int64_t kShardedFormatVersion = 3;

/// `record`'s field `key`, a non-negative integer; throws naming the file
/// `name` listed in `statePath` otherwise.
int64_t recordCount(const nlohmann::json &record, const char *key,
                    const std::string &name, const std::string &statePath) {
  auto it = record.find(key);
  bool count = it != record.end() && it->is_number_integer() &&
               (it->is_number_unsigned()
                    ? it->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)
                    : it->get<int64_t>() >= 0);
  if (!count)
    throw std::runtime_error("'" + statePath + "' lists the file '" + name +
                             "' without a \"" + key +
                             "\" that is a non-negative integer");
  return it->get<int64_t>();
}

} // namespace

const char *contentName(CheckpointContent content) {
  return content == CheckpointContent::Parameters ? "parameters" : "optimizer";
}

std::string shardFileName(CheckpointContent content, int64_t stage) {
  std::ostringstream name;
  name << contentName(content) << "-stage-" << std::setw(5) << std::setfill('0')
       << stage << ".safetensors";
  return name.str();
}

std::vector<CheckpointFile> checkpointFiles(const nlohmann::json &state,
                                            const std::string &statePath,
                                            CheckpointContent content) {
  auto files = state.find("files");
  if (state.at("format_version").get<int64_t>() < kShardedFormatVersion) {
    CheckpointFile file;
    file.name = content == CheckpointContent::Parameters ? kParametersFile
                                                         : kOptimizerFile;
    if (files != state.end() && files->is_object() &&
        files->contains(file.name))
      file.record = (*files)[file.name];
    return {file};
  }
  if (files == state.end() || !files->is_object())
    throw std::runtime_error("'" + statePath +
                             "' has no \"files\" object listing the "
                             "checkpoint's tensor files");
  std::vector<CheckpointFile> listed;
  for (const auto &[name, record] : files->items()) {
    if (name.empty() || name == "." || name == ".." ||
        name.find('/') != std::string::npos || name == kCheckpointStateFile)
      throw std::runtime_error("'" + statePath + "' lists the file '" + name +
                               "', not a tensor file's name in the "
                               "checkpoint's directory");
    std::string holds = record.is_object() && record.contains("holds") &&
                                record["holds"].is_string()
                            ? record["holds"].get<std::string>()
                            : "";
    if (holds != contentName(CheckpointContent::Parameters) &&
        holds != contentName(CheckpointContent::Optimizer))
      throw std::runtime_error("'" + statePath + "' lists the file '" + name +
                               "' without saying what it holds (\"holds\": "
                               "\"parameters\" or \"optimizer\")");
    if (holds != contentName(content))
      continue;
    listed.push_back({name, recordCount(record, "stage", name, statePath),
                      recordCount(record, "writer_rank", name, statePath),
                      record});
  }
  return listed;
}

CheckpointTensors
CheckpointTensors::open(const std::string &checkpoint,
                        const std::vector<CheckpointFile> &files) {
  CheckpointTensors tensors;
  for (const CheckpointFile &file : files) {
    std::string path = checkpoint + "/" + file.name;
    std::error_code error;
    if (!fs::exists(path, error))
      throw std::runtime_error(
          "the checkpoint '" + checkpoint + "' lacks the file '" + file.name +
          "'" +
          (file.stage < 0
               ? std::string()
               : ", stage " + std::to_string(file.stage) +
                     "'s tensors, which state.json lists as written by rank " +
                     std::to_string(file.writer)) +
          ": it was copied or moved in part, or that rank wrote it where "
          "rank 0 does not see it (--checkpoint-dir must be one directory "
          "that every machine shares). Copy the file into it, or resume "
          "from another checkpoint");
    tensors.opened.push_back(SafeTensorsFile::open(path));
    const SafeTensorsFile &opened = tensors.opened.back();
    for (const TensorEntry &entry : opened.entries()) {
      auto [at, fresh] =
          tensors.holder.emplace(entry.name, tensors.opened.size() - 1);
      if (!fresh)
        throw std::runtime_error("the tensor '" + entry.name + "' is in '" +
                                 tensors.opened[at->second].path() +
                                 "' and in '" + opened.path() +
                                 "': a checkpoint holds each tensor once");
    }
  }
  return tensors;
}

const SafeTensorsFile *
CheckpointTensors::fileOf(const std::string &name) const {
  auto it = holder.find(name);
  return it == holder.end() ? nullptr : &opened[it->second];
}

std::map<std::string, Shape> CheckpointTensors::shapes() const {
  std::map<std::string, Shape> shapes;
  for (const SafeTensorsFile &file : opened)
    for (const TensorEntry &entry : file.entries())
      shapes[entry.name] = entry.shape;
  return shapes;
}

void CheckpointTensors::read(const std::string &name, float *out) const {
  const SafeTensorsFile *file = fileOf(name);
  if (!file)
    throw std::runtime_error("no file of the checkpoint holds '" + name +
                             "' (" + description() + ")");
  file->read(name, out);
}

std::string CheckpointTensors::description() const {
  if (opened.size() == 1)
    return "checkpoint file '" + opened.front().path() + "'";
  std::string text = "the checkpoint files";
  for (size_t i = 0; i < opened.size(); ++i)
    text += (i == 0                   ? " '"
             : i + 1 == opened.size() ? "' and '"
                                      : "', '") +
            opened[i].path();
  return text + (opened.empty() ? " (none)" : "'");
}

} // namespace pp::runtime
