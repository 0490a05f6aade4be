//===- ParameterUpdate.cpp - optimizer steps, whole or sharded ------------===//

#include "runtime/training/ParameterUpdate.h"

#include <algorithm>
#include <cstring>

namespace pp::runtime {

ParameterUpdate::ParameterUpdate(OptimizerOptions options,
                                 FlatParameters &flat,
                                 Communicator &dataParallel, bool sharded)
    : optimizer(std::move(options)), flat(flat), dataParallel(dataParallel),
      sharded(sharded && dataParallel.worldSize() > 1) {
  int64_t ranks = this->sharded ? dataParallel.worldSize() : 1;
  share = (flat.size() + ranks - 1) / ranks;
  begin = std::min(flat.size(), this->sharded ? dataParallel.rank() * share : 0);
  end = std::min(flat.size(), begin + share);
  // One segment per parameter with elements in [begin, end), at positions
  // relative to begin.
  std::vector<OptimizerSegment> segments;
  for (const FlatParameter &parameter : flat.parameters()) {
    int64_t first = std::max(begin, parameter.offset);
    int64_t last = std::min(end, parameter.offset + parameter.count);
    if (first < last)
      segments.push_back({parameter.name, first - begin, last - begin,
                          optimizer.decays(parameter.name, parameter.rank)});
  }
  optimizer.layOut(std::move(segments));
}

void ParameterUpdate::apply(float clip, float learningRate) {
  float *gradients = flat.gradients();
  if (clip < 1.0f)
    for (int64_t i = begin; i < end; ++i)
      gradients[i] *= clip;
  optimizer.step(flat.values() + begin, gradients + begin, learningRate);
  if (!sharded)
    return;

  // Every rank contributes its share (padded to `share`) and receives all.
  std::vector<float> mine(share, 0.0f), all(share * dataParallel.worldSize());
  std::copy(flat.values() + begin, flat.values() + end, mine.begin());
  dataParallel.allGather(mine.data(), mine.size(), all.data());
  std::memcpy(flat.values(), all.data(), flat.size() * sizeof(float));
}

std::map<std::string, ParameterState> ParameterUpdate::gatherState() {
  std::map<std::string, ParameterState> states;
  const std::vector<FlatParameter> &parameters = flat.parameters();
  if (!sharded) {
    for (const FlatParameter &parameter : parameters) {
      ParameterState state = optimizer.exportState(parameter.name);
      if (state.steps > 0)
        states[parameter.name] = std::move(state);
    }
    return states;
  }
  // Each parameter's step count from the rank that steps its first
  // element, and each buffer's shares, padded like apply's.
  std::vector<double> steps(parameters.size(), 0.0);
  for (size_t p = 0; p < parameters.size(); ++p)
    if (parameters[p].offset >= begin && parameters[p].offset < end)
      steps[p] = static_cast<double>(
          optimizer.exportState(parameters[p].name).steps);
  dataParallel.allReduceSum(steps);
  const std::vector<std::string> &bufferNames = optimizer.stateBufferNames();
  std::vector<float> mine(share), all(share * dataParallel.worldSize());
  for (size_t b = 0; b < bufferNames.size(); ++b) {
    const std::vector<float> &held = optimizer.buffer(b);
    std::fill(mine.begin(), mine.end(), 0.0f);
    std::copy(held.begin(), held.end(), mine.begin());
    dataParallel.allGather(mine.data(), mine.size(), all.data());
    for (size_t p = 0; p < parameters.size(); ++p)
      if (steps[p] > 0)
        states[parameters[p].name].buffers[bufferNames[b]].assign(
            all.begin() + parameters[p].offset,
            all.begin() + parameters[p].offset + parameters[p].count);
  }
  for (size_t p = 0; p < parameters.size(); ++p)
    if (steps[p] > 0)
      states[parameters[p].name].steps = static_cast<int64_t>(steps[p]);
  return states;
}

void ParameterUpdate::loadState(
    const std::map<std::string, ParameterState> &states) {
  for (const FlatParameter &parameter : flat.parameters()) {
    auto it = states.find(parameter.name);
    int64_t first = std::max(begin, parameter.offset) - parameter.offset;
    int64_t last =
        std::min(end, parameter.offset + parameter.count) - parameter.offset;
    if (first >= last || it == states.end())
      continue;
    ParameterState mine{it->second.steps, {}};
    for (const auto &[name, values] : it->second.buffers)
      mine.buffers[name].assign(values.begin() + first, values.begin() + last);
    optimizer.importState(parameter.name, mine);
  }
}

} // namespace pp::runtime
