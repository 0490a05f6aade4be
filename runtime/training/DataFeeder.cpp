//===- DataFeeder.cpp - the samples a rank reads --------------------------===//

#include "runtime/training/DataFeeder.h"

#include "runtime/data/SyntheticData.h"
#include "runtime/data/TokenBatches.h"

#include <stdexcept>

namespace pp::runtime {

void checkEvaluable(const Package &package) {
  if (!package.hasEvalFunctions())
    throw std::runtime_error(
        "the package '" + package.directory +
        "' has no eval functions; compile the model with --pp-compile "
        "(which derives them with pp-derive-eval) to evaluate with "
        "--eval-data");
}

DataFeeder::DataFeeder(const Package &package, const RankStages &stages,
                       const TrainerOptions &options,
                       const BatchLayout &layout, int64_t dataParallelRank)
    : package(package), stages(stages), options(options), layout(layout),
      dataParallelRank(dataParallelRank) {}

void DataFeeder::checkDtypes() const {
  if (!options.data.path.empty())
    return;
  for (const TensorInfo &input : package.inputs)
    checkSyntheticDtype(input.name, input.dtype, /*isLabel=*/false,
                        input.indexBound);
  checkSyntheticDtype(package.labels.name, package.labels.dtype,
                      /*isLabel=*/true);
}

void DataFeeder::open() {
  DataNeeds needs{stages.holdsFirstStage(), stages.holdsLastStage()};
  const DataOptions &data = options.data;
  if (data.path.empty()) {
    source = std::make_unique<SyntheticMicrobatches>(package, options.seed,
                                                     layout, dataParallelRank);
    return;
  }
  TokenDataConfig config = tokenDataConfig(
      package, data.inputName, data.sequenceLength, data.padSequence);
  // Every stage runs the eval batches; a middle stage learns their count
  // from the file's header alone.
  if (!data.evalPath.empty()) {
    checkEvaluable(package);
    evalBatchCount =
        EvalSampler(tokenWindows(TokenDataset::countTokens(data.evalPath,
                                                           data.tokenWidth),
                                 config.sequenceLength),
                    layout, data.evalBatches)
            .batches();
  }
  if (!needs.inputs && !needs.labels)
    return;
  trainingData = TokenDataset::open(data.path, data.tokenWidth);
  checkTokenDataset(config, *trainingData);
  source = trainingMicrobatches(*trainingData, config, options.seed, layout,
                                dataParallelRank);
  if (data.evalPath.empty())
    return;
  evalData = TokenDataset::open(data.evalPath, data.tokenWidth);
  checkTokenDataset(config, *evalData);
  evalSource = evalMicrobatches(*evalData, config, layout, dataParallelRank,
                                data.evalBatches);
}

double DataFeeder::drawLabels(const BatchRef &batch, Backend &backend,
                              std::vector<TensorPtr> &labels,
                              std::vector<Placed> &placed) {
  placed.resize(options.microbatches);
  if (!stages.holdsLastStage())
    return 0;
  double count = 0;
  for (int64_t mb = 0; mb < options.microbatches; ++mb) {
    labels.push_back(makeTensor(package.labels));
    pp_tensor *label = labels.back().get();
    batch.source->fillLabels(batch.start, mb, label);
    placed[mb].tensor = backend.place(label, placed[mb].copy);
    if (package.lossKind == "mse") {
      count += static_cast<double>(pp_tensor_numel(label));
    } else {
      const int64_t *values =
          static_cast<const int64_t *>(pp_tensor_data(label));
      for (int64_t i = 0, n = pp_tensor_numel(label); i < n; ++i)
        count += values[i] != package.ignoreIndex;
    }
  }
  return count;
}

nlohmann::json DataFeeder::identity() const {
  if (options.data.path.empty())
    return {{"kind", "synthetic"}};
  nlohmann::json identity = {{"kind", "tokens"},
                             {"path", options.data.path},
                             {"sequence_length", options.data.sequenceLength}};
  // Rank 0, a first stage, has the training data open.
  if (trainingData) {
    identity["tokens"] = trainingData->size();
    identity["token_width"] = trainingData->tokenWidth();
    if (const TokenDatasetHeader *header = trainingData->header())
      identity["checksum"] = header->checksum;
  }
  return identity;
}

int64_t DataFeeder::elementsRead() const {
  return (source ? source->elementsRead() : 0) +
         (evalSource ? evalSource->elementsRead() : 0);
}

} // namespace pp::runtime
