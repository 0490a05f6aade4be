//===- TokenBatches.h - language-model microbatches from tokens -*- C++ -*-===//
//
// A token dataset of T tokens holds (T - 1) / S samples of sequence length
// S: sample n is the window of tokens [n S, n S + S + 1). The model's data
// input takes its first S tokens, the cross-entropy labels its last S (each
// input token's successor). Training reads the samples in the
// TrainingSampler's order, eval in the EvalSampler's (padding samples
// become ignore_index labels, masked out of the loss).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENBATCHES_H
#define PP_RUNTIME_TOKENBATCHES_H

#include "runtime/data/MicrobatchSource.h"
#include "runtime/data/TokenDataset.h"

#include <memory>
#include <string>

namespace pp::runtime {

/// How a package reads a token dataset.
struct TokenDataConfig {
  /// The model input that takes the tokens, and its dtype (i64 or i32).
  std::string input;
  pp_dtype inputDtype = PP_DTYPE_I64;
  /// S: tokens per sample.
  int64_t sequenceLength = 0;
  /// The model's sequence: S, or more when samples are padded to it (token
  /// 0 in the input, ignore_index in the labels, masked out of the loss).
  int64_t paddedLength = 0;
  /// Tokens must lie below this: the smaller of the rows of the table the
  /// input indexes and the loss's class count.
  int64_t vocabulary = 0;
  int64_t ignoreIndex = -100;
};

/// Checks that `package` can train on tokens and returns how: a
/// cross_entropy loss whose labels are [microbatch, S] i64, and one
/// integer input of the same shape (`inputName`, or the model's only
/// integer input) and no other input. `sequenceLength` 0 takes S from the
/// model; another value must equal it or, with `padSequence`, be at most
/// the model's sequence, samples then being padded to it. Throws
/// std::runtime_error naming what does not fit and how to fix it.
TokenDataConfig tokenDataConfig(const Package &package,
                                const std::string &inputName,
                                int64_t sequenceLength,
                                bool padSequence = false);

/// The samples a dataset of `tokens` tokens holds at sequence length `S`:
/// (tokens - 1) / S, 0 when it holds fewer than S + 1 tokens.
int64_t tokenWindows(int64_t tokens, int64_t sequenceLength);

/// Throws std::runtime_error, naming the file, unless `dataset` holds at
/// least one sample and every token lies below the model's vocabulary
/// (naming the first token outside it and where it is).
void checkTokenDataset(const TokenDataConfig &config,
                       const TokenDataset &dataset);

/// The training microbatches of data-parallel coordinate `dataRank`: the
/// batch starting at c is the step that starts at consumed-samples cursor
/// c of the order of TrainingSampler(seed, samples).
std::unique_ptr<MicrobatchSource>
trainingMicrobatches(const TokenDataset &dataset,
                     const TokenDataConfig &config, uint64_t seed,
                     const BatchLayout &layout, int64_t dataRank);

/// The eval microbatches of data-parallel coordinate `dataRank`: the batch
/// starting at e * B is batch e of EvalSampler(samples, layout,
/// maxBatches).
std::unique_ptr<MicrobatchSource>
evalMicrobatches(const TokenDataset &dataset, const TokenDataConfig &config,
                 const BatchLayout &layout, int64_t dataRank,
                 int64_t maxBatches);

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENBATCHES_H
