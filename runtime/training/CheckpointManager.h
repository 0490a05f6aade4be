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

#include <optional>
#include <ostream>

namespace pp::runtime {

/// Where a resumed run starts: the checkpoint's parameters (checked to
/// hold exactly the model's tensors), its step and its consumed-samples
/// cursor.
struct ResumePoint {
  SafeTensorsFile parameters;
  int64_t step = 0;
  int64_t cursor = 0;
  /// An fp16 run's loss scale; none when the run saved none.
  std::optional<LossScaleState> lossScale;
};

class CheckpointManager {
public:
  /// Saves and restores the run of `rank`: its `parameters`, streamed to
  /// rank 0 by `streamer`, and the identity of its `data`.
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
  /// the first tensor that differs) and opens its parameters.
  ResumePoint open(const CheckpointRef &resumed);
  /// Loads this rank's optimizer state from `resumed`, after checking that
  /// the file holds exactly the state this optimizer keeps for the model's
  /// trained parameters.
  void restoreOptimizer(const CheckpointRef &resumed);
  /// Saves the checkpoint after `step` steps, whose next step starts at
  /// `cursor`: the first replica of each stage streams its parameters and
  /// its (gathered) optimizer state, sharded tensors assembled whole, to
  /// rank 0, which writes the files into a temporary directory, state.json
  /// last (with `lossScale`, an fp16 run's), and renames it into place;
  /// the other ranks wait for it. Every rank calls it, with the parameters
  /// whole (ZeRO-3 gathered).
  void save(int64_t step, int64_t cursor,
            const std::optional<LossScaleState> &lossScale);

private:
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
