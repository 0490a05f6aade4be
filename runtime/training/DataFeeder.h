//===- DataFeeder.h - the samples a rank reads ------------------*- C++ -*-===//
//
// Opens what a rank reads of the training and eval data (a first stage
// the inputs, a last stage the labels, a middle stage nothing) in the
// mesh-aware order of Sampler.h, and draws each batch's labels.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_DATAFEEDER_H
#define PP_RUNTIME_TRAINING_DATAFEEDER_H

#include "runtime/data/MicrobatchSource.h"
#include "runtime/data/Sampler.h"
#include "runtime/data/TokenDataset.h"
#include "runtime/package/Package.h"
#include "runtime/training/Backend.h"
#include "runtime/training/BatchRef.h"
#include "runtime/training/HostTensors.h"
#include "runtime/training/RankStages.h"
#include "runtime/training/TrainerOptions.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

namespace pp::runtime {

/// Throws std::runtime_error, saying to recompile, unless `package` has
/// eval functions.
void checkEvaluable(const Package &package);

class DataFeeder {
public:
  /// The data `options.data` names (synthetic samples without a path) for
  /// `stages` on data-parallel coordinate `dataParallelRank` of `layout`.
  DataFeeder(const Package &package, const RankStages &stages,
             const TrainerOptions &options, const BatchLayout &layout,
             int64_t dataParallelRank);

  /// Fails before the first step, on every rank alike, for model inputs
  /// and labels whose dtype synthetic samples cannot fill (a token
  /// dataset's are checked when it opens).
  void checkDtypes() const;
  /// Opens the data this rank reads.
  void open();

  /// The training and eval microbatches (null where this rank reads none).
  MicrobatchSource *training() const { return source.get(); }
  MicrobatchSource *eval() const { return evalSource.get(); }
  /// Eval batches per evaluation (0: no evaluation).
  int64_t evalBatches() const { return evalBatchCount; }

  /// The labels of `batch`'s microbatches on the last stage (none
  /// elsewhere), in `labels`, placed for the stage functions by `backend`
  /// in `placed`, and the count of loss terms they hold (elements for mse,
  /// tokens that are not ignore_index for cross_entropy).
  double drawLabels(const BatchRef &batch, Backend &backend,
                    std::vector<TensorPtr> &labels,
                    std::vector<Placed> &placed);

  /// The identity of the training data, as a checkpoint's state.json
  /// records it (the dataset's size and checksum where this rank has it
  /// open).
  nlohmann::json identity() const;
  /// Elements (tokens) this rank has read from the data.
  int64_t elementsRead() const;

private:
  const Package &package;
  const RankStages &stages;
  const TrainerOptions &options;
  const BatchLayout &layout;
  int64_t dataParallelRank;
  std::unique_ptr<TokenDataset> trainingData, evalData;
  std::unique_ptr<MicrobatchSource> source, evalSource;
  int64_t evalBatchCount = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_DATAFEEDER_H
