//===- SyntheticData.h - deterministic inputs and labels --------*- C++ -*-===//

#ifndef PP_RUNTIME_SYNTHETICDATA_H
#define PP_RUNTIME_SYNTHETICDATA_H

#include "runtime/data/MicrobatchSource.h"
#include "runtime/pp_runtime.h"

#include <string>

namespace pp::runtime {

/// Fills `tensor`, whose dimension 0 holds samples `firstSample`,
/// `firstSample + 1`, ..., with the values of stream `stream` (an input or
/// label name): each element depends only on (seed, stream, global sample
/// index, element index), so every rank and every stage count sees the same
/// data. f32 values are uniform in [-1, 1); i64 and i32 values in
/// [0, bound) (class indices, or ids below an embedding's row count).
/// Throws std::runtime_error for other dtypes.
void fillSynthetic(pp_tensor *tensor, uint64_t seed, const std::string &stream,
                   int64_t firstSample, int64_t bound);

/// Fills the labels `tensor` of a step's microbatch like fillSynthetic
/// (stream `stream`, the labels' name; class indices below `classes` for
/// i64 labels). Class
/// labels of rank 2 or more hold a sequence per sample, and are padded as
/// real batches of sequences are: sample g ends after its first
/// `L - g % (L + 1)` positions (L per sample) and the rest are
/// `ignoreIndex`, so that microbatches count different numbers of tokens
/// (some none).
void fillSyntheticLabels(pp_tensor *tensor, uint64_t seed,
                         const std::string &stream, int64_t firstSample,
                         int64_t classes, int64_t ignoreIndex);

/// Throws std::runtime_error, naming the tensor and its dtype, unless
/// synthetic data can fill it: f32 for an input, or i64 or i32 for an
/// input that indexes a table (`indexBound`, its rows, above 0); f32 (mse
/// targets) or i64 (class indices) for the labels (`isLabel`).
void checkSyntheticDtype(const std::string &name, pp_dtype dtype, bool isLabel,
                         int64_t indexBound = 0);

/// The synthetic samples of data-parallel coordinate `dataRank`: sample
/// positions come from the batch layout (BatchLayout::firstPosition), values from
/// fillSynthetic (inputs, below their index bound) and fillSyntheticLabels
/// (labels: the package's class count and ignore_index).
class SyntheticMicrobatches : public MicrobatchSource {
public:
  SyntheticMicrobatches(const Package &package, uint64_t seed,
                        BatchLayout layout, int64_t dataRank);

  void fillInput(const TensorInfo &input, int64_t batchStart,
                 int64_t microbatch, pp_tensor *tensor) override;
  void fillLabels(int64_t batchStart, int64_t microbatch,
                  pp_tensor *tensor) override;

private:
  const Package &package;
  uint64_t seed;
  BatchLayout layout;
  int64_t dataRank;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_SYNTHETICDATA_H
