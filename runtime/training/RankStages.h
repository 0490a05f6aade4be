//===- RankStages.h - the stages a pipeline rank runs -----------*- C++ -*-===//

#ifndef PP_RUNTIME_TRAINING_RANKSTAGES_H
#define PP_RUNTIME_TRAINING_RANKSTAGES_H

#include "runtime/package/Package.h"

#include <cstdint>
#include <vector>

namespace pp::runtime {

/// Which of a package's stages pipeline rank `rank` runs (several with
/// virtual stages), and where the others run.
class RankStages {
public:
  RankStages(const Package &package, int64_t rank);

  /// This rank's coordinate on the pipeline axis.
  int64_t rank() const { return pipelineRank; }
  /// The stages this rank runs, increasing.
  const std::vector<int64_t> &stages() const { return held; }
  /// Whether this rank runs stage `s`.
  bool holds(int64_t s) const { return package.stageRanks[s] == pipelineRank; }
  /// Whether this rank runs a stage holding a copy of `parameter`.
  bool holdsCopyOf(const ParameterInfo &parameter) const;
  bool holdsFirstStage() const { return holds(0); }
  bool holdsLastStage() const { return holds(package.numStages - 1); }
  /// The pipeline rank running stage `s`.
  int64_t rankOf(int64_t s) const { return package.stageRanks[s]; }
  /// The rank running the last stage, which holds the loss.
  int64_t lastStageRank() const { return rankOf(package.numStages - 1); }
  const std::vector<StageFunctionInfo> &functionsOf(int64_t s) const {
    return package.stages[s].functions;
  }

private:
  const Package &package;
  int64_t pipelineRank;
  std::vector<int64_t> held;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_RANKSTAGES_H
