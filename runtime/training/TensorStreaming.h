//===- TensorStreaming.h - whole tensors from every stage to stage 0 -*- C++ -*-===//
//
// params_sha256, --save-params, --save-weights and --save-grads need the
// model's tensors whole in one place: stage 0 asks each stage for its
// tensors one at a time, so that it never holds the whole model. A
// checkpoint's writers need their own stage's tensors whole: the devices
// of a tensor-parallel group assemble the sharded ones on the first.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_TENSORSTREAMING_H
#define PP_RUNTIME_TRAINING_TENSORSTREAMING_H

#include "runtime/checkpoints/SafeTensors.h"
#include "runtime/package/Package.h"
#include "runtime/training/Backend.h"
#include "runtime/training/RankGroups.h"
#include "runtime/training/RankStages.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pp::runtime {

/// Takes a streamed tensor on stage 0: its name, shape and values.
using TensorSink =
    std::function<void(const std::string &, const Shape &, const float *)>;
/// Where a stage holds the values of a tensor it streams, by name.
using TensorValues = std::function<const float *(const std::string &)>;

/// The values of the host tensors `held` (which outlive the result), by
/// name.
TensorValues heldIn(const std::map<std::string, TensorPtr> &held);

/// `listed`'s names and global shapes in name order: the order
/// TensorStreamer::stream streams them in.
std::vector<TensorEntry> entriesByName(const std::vector<ParameterInfo> &listed);

/// Streams tensors of every stage of a pipeline to its stage 0.
class TensorStreamer {
public:
  TensorStreamer(const RankStages &stages, RankGroups &groups)
      : stages(stages), groups(groups) {}

  /// Streams the tensors `listed` (each held, as `valuesOf` finds it, by
  /// the stage its entry names) whole to stage 0 in name order, one at a
  /// time, over message slots named `channel`/NAME: stage 0 hashes each,
  /// hands it to `sink` and returns the ParametersDigest; other stages
  /// return "". Stage 0 asks a stage for each of its tensors in turn, so it
  /// holds its own stage and one other tensor at most, never the whole
  /// model. A sharded tensor's devices first send their shards to the
  /// first one, which assembles the global tensor; only the first device
  /// of each tensor-parallel group streams. Every rank of the pipeline and
  /// tensor-parallel groups calls it. For package.parameters, the digest is
  /// params_sha256.
  std::string stream(const std::vector<ParameterInfo> &listed,
                     const TensorValues &valuesOf, const std::string &channel,
                     const TensorSink &sink);

  /// Hands the tensors `listed`, each held by this rank (the stage its
  /// entry names runs here), whole to `sink` in name order on the first
  /// device of this rank's tensor-parallel group: a sharded tensor's
  /// devices first send their shards to the first one, which assembles
  /// the global tensor, over message slots named `channel`/shards/NAME.
  /// Every rank of the tensor-parallel group calls it; a checkpoint's
  /// writers use it for their stage's files.
  void assemble(const std::vector<ParameterInfo> &listed,
                const TensorValues &valuesOf, const std::string &channel,
                const TensorSink &sink);

private:
  /// The values of `parameter` (held here) whole on the first device of
  /// the tensor-parallel group: as `valuesOf` finds them, or for a sharded
  /// one assembled into `gathered` (garbage on the other devices).
  const float *wholeValues(const ParameterInfo &parameter,
                           const TensorValues &valuesOf,
                           const std::string &channel,
                           std::vector<float> &gathered);

  const RankStages &stages;
  RankGroups &groups;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_TENSORSTREAMING_H
