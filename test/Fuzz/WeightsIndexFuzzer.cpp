//===- WeightsIndexFuzzer.cpp - fuzzes the sharded weights index ----------===//
//
// Writes each input as the model.safetensors.index.json of a folder that
// holds two shards, first.safetensors (wte 4x2 and h.0.w 2) and
// second.safetensors (lm_head 2x4), then does what --weights does with the
// folder (runtime/checkpoints/PretrainedWeights.h): opens it, binds it to
// a model of those three tensors (strict and not) and reads every tensor
// it names. What opens must find each name it lists.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "runtime/checkpoints/PretrainedWeights.h"

#include <stdexcept>
#include <vector>

using namespace pp::runtime;

namespace {

/// The model the weights are for, its tensors as the shards hold them.
const std::vector<ModelTensor> &model() {
  static const std::vector<ModelTensor> tensors = {
      {"wte", {4, 2}}, {"h.0.w", {2}}, {"lm_head", {2, 4}}};
  return tensors;
}

/// Writes the shard `name` with `tensors` of `model()`, values 0, 1, ...
void writeShard(const pp::fuzz::ScratchDirectory &folder,
                const std::string &name,
                const std::vector<ModelTensor> &tensors) {
  std::vector<TensorEntry> entries;
  for (const ModelTensor &tensor : tensors)
    entries.push_back({tensor.name, tensor.shape});
  SafeTensorsWriter writer(folder.path() + "/" + name, entries, {});
  std::vector<float> values(8);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i);
  for (const ModelTensor &tensor : tensors)
    writer.add(tensor.name, values.data());
  writer.finish();
}

/// A folder holding the two shards.
struct ShardFolder : pp::fuzz::ScratchDirectory {
  ShardFolder() {
    writeShard(*this, "first.safetensors", {model()[0], model()[1]});
    writeShard(*this, "second.safetensors", {model()[2]});
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const ShardFolder folder;
  folder.write("model.safetensors.index.json", data, size);
  try {
    PretrainedWeights weights = PretrainedWeights::open(folder.path());
    for (const std::string &name : weights.names()) {
      const TensorEntry *entry = weights.find(name);
      if (!entry)
        pp::fuzz::fail("the weights list '" + name + "' but do not find it");
      std::vector<float> values(static_cast<size_t>(numElements(entry->shape)));
      weights.read(name, values.data());
    }
    for (bool strict : {true, false}) {
      try {
        bindWeights(weights, model(), {"", strict});
      } catch (const std::runtime_error &) {
      }
    }
  } catch (const std::runtime_error &) {
  }
  return 0;
}
