//===- TensorStreaming.cpp - whole tensors from every stage to stage 0 ----===//

#include "runtime/training/TensorStreaming.h"

#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/training/HostTensors.h"
#include "runtime/training/TensorShards.h"

#include <algorithm>

namespace pp::runtime {

TensorValues heldIn(const std::map<std::string, TensorPtr> &held) {
  return [&held](const std::string &name) {
    return floatsOf(held.at(name).get());
  };
}

std::vector<TensorEntry>
entriesByName(const std::vector<ParameterInfo> &listed) {
  std::vector<TensorEntry> entries;
  for (const ParameterInfo &parameter : listed)
    entries.push_back({parameter.tensor.name, parameter.globalShape()});
  std::sort(entries.begin(), entries.end(),
            [](const TensorEntry &a, const TensorEntry &b) {
              return a.name < b.name;
            });
  return entries;
}

std::string TensorStreamer::stream(const std::vector<ParameterInfo> &listed,
                                   const TensorValues &valuesOf,
                                   const std::string &channel,
                                   const TensorSink &sink) {
  Communicator &pipeline = *groups.pipeline;
  int64_t rank = stages.rank();
  std::map<std::string, const ParameterInfo *> byName;
  for (const ParameterInfo &parameter : listed)
    byName[parameter.tensor.name] = &parameter;
  bool first = groups.tensorParallelRank == 0;
  ParametersDigest digest;
  std::vector<float> received, gathered;
  for (const TensorEntry &entry : entriesByName(listed)) {
    const std::string &name = entry.name;
    const ParameterInfo &parameter = *byName.at(name);
    int64_t count = numElements(entry.shape);
    size_t bytes = count * sizeof(float);
    int owner = static_cast<int>(stages.rankOf(parameter.stage));
    const float *values = nullptr;
    if (owner == rank)
      values = wholeValues(parameter, valuesOf, channel, gathered);
    if (!first)
      continue;
    uint64_t request = messageSlot(channel + "/request/" + name);
    uint64_t slot = messageSlot(channel + "/" + name);
    if (rank != 0) {
      if (owner == rank) {
        // Rank 0 asks for the tensors in name order, whatever it spends
        // on the others': wait for it as long as it is alive.
        char ready = 0;
        pipeline.recv(0, request, &ready, sizeof(ready),
                      Patience::UntilSenderEnds);
        pipeline.send(0, slot, values, bytes);
      }
      continue;
    }
    if (owner != 0) {
      char ready = 1;
      pipeline.send(owner, request, &ready, sizeof(ready));
      received.resize(count);
      pipeline.recv(owner, slot, received.data(), bytes);
      values = received.data();
    }
    digest.add(name, values, count);
    sink(name, entry.shape, values);
  }
  return rank == 0 && first ? digest.finish() : "";
}

void TensorStreamer::assemble(const std::vector<ParameterInfo> &listed,
                              const TensorValues &valuesOf,
                              const std::string &channel,
                              const TensorSink &sink) {
  std::map<std::string, const ParameterInfo *> byName;
  for (const ParameterInfo &parameter : listed)
    byName[parameter.tensor.name] = &parameter;
  std::vector<float> gathered;
  for (const TensorEntry &entry : entriesByName(listed)) {
    const float *values =
        wholeValues(*byName.at(entry.name), valuesOf, channel, gathered);
    if (groups.tensorParallelRank == 0)
      sink(entry.name, entry.shape, values);
  }
}

const float *TensorStreamer::wholeValues(const ParameterInfo &parameter,
                                         const TensorValues &valuesOf,
                                         const std::string &channel,
                                         std::vector<float> &gathered) {
  const std::string &name = parameter.tensor.name;
  const float *values = valuesOf(name);
  if (!parameter.sharding)
    return values;
  gathered =
      gatherShardsToFirst(*parameter.sharding, *groups.tensorParallel,
                          messageSlot(channel + "/shards/" + name), values);
  return gathered.data();
}

} // namespace pp::runtime
