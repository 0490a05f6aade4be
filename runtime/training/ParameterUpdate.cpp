//===- ParameterUpdate.cpp - optimizer steps, whole or sharded ------------===//

#include "runtime/training/ParameterUpdate.h"

#include <algorithm>
#include <cstring>

namespace pp::runtime {

ParameterUpdate::ParameterUpdate(OptimizerOptions options,
                                 Communicator &dataParallel, bool sharded)
    : optimizer(std::move(options)), dataParallel(dataParallel),
      sharded(sharded && dataParallel.worldSize() > 1) {}

void ParameterUpdate::apply(const std::vector<ParameterSlot> &parameters,
                            float clip, float learningRate) {
  int64_t total = 0;
  for (const ParameterSlot &parameter : parameters)
    total += parameter.count;
  int64_t ranks = sharded ? dataParallel.worldSize() : 1;
  int64_t share = (total + ranks - 1) / ranks;
  int64_t begin = sharded ? dataParallel.rank() * share : 0;
  int64_t end = std::min(total, begin + share);

  // Step the elements [begin, end) of the concatenated parameters; the
  // optimizer state of a parameter covers its elements in that range.
  int64_t offset = 0;
  for (const ParameterSlot &parameter : parameters) {
    int64_t first = std::max<int64_t>(begin - offset, 0);
    int64_t last = std::min<int64_t>(end - offset, parameter.count);
    offset += parameter.count;
    if (first >= last)
      continue;
    if (clip < 1.0f)
      for (int64_t i = first; i < last; ++i)
        parameter.gradient[i] *= clip;
    optimizer.step(parameter.name, parameter.values + first,
                   parameter.gradient + first, last - first, learningRate,
                   parameter.decay);
  }
  if (!sharded)
    return;

  // Every rank contributes its share (padded to `share`) and receives all.
  std::vector<float> mine(share, 0.0f), all(share * ranks);
  offset = 0;
  for (const ParameterSlot &parameter : parameters) {
    for (int64_t i = std::max<int64_t>(begin - offset, 0),
                 last = std::min<int64_t>(end - offset, parameter.count);
         i < last; ++i)
      mine[offset + i - begin] = parameter.values[i];
    offset += parameter.count;
  }
  dataParallel.allGather(mine.data(), mine.size(), all.data());
  offset = 0;
  for (const ParameterSlot &parameter : parameters) {
    std::memcpy(parameter.values, all.data() + offset,
                parameter.count * sizeof(float));
    offset += parameter.count;
  }
}

} // namespace pp::runtime
