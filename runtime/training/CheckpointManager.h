//===- CheckpointManager.h - a run's checkpoints ----------------*- C++ -*-===//
//
// Saves a run's parameters, optimizer state, step and data cursor into a
// checkpoint directory, and resumes from the newest checkpoint that passes
// verification (docs/checkpoints.md).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_CHECKPOINTMANAGER_H
#define PP_RUNTIME_TRAINING_CHECKPOINTMANAGER_H

#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/checkpoints/CheckpointShards.h"
#include "runtime/checkpoints/SafeTensors.h"
#include "runtime/communication/Communicator.h"
#include "runtime/data/Sampler.h"
#include "runtime/package/Package.h"
#include "runtime/training/DataFeeder.h"
#include "runtime/training/ParameterStore.h"
#include "runtime/training/RankContext.h"
#include "runtime/training/RankGroups.h"
#include "runtime/training/RankStages.h"
#include "runtime/training/TensorStreaming.h"
#include "runtime/training/TrainerOptions.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace pp::runtime {

/// Where a resumed run starts: the checkpoint's parameters (checked to
/// hold exactly the model's tensors), the files of its optimizer state, its
/// step and its consumed-samples cursor.
struct ResumePoint {
  /// The checkpoint's directory.
  std::string path;
  CheckpointTensors parameters;
  std::vector<CheckpointFile> optimizerFiles;
  int64_t step = 0;
  int64_t cursor = 0;
  /// An fp16 run's loss scale; none when the run saved none.
  std::optional<LossScaleState> lossScale;
};

class CheckpointManager {
public:
  /// Saves and restores the run of `rank`: its `parameters`, assembled
  /// from their tensor-parallel shards by `streamer`, and the identity of
  /// its `data`.
  CheckpointManager(const RankContext &rank, ParameterStore &parameters,
                    TensorStreamer &streamer, const DataFeeder &data)
      : context(rank), parameters(parameters), streamer(streamer),
        data(data) {}

  /// With --resume, the newest checkpoint that rank 0 finds sound
  /// (newestUsableCheckpoint, warning on stderr about each newer one it
  /// skips; every rank then loads that one); none without --resume or
  /// when the directory holds none. When the directory holds only damaged
  /// ones, every rank throws rank 0's reasons.
  std::optional<CheckpointRef> findResumePoint();
  /// Reads `resumed`'s state.json, checks that it is of this model (naming
  /// the first tensor that differs) and opens its parameter files.
  ResumePoint open(const CheckpointRef &resumed);
  /// Loads this rank's optimizer state from `resumed`'s files, after
  /// checking that they hold exactly the state this optimizer keeps for the
  /// model's trained parameters.
  void restoreOptimizer(const ResumePoint &resumed);
  /// Saves the checkpoint after `step` steps, whose next step starts at
  /// `cursor`: rank 0 creates a temporary directory and sends its path over
  /// the pipeline; the first replica of each stage writes the stage's
  /// parameters and (gathered) optimizer state there, sharded tensors
  /// assembled whole, into files of its own (CheckpointShards.h), all
  /// stages at once, and reports their digests to rank 0 over the
  /// pipeline; rank 0 then writes state.json (with `lossScale`, an fp16
  /// run's), which lists every file, and renames the directory into place:
  /// the commit. Every rank calls it, with the parameters whole (ZeRO-3
  /// gathered), and returns once the checkpoint is in place.
  void save(int64_t step, int64_t cursor,
            const std::optional<LossScaleState> &lossScale);

private:
  nlohmann::json saveStage(int64_t stage, int64_t step,
                           const std::string &temporary,
                           const std::map<std::string, ParameterState> &states);
  nlohmann::json writeShard(const std::string &temporary,
                            CheckpointContent content, int64_t stage,
                            const std::vector<ParameterInfo> &listed,
                            const TensorValues &valuesOf,
                            const std::map<std::string, std::string> &metadata,
                            const std::string &channel);
  std::map<std::string, Shape> modelTensors() const;
  nlohmann::json modelFingerprint() const;
  nlohmann::json checkpointState(int64_t step, int64_t cursor,
                                 const std::optional<LossScaleState> &lossScale,
                                 const nlohmann::json &files) const;
  bool reports() const { return context.reports(); }

  RankContext context;
  ParameterStore &parameters;
  TensorStreamer &streamer;
  const DataFeeder &data;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_CHECKPOINTMANAGER_H
