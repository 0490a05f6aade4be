//===- ParameterUpdate.cpp - optimizer steps, whole or sharded ------------===//

#include "runtime/training/ParameterUpdate.h"

#include <algorithm>
#include <cstring>

namespace pp::runtime {

ParameterUpdate::ParameterUpdate(OptimizerOptions options,
                                 Communicator &dataParallel, bool sharded)
    : optimizer(options), bufferNames(optimizerBufferNames(options)),
      dataParallel(dataParallel),
      sharded(sharded && dataParallel.worldSize() > 1) {}

int64_t
ParameterUpdate::shareSize(const std::vector<ParameterSlot> &parameters) const {
  int64_t total = 0;
  for (const ParameterSlot &parameter : parameters)
    total += parameter.count;
  int64_t ranks = sharded ? dataParallel.worldSize() : 1;
  return (total + ranks - 1) / ranks;
}

void ParameterUpdate::forEachShare(
    const std::vector<ParameterSlot> &parameters,
    const std::function<void(const ParameterSlot &, int64_t, int64_t,
                             int64_t)> &visit) const {
  int64_t share = shareSize(parameters);
  int64_t begin = sharded ? dataParallel.rank() * share : 0;
  // This rank's elements are [begin, begin + share) of the concatenated
  // parameters.
  int64_t offset = 0;
  for (const ParameterSlot &parameter : parameters) {
    int64_t first =
        std::min(std::max<int64_t>(begin - offset, 0), parameter.count);
    int64_t last =
        std::max(first, std::min<int64_t>(begin + share - offset,
                                          parameter.count));
    visit(parameter, first, last, offset);
    offset += parameter.count;
  }
}

void ParameterUpdate::apply(const std::vector<ParameterSlot> &parameters,
                            float clip, float learningRate) {
  // Step this rank's elements; the optimizer state of a parameter covers
  // its elements in that range.
  forEachShare(parameters, [&](const ParameterSlot &parameter, int64_t first,
                               int64_t last, int64_t) {
    if (first == last)
      return;
    if (clip < 1.0f)
      for (int64_t i = first; i < last; ++i)
        parameter.gradient[i] *= clip;
    optimizer.step(parameter.name, parameter.values + first,
                   parameter.gradient + first, last - first, learningRate,
                   parameter.decay);
  });
  if (!sharded)
    return;

  // Every rank contributes its share (padded to `share`) and receives all.
  int64_t share = shareSize(parameters);
  int64_t ranks = dataParallel.worldSize();
  int64_t begin = dataParallel.rank() * share;
  std::vector<float> mine(share, 0.0f), all(share * ranks);
  forEachShare(parameters, [&](const ParameterSlot &parameter, int64_t first,
                               int64_t last, int64_t offset) {
    std::copy(parameter.values + first, parameter.values + last,
              mine.begin() + (offset + first - begin));
  });
  dataParallel.allGather(mine.data(), mine.size(), all.data());
  int64_t offset = 0;
  for (const ParameterSlot &parameter : parameters) {
    std::memcpy(parameter.values, all.data() + offset,
                parameter.count * sizeof(float));
    offset += parameter.count;
  }
}

std::map<std::string, ParameterState>
ParameterUpdate::gatherState(const std::vector<ParameterSlot> &parameters) {
  std::map<std::string, ParameterState> states;
  if (!sharded) {
    for (const ParameterSlot &parameter : parameters) {
      ParameterState state = optimizer.exportState(parameter.name);
      if (state.steps > 0)
        states[parameter.name] = std::move(state);
    }
    return states;
  }
  // Each buffer's share, padded like apply's, and each parameter's step
  // count from the rank that steps its first element.
  int64_t share = shareSize(parameters);
  int64_t begin = dataParallel.rank() * share;
  std::vector<double> steps(parameters.size(), 0.0);
  std::vector<std::vector<float>> mine(bufferNames.size(),
                                       std::vector<float>(share, 0.0f));
  size_t index = 0;
  forEachShare(parameters, [&](const ParameterSlot &parameter, int64_t first,
                               int64_t last, int64_t offset) {
    size_t at = index++;
    ParameterState state = optimizer.exportState(parameter.name);
    if (first == last || state.steps == 0)
      return;
    if (first == 0)
      steps[at] = static_cast<double>(state.steps);
    for (size_t b = 0; b < bufferNames.size(); ++b) {
      const std::vector<float> &values = state.buffers.at(bufferNames[b]);
      std::copy(values.begin(), values.end(),
                mine[b].begin() + (offset + first - begin));
    }
  });
  dataParallel.allReduceSum(steps);
  std::vector<float> all(share * dataParallel.worldSize());
  for (size_t b = 0; b < bufferNames.size(); ++b) {
    dataParallel.allGather(mine[b].data(), mine[b].size(), all.data());
    int64_t offset = 0;
    for (size_t p = 0; p < parameters.size(); ++p) {
      if (steps[p] > 0)
        states[parameters[p].name].buffers[bufferNames[b]].assign(
            all.begin() + offset, all.begin() + offset + parameters[p].count);
      offset += parameters[p].count;
    }
  }
  for (size_t p = 0; p < parameters.size(); ++p)
    if (steps[p] > 0)
      states[parameters[p].name].steps = static_cast<int64_t>(steps[p]);
  return states;
}

void ParameterUpdate::loadState(
    const std::vector<ParameterSlot> &parameters,
    const std::map<std::string, ParameterState> &states) {
  forEachShare(parameters, [&](const ParameterSlot &parameter, int64_t first,
                               int64_t last, int64_t) {
    auto it = states.find(parameter.name);
    if (first == last || it == states.end())
      return;
    ParameterState mine{it->second.steps, {}};
    for (const auto &[name, values] : it->second.buffers)
      mine.buffers[name].assign(values.begin() + first, values.begin() + last);
    optimizer.importState(parameter.name, mine);
  });
}

} // namespace pp::runtime
