//===- ModelWeights.h - pretrained weights in, trained weights out -*- C++ -*-===//
//
// pp-run --weights starts the parameters from a safetensors checkpoint;
// --save-weights writes the trained ones back under the file's names
// (docs/huggingface.md).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_MODELWEIGHTS_H
#define PP_RUNTIME_TRAINING_MODELWEIGHTS_H

#include "runtime/checkpoints/PretrainedWeights.h"
#include "runtime/checkpoints/SafeTensors.h"
#include "runtime/package/Package.h"
#include "runtime/training/TrainerOptions.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// Binds the parameters of `package` to `weights` under `naming`
/// (bindWeights); throws std::runtime_error listing what does not fit.
WeightsBinding bindPackageWeights(const Package &package,
                                  const PretrainedWeights &weights,
                                  const WeightsNaming &naming);

/// The --weights file a run starts from and the --save-weights file it
/// writes, with the names that bind them to the model's tensors.
class ModelWeights {
public:
  /// Opens and binds `options.path` (when set) to `package`'s tensors, and
  /// checks that no two tensors would share a name in `options.savePath`
  /// (when set). Throws std::runtime_error naming what does not fit.
  ModelWeights(const Package &package, const WeightsOptions &options);

  /// Reads the tensor the --weights file gives for the model tensor `name`
  /// into `values` (of its global shape) and returns true; false, doing
  /// nothing, when the file does not give it (or there is none).
  bool read(const std::string &name, float *values) const;

  /// Whether the run writes --save-weights.
  bool saves() const { return !options.savePath.empty(); }
  /// The tensors --save-weights writes: trained and frozen parameters (a
  /// module's state_dict without its buffers).
  std::vector<ParameterInfo> toSave() const;
  /// Creates the --save-weights file for toSave() in the order
  /// streamTensors hands them over (by model name), under the file's
  /// names, with the metadata transformers' from_pretrained expects.
  std::unique_ptr<SafeTensorsWriter> createSavedFile() const;
  /// The name --save-weights gives the model tensor `name`: the one
  /// --weights gave it, else the model's without --weights-prefix.
  std::string savedNameOf(const std::string &name) const;

private:
  void checkSavedNamesDiffer() const;

  const Package &package;
  const WeightsOptions &options;
  /// --weights' files and the parameters they give (model name -> file
  /// name); none without --weights.
  std::optional<PretrainedWeights> file;
  WeightsBinding binding;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_MODELWEIGHTS_H
