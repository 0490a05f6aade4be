//===- TokenBatches.cpp - language-model microbatches from tokens ---------===//

#include "runtime/data/TokenBatches.h"

#include "runtime/core/Shapes.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace pp::runtime {
namespace {

bool isInteger(pp_dtype dtype) {
  return dtype == PP_DTYPE_I64 || dtype == PP_DTYPE_I32;
}

/// Token microbatches whose samples (-1 for padding) a sampler names.
class TokenMicrobatches : public MicrobatchSource {
public:
  using Samples =
      std::function<std::vector<int64_t>(int64_t batchStart,
                                         int64_t microbatch)>;

  TokenMicrobatches(const TokenDataset &dataset, TokenDataConfig config,
                    Samples samples)
      : dataset(dataset), config(std::move(config)),
        samples(std::move(samples)) {}

  void fillInput(const TensorInfo &input, int64_t batchStart,
                 int64_t microbatch, pp_tensor *tensor) override {
    if (input.name != config.input)
      throw std::runtime_error("the token data feeds the input '" +
                               config.input + "', not '" + input.name + "'");
    // A padding sample's inputs are token 0; its labels are all masked.
    fill(batchStart, microbatch, /*offset=*/0, /*padding=*/0, tensor);
  }

  void fillLabels(int64_t batchStart, int64_t microbatch,
                  pp_tensor *tensor) override {
    fill(batchStart, microbatch, /*offset=*/1, config.ignoreIndex, tensor);
  }

private:
  /// Row j of `tensor` gets the tokens [n S + offset, + S) of the j-th
  /// sample n of the microbatch, or `padding` for a padding sample; the
  /// positions past S of a padded sequence get `padding` too.
  void fill(int64_t batchStart, int64_t microbatch, int64_t offset,
            int64_t padding, pp_tensor *tensor) {
    int64_t length = config.sequenceLength;
    int64_t padded = std::max(config.paddedLength, length);
    std::vector<int64_t> rows = samples(batchStart, microbatch);
    if (pp_tensor_numel(tensor) != static_cast<int64_t>(rows.size()) * padded)
      throw std::runtime_error(
          "a token microbatch of " + std::to_string(rows.size()) +
          " samples of " + std::to_string(padded) + " tokens does not fill " +
          formatShape(Shape(pp_tensor_shape(tensor),
                            pp_tensor_shape(tensor) + pp_tensor_rank(tensor))));
    std::vector<int64_t> tokens(padded, padding);
    for (size_t j = 0; j < rows.size(); ++j) {
      if (rows[j] < 0) {
        std::fill(tokens.begin(), tokens.begin() + length, padding);
      } else {
        dataset.read(rows[j] * length + offset, length, tokens.data());
        elements += length;
      }
      if (pp_tensor_dtype(tensor) == PP_DTYPE_I32)
        std::copy(tokens.begin(), tokens.end(),
                  static_cast<int32_t *>(pp_tensor_data(tensor)) + j * padded);
      else
        std::copy(tokens.begin(), tokens.end(),
                  static_cast<int64_t *>(pp_tensor_data(tensor)) + j * padded);
    }
  }

  const TokenDataset &dataset;
  TokenDataConfig config;
  Samples samples;
};

} // namespace

TokenDataConfig tokenDataConfig(const Package &package,
                                const std::string &inputName,
                                int64_t sequenceLength, bool padSequence) {
  if (package.lossKind != "cross_entropy")
    throw std::runtime_error(
        "--data trains a language model with a cross_entropy loss, but the "
        "package's loss is " + package.lossKind +
        "; compile it with --loss cross_entropy:OUTPUT, or use --data "
        "synthetic");
  const TensorInfo *input = nullptr;
  std::string integers;
  for (const TensorInfo &candidate : package.inputs) {
    if (isInteger(candidate.dtype))
      integers += (integers.empty() ? "'" : ", '") + candidate.name + "'";
    if (inputName.empty() ? isInteger(candidate.dtype)
                          : candidate.name == inputName) {
      if (input)
        throw std::runtime_error(
            "the model has several integer inputs (" + integers +
            ", ...); name the one that takes the tokens with --data-input");
      input = &candidate;
    }
  }
  if (!input) {
    std::string names;
    for (const TensorInfo &candidate : package.inputs)
      names += (names.empty() ? "'" : ", '") + candidate.name + "' (" +
               pp_dtype_name(candidate.dtype) + ")";
    throw std::runtime_error(
        (inputName.empty()
             ? "--data feeds tokens to the model's integer input, but the "
               "model has none"
             : "--data-input '" + inputName + "' is not an input of the model") +
        "; its inputs are " + names);
  }
  if (!isInteger(input->dtype))
    throw std::runtime_error("--data-input '" + input->name + "' has dtype " +
                             pp_dtype_name(input->dtype) +
                             "; tokens go to an i64 or i32 input");
  for (const TensorInfo &other : package.inputs)
    if (&other != input)
      throw std::runtime_error(
          "the model takes the input '" + other.name + "' besides the token "
          "input '" + input->name + "'; --data feeds a model whose only "
          "input is its tokens (export it without the other inputs, or use "
          "--data synthetic)");
  const Shape &shape = input->shape;
  if (shape.size() != 2)
    throw std::runtime_error("the token input '" + input->name + "' is " +
                             formatShape(shape) +
                             "; --data feeds [microbatch, sequence] inputs");
  if (padSequence && sequenceLength == 0)
    throw std::runtime_error(
        "--pad-sequence pads samples of --seq-len S tokens to the model's "
        "sequence of " + std::to_string(shape[1]) +
        "; give S, the data's sequence length");
  if (padSequence && sequenceLength > shape[1])
    throw std::runtime_error(
        "--seq-len " + std::to_string(sequenceLength) +
        " is longer than the model's token input '" + input->name + "' of " +
        formatShape(shape) + ", so --pad-sequence cannot pad it; compile the "
        "model for sequences of at least " + std::to_string(sequenceLength));
  if (sequenceLength != 0 && sequenceLength != shape[1] && !padSequence)
    throw std::runtime_error(
        "--seq-len " + std::to_string(sequenceLength) +
        " does not match the model's token input '" + input->name + "' of " +
        formatShape(shape) + "; compile the model for sequences of " +
        std::to_string(sequenceLength) +
        " (--input-shape NAME=?x" + std::to_string(sequenceLength) +
        "xi64 for TorchScript, --dim NAME=" + std::to_string(sequenceLength) +
        " for a symbolic ONNX dimension) or pass --seq-len " +
        std::to_string(shape[1]));
  if (package.labels.shape != shape || package.labels.dtype != PP_DTYPE_I64)
    throw std::runtime_error(
        "the labels '" + package.labels.name + "' are " +
        formatShape(package.labels.shape) + " " +
        pp_dtype_name(package.labels.dtype) + ", but next-token labels of "
        "the input '" + input->name + "' are " + formatShape(shape) +
        " i64; the loss must take logits [microbatch, sequence, vocabulary]");
  TokenDataConfig config;
  config.input = input->name;
  config.inputDtype = input->dtype;
  config.sequenceLength = sequenceLength != 0 ? sequenceLength : shape[1];
  config.paddedLength = shape[1];
  config.vocabulary = package.lossClasses;
  if (input->indexBound > 0)
    config.vocabulary = std::min(config.vocabulary, input->indexBound);
  config.ignoreIndex = package.ignoreIndex;
  return config;
}

int64_t tokenWindows(int64_t tokens, int64_t sequenceLength) {
  return tokens > sequenceLength ? (tokens - 1) / sequenceLength : 0;
}

void checkTokenDataset(const TokenDataConfig &config,
                       const TokenDataset &dataset) {
  int64_t length = config.sequenceLength;
  if (tokenWindows(dataset.size(), length) < 1)
    throw std::runtime_error(
        "the token data '" + dataset.path() + "' holds " +
        std::to_string(dataset.size()) + " tokens, fewer than the " +
        std::to_string(length + 1) + " one sample of sequence length " +
        std::to_string(length) + " needs; use more text or a shorter "
        "sequence");
  if (dataset.maxToken() < config.vocabulary)
    return;
  int64_t at = dataset.firstTokenAtLeast(
      static_cast<uint32_t>(config.vocabulary));
  throw std::runtime_error(
      "token " + std::to_string(dataset.token(at)) + " at index " +
      std::to_string(at) + " of '" + dataset.path() +
      "' is outside the model's vocabulary of " +
      std::to_string(config.vocabulary) + " (its largest token is " +
      std::to_string(dataset.maxToken()) +
      "); tokenize the text for this model, or train a model whose "
      "embedding and output have at least " +
      std::to_string(dataset.maxToken() + 1) + " rows");
}

std::unique_ptr<MicrobatchSource>
trainingMicrobatches(const TokenDataset &dataset,
                     const TokenDataConfig &config, uint64_t seed,
                     const BatchLayout &layout, int64_t dataRank) {
  auto sampler = std::make_shared<TrainingSampler>(
      seed, tokenWindows(dataset.size(), config.sequenceLength));
  return std::make_unique<TokenMicrobatches>(
      dataset, config, [=](int64_t cursor, int64_t microbatch) {
        return sampler->microbatch(cursor, layout, dataRank, microbatch);
      });
}

std::unique_ptr<MicrobatchSource>
evalMicrobatches(const TokenDataset &dataset, const TokenDataConfig &config,
                 const BatchLayout &layout, int64_t dataRank,
                 int64_t maxBatches) {
  auto sampler = std::make_shared<EvalSampler>(
      tokenWindows(dataset.size(), config.sequenceLength), layout, maxBatches);
  return std::make_unique<TokenMicrobatches>(
      dataset, config, [=](int64_t batchStart, int64_t microbatch) {
        return sampler->microbatch(batchStart / layout.globalBatch(), dataRank,
                                   microbatch);
      });
}

} // namespace pp::runtime
