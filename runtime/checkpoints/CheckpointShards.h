//===- CheckpointShards.h - a checkpoint's tensor files ---------*- C++ -*-===//
//
// Where a checkpoint keeps its tensors (docs/checkpoints.md). From format
// version 3 on, each stage's first replica writes the stage's parameters
// and optimizer state into files of their own, in parallel with the other
// stages: parameters-stage-SSSSS.safetensors and
// optimizer-stage-SSSSS.safetensors. state.json's "files" lists every file
// with what it holds, its stage, the job rank that wrote it and its
// digests, so that a run of any layout finds each tensor's file. Format
// versions 1 and 2 hold one parameters.safetensors and one
// optimizer.safetensors.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CHECKPOINTSHARDS_H
#define PP_RUNTIME_CHECKPOINTSHARDS_H

#include "runtime/checkpoints/SafeTensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pp::runtime {

/// The files of a format version 1 or 2 checkpoint.
inline constexpr char kParametersFile[] = "parameters.safetensors";
inline constexpr char kOptimizerFile[] = "optimizer.safetensors";

/// What a checkpoint file holds.
enum class CheckpointContent { Parameters, Optimizer };

/// "parameters" or "optimizer": state.json's "holds" of a file.
const char *contentName(CheckpointContent content);

/// The file of stage `stage`'s `content`, as
/// "parameters-stage-00003.safetensors".
std::string shardFileName(CheckpointContent content, int64_t stage);

/// A tensor file of a checkpoint, as its state.json lists it.
struct CheckpointFile {
  /// Its name in the checkpoint's directory.
  std::string name;
  /// Its stage and the job rank that wrote it; -1 in format versions 1
  /// and 2, whose files hold every stage's tensors.
  int64_t stage = -1, writer = -1;
  /// What state.json records of it (fileRecord); null in format version 1.
  nlohmann::json record;
};

/// The files holding `content` of the checkpoint whose state.json (read from
/// `statePath`) is `state`, of a format version this pp reads: the one file
/// of version 1 or 2, else those "files" lists as holding it. Throws
/// std::runtime_error naming `statePath` when "files" is not an object
/// of records naming what they hold, their stage and writer, or names a file
/// outside the checkpoint's directory.
std::vector<CheckpointFile> checkpointFiles(const nlohmann::json &state,
                                            const std::string &statePath,
                                            CheckpointContent content);

/// The tensors of a checkpoint's files of one content, by name, whichever
/// file holds each.
class CheckpointTensors {
public:
  /// Opens `files` of the checkpoint directory `checkpoint`. Throws
  /// std::runtime_error naming the file when one is missing (what it holds
  /// and who wrote it, and how to fix it) or does not open, and when two
  /// files hold the same tensor.
  static CheckpointTensors open(const std::string &checkpoint,
                                const std::vector<CheckpointFile> &files);

  /// The files, in the order given to open().
  const std::vector<SafeTensorsFile> &files() const { return opened; }
  /// The file holding `name`, or null.
  const SafeTensorsFile *fileOf(const std::string &name) const;
  /// Every tensor's shape, by name.
  std::map<std::string, Shape> shapes() const;
  /// Writes tensor `name`'s values to `out` as f32; throws
  /// std::runtime_error when no file holds it.
  void read(const std::string &name, float *out) const;
  /// For messages: "checkpoint file 'PATH'", or with several files
  /// "the checkpoint files 'PATH', 'PATH' and 'PATH'".
  std::string description() const;

private:
  std::vector<SafeTensorsFile> opened;
  /// Per tensor name: its file's index in `opened`.
  std::map<std::string, size_t> holder;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_CHECKPOINTSHARDS_H
