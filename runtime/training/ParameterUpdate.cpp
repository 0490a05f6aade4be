//===- ParameterUpdate.cpp - optimizer steps at a ZeRO level --------------===//

#include "runtime/training/ParameterUpdate.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace pp::runtime {

ParameterUpdate::ParameterUpdate(OptimizerOptions options,
                                 FlatParameters &flat,
                                 Communicator &dataParallel,
                                 CollectiveGroup &buffers, int zeroLevel,
                                 StateDevice where)
    : optimizer(std::move(options), where), flat(flat),
      dataParallel(dataParallel), buffers(buffers), where(where),
      level(dataParallel.worldSize() > 1 ? zeroLevel : 0) {
  if (zeroLevel < 0 || zeroLevel > kMaxZeroLevel)
    throw std::invalid_argument("ZeRO level " + std::to_string(zeroLevel) +
                                " does not exist; the levels are 0 to " +
                                std::to_string(kMaxZeroLevel));
  int64_t ranks = level > 0 ? dataParallel.worldSize() : 1;
  share = (flat.size() + ranks - 1) / ranks;
  begin = std::min(flat.size(), level > 0 ? dataParallel.rank() * share : 0);
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
    where.kernels.scale(where.queue, gradients + begin, end - begin, clip);
  optimizer.step(flat.values() + begin, gradients + begin, learningRate);
  if (level == 1 || level == 2)
    gatherValues(buffers, where.queue);
  releaseGradients();
}

void ParameterUpdate::skip() { releaseGradients(); }

void ParameterUpdate::releaseGradients() {
  if (shardsGradients())
    flat.releaseGradientsOutside(begin, end);
}

void ParameterUpdate::scaleGradients(float factor) {
  int64_t from = shardsGradients() ? begin : 0;
  int64_t to = shardsGradients() ? end : flat.size();
  where.kernels.scale(where.queue, flat.gradients() + from, to - from, factor);
}

void ParameterUpdate::gatherShares(float *buffer, CollectiveGroup &group,
                                   Queue &queue) {
  if (level == 0)
    return;
  // Every rank contributes its share (padded to `share`) and receives all
  // into the buffer, which FlatParameters pads to D shares.
  size_t bytes = static_cast<size_t>(share) * sizeof(float);
  Buffer mine = Buffer::allocate(queue, bytes);
  queue.zero(mine.data(), bytes);
  queue.copy(mine.data(), buffer + begin, (end - begin) * sizeof(float));
  group.allGather(mine.data(), bytes, buffer, queue);
}

void ParameterUpdate::gatherValues(CollectiveGroup &group, Queue &queue) {
  gatherShares(flat.values(), group, queue);
}

void ParameterUpdate::gatherGradients() {
  if (shardsGradients())
    gatherShares(flat.gradients(), buffers, where.queue);
}

void ParameterUpdate::releaseValues() {
  if (shardsValues())
    flat.releaseValuesOutside(begin, end);
}

std::map<std::string, double> ParameterUpdate::gradientSquares() {
  if (level >= 2)
    return sharedGradientSquares();
  // This rank walks every share in turn, as the ranks do one each above.
  int64_t ranks = dataParallel.worldSize();
  int64_t shareSize = std::max<int64_t>(1, (flat.size() + ranks - 1) / ranks);
  std::map<std::string, double> running;
  for (int64_t from = 0; from < flat.size(); from += shareSize)
    addShareSquares(from, std::min(flat.size(), from + shareSize), running);
  return running;
}

std::map<std::string, double> ParameterUpdate::sharedGradientSquares() {
  // The parameter that began on an earlier share (its running sum comes
  // from the rank before) and the one that goes on to a later share (its
  // running sum goes to the rank after); they may be one.
  const FlatParameter *continued = nullptr, *continuing = nullptr;
  for (const FlatParameter &parameter : flat.parameters()) {
    int64_t last = parameter.offset + parameter.count;
    if (parameter.offset < begin && last > begin)
      continued = &parameter;
    if (parameter.offset < end && last > end)
      continuing = &parameter;
  }
  // The sums that start on this share need nobody's.
  int64_t restBegin =
      continued ? std::min(end, continued->offset + continued->count) : begin;
  std::map<std::string, double> running;
  addShareSquares(restBegin, end, running);
  // Rank k's running sum is final once rank k - 1's has arrived.
  int me = dataParallel.rank(), ranks = dataParallel.worldSize();
  for (int k = 0; k < ranks; ++k) {
    if (me == k && continued)
      addShareSquares(begin, restBegin, running);
    if (k + 1 == ranks)
      break;
    double passed = me == k && continuing ? running.at(continuing->name) : 0;
    dataParallel.broadcast(&passed, sizeof(passed), k);
    if (me == k + 1 && continued)
      running[continued->name] = passed;
  }
  // The rank holding its last element reports a sum.
  if (continuing)
    running.erase(continuing->name);
  return running;
}

void ParameterUpdate::addShareSquares(int64_t from, int64_t to,
                                      std::map<std::string, double> &running) {
  std::vector<const FlatParameter *> pieces;
  std::vector<SquaredRange> ranges;
  for (const FlatParameter &parameter : flat.parameters()) {
    int64_t first = std::max(from, parameter.offset);
    int64_t last = std::min(to, parameter.offset + parameter.count);
    if (first >= last)
      continue;
    pieces.push_back(&parameter);
    ranges.push_back({first, last, running[parameter.name]});
  }
  std::vector<double> sums =
      where.kernels.sumSquares(where.queue, flat.gradients(), ranges);
  for (size_t i = 0; i < pieces.size(); ++i)
    running[pieces[i]->name] = sums[i];
}

std::map<std::string, ParameterState> ParameterUpdate::gatherState() {
  std::map<std::string, ParameterState> states;
  const std::vector<FlatParameter> &parameters = flat.parameters();
  if (level == 0) {
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
    std::vector<float> held = optimizer.buffer(b);
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
