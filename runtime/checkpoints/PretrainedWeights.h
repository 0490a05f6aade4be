//===- PretrainedWeights.h - a model's parameters from HF files -*- C++ -*-===//
//
// `--weights` reads parameters by name from safetensors files as Hugging
// Face's save_pretrained writes them: one `model.safetensors`, a sharded
// checkpoint's `model.safetensors.index.json` (its "weight_map" names the
// shard file of every tensor, files beside the index), or a folder holding
// either (the index first), or a pp checkpoint's DIR/step-N folder (the
// parameter files its state.json lists, docs/checkpoints.md). F32, F16,
// BF16 and F64 tensors convert to the model's f32.
//
// bindWeights matches the file's names to the model's, as PyTorch's
// load_state_dict does: model name = prefix + file name (a model name
// without the prefix is looked up as it is). Strict (the
// default), every trained or frozen parameter must be in the files, every
// tensor of the files must be a tensor of the model, and shapes and dtypes
// must fit; the error lists each missing, unexpected, misshapen and
// unconvertible tensor at once. Not strict, the tensors both have load and
// the rest keep the model's values.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PRETRAINEDWEIGHTS_H
#define PP_RUNTIME_PRETRAINEDWEIGHTS_H

#include "runtime/checkpoints/SafeTensors.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// The tensors of one safetensors file, of a sharded checkpoint's files, or
/// of a pp checkpoint's parameter files.
class PretrainedWeights {
public:
  /// Opens `path` (a .safetensors file, an index .json, a folder holding
  /// either, or a pp checkpoint's step-N folder) and every shard; throws
  /// std::runtime_error naming the file and the fix.
  static PretrainedWeights open(const std::string &path);

  /// What was opened, for messages: "DIR/model.safetensors" or
  /// "DIR/model.safetensors.index.json (3 shards)".
  const std::string &description() const { return described; }
  /// The entry `name`, or null.
  const TensorEntry *find(const std::string &name) const;
  /// Every tensor's name, sorted.
  std::vector<std::string> names() const;
  /// Writes tensor `name`'s values to `out` as f32.
  void read(const std::string &name, float *out) const;

private:
  static PretrainedWeights openCheckpoint(const std::string &dir);

  std::string described;
  std::vector<std::unique_ptr<SafeTensorsFile>> files;
  /// Per name: the file that holds it.
  std::map<std::string, const SafeTensorsFile *> holder;
};

/// A tensor of the model that weights may give, by its global name.
struct ModelTensor {
  std::string name;
  Shape shape;
  /// A trained or frozen parameter, which strict loading requires; a
  /// constant loads when the files hold it.
  bool required = true;
  /// The parameter an exporter folded this tensor from, if it did (a
  /// checkpoint names that one, never this): said when it is missing.
  std::string foldedFrom = "";
};

/// How --weights' names map to the model's.
struct WeightsNaming {
  /// Model name = prefix + file name (--weights-prefix).
  std::string prefix;
  /// Refuse missing and unexpected tensors (--weights-strict).
  bool strict = true;
};

/// The model tensors `weights` gives.
struct WeightsBinding {
  /// Model name -> file name.
  std::map<std::string, std::string> fileNames;
  /// "MODEL from the file's FILE" for each tensor bound by shape, not name.
  std::vector<std::string> renamed;
  /// Not strict: the required model tensors the file does not give.
  std::vector<std::string> missing;
};

/// Matches `weights` to `model` under `naming` (see the file comment);
/// throws std::runtime_error listing every problem and the fix. A misshapen
/// or unconvertible tensor is an error even when not strict.
///
/// A tied weight keeps one name in a file and may have the other in the
/// model: save_pretrained drops a tie's target (GPT-2's lm_head.weight,
/// BERT's cls.predictions.decoder.*), while torch.onnx.export names the
/// shared initializer after it. So when some names match, each required
/// tensor still missing binds to the one unexpected tensor of its shape,
/// if that shape is unique to the two of them among the leftovers and,
/// strict, the pairs account for every unexpected tensor. A model name
/// without the prefix is looked up as it is; a file tensor that two model
/// names would read is an error.
WeightsBinding bindWeights(const PretrainedWeights &weights,
                           const std::vector<ModelTensor> &model,
                           const WeightsNaming &naming);

/// What --weights loaded, one line: "weights: 21 of the model's 21 tensors
/// from 'FILE', 21 converted from BF16" and the tensors bound by shape; the
/// missing ones (not strict) with `rest`, what they start from instead.
std::string describeBinding(const PretrainedWeights &weights,
                            const WeightsBinding &binding,
                            size_t modelTensors, const std::string &rest);

/// The name `model` has in a weights file written under `naming`: without
/// the prefix (--save-weights).
std::string fileNameOf(const std::string &model, const WeightsNaming &naming);

} // namespace pp::runtime

#endif // PP_RUNTIME_PRETRAINEDWEIGHTS_H
