//===- CheckpointState.h - what a resume reads of a checkpoint --*- C++ -*-===//
//
// The parts of a checkpoint (docs/checkpoints.md) a resumed run reads before
// it compares them with its own model and options: state.json's step,
// sampler cursor, seed, data identity, model fingerprint and tensor files
// (CheckpointShards.h), and the per-parameter step counts of the optimizer
// files' metadata. Both are
// checked for their format only; a checkpoint of another model or run is
// the trainer's to refuse.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CHECKPOINTSTATE_H
#define PP_RUNTIME_CHECKPOINTSTATE_H

#include "runtime/checkpoints/CheckpointShards.h"
#include "runtime/checkpoints/CheckpointVerification.h"
#include "runtime/checkpoints/SafeTensors.h"
#include "runtime/core/LossScaleState.h"
#include "runtime/core/Shapes.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// What a resume takes from a checkpoint's state.json.
struct CheckpointState {
  /// Steps done.
  int64_t step = 0;
  /// The sampler cursor, >= 0.
  int64_t consumedSamples = 0;
  uint64_t seed = 0;
  /// The identity of the training data the run was saved training on.
  nlohmann::json data;
  /// The model fingerprint's tensors: name -> global shape.
  std::map<std::string, Shape> tensors;
  /// The loss scale of an fp16 run ("loss_scale"); none for f32 and bf16.
  std::optional<LossScaleState> lossScale;
  /// The files holding the parameters and the optimizer state.
  std::vector<CheckpointFile> parameterFiles, optimizerFiles;
};

/// Reads the state.json of the checkpoint directory `checkpoint` (through
/// InputFile: a regular file only). Throws std::runtime_error naming the
/// file or the checkpoint and what is wrong when the file cannot be read,
/// is not JSON or of another format version, or lacks a field or has one
/// of the wrong type or out of range (not a non-negative integer where a
/// step, a cursor, a seed or a dimension is), lists a tensor twice, or
/// lists its files wrongly (checkpointFiles).
CheckpointState readCheckpointState(const std::string &checkpoint);

/// The number of updates of the trained parameter `name` as the metadata
/// entry "`name`/step" of the optimizer state `file` records it; nullopt
/// without the entry (the parameter had taken no step: a checkpoint holds
/// no state of it). Throws std::runtime_error naming the file when the
/// entry is not a count (parseStepCount).
std::optional<int64_t> optimizerStepCount(const SafeTensorsFile &file,
                                          const std::string &name);
/// optimizerStepCount of the file of `state` whose metadata has the entry
/// "`name`/step"; nullopt when none has.
std::optional<int64_t> optimizerStepCount(const CheckpointTensors &state,
                                          const std::string &name);

} // namespace pp::runtime

#endif // PP_RUNTIME_CHECKPOINTSTATE_H
