//===- Optimizer.cpp - parameter updates over flat buffers ----------------===//
//
// The optimizer keeps its segments' step counts on the host and its state
// buffers on its device; a step hands the whole flat buffer to the device's
// StateKernels, which apply torch.optim's formulas element by element.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/Optimizer.h"

#include <stdexcept>

namespace pp::runtime {

Optimizer::Optimizer(OptimizerOptions options, StateDevice where)
    : options(std::move(options)),
      noDecay(this->options.noDecay.value_or(kDefaultNoDecay)),
      bufferNames(optimizerBufferNames(this->options)), queue(where.queue),
      kernels(where.kernels) {}

bool Optimizer::decays(const std::string &name, int64_t rank) const {
  if (!options.noDecay && rank <= 1)
    return false;
  return !std::regex_match(name, noDecay);
}

void Optimizer::layOut(std::vector<OptimizerSegment> laidOut) {
  segments.clear();
  size = 0;
  for (OptimizerSegment &segment : laidOut) {
    if (segment.begin != size || segment.end < segment.begin)
      throw std::invalid_argument(
          "optimizer segment '" + segment.name + "' covers [" +
          std::to_string(segment.begin) + ", " + std::to_string(segment.end) +
          "); segments must follow each other from 0 without gaps");
    size = segment.end;
    segments.push_back({std::move(segment), 0});
  }
  buffers.clear();
}

void Optimizer::allocateState() {
  if (!buffers.empty())
    return;
  size_t bytes = static_cast<size_t>(size) * sizeof(float);
  for (size_t b = 0; b < bufferNames.size(); ++b) {
    Buffer &buffer = buffers.emplace_back(Buffer::allocate(queue, bytes));
    queue.zero(buffer.data(), bytes);
  }
}

void Optimizer::step(float *values, const float *gradients, float lr) {
  allocateState();
  std::vector<SegmentStep> steps;
  steps.reserve(segments.size());
  for (Segment &segment : segments)
    steps.push_back({segment.where.begin, segment.where.end,
                     segment.where.decay ? options.weightDecay : 0.0f,
                     ++segment.steps});
  std::vector<float *> state;
  for (Buffer &buffer : buffers)
    state.push_back(static_cast<float *>(buffer.data()));
  kernels.stepOptimizer(queue, options, steps, values, gradients, state, lr);
}

int64_t Optimizer::stateBytes() const {
  int64_t bytes = 0;
  for (const Buffer &buffer : buffers)
    bytes += static_cast<int64_t>(buffer.size());
  return bytes;
}

std::vector<float> Optimizer::buffer(size_t index) const {
  std::vector<float> values;
  if (buffers.empty())
    return values;
  values.resize(size);
  queue.copy(values.data(), buffers[index].data(), size * sizeof(float));
  queue.synchronize();
  return values;
}

size_t Optimizer::find(const std::string &name) const {
  size_t index = 0;
  while (index < segments.size() && segments[index].where.name != name)
    ++index;
  return index;
}

ParameterState Optimizer::exportState(const std::string &name) const {
  ParameterState exported;
  size_t index = find(name);
  if (index == segments.size() || segments[index].steps == 0)
    return exported;
  const Segment *segment = &segments[index];
  exported.steps = segment->steps;
  int64_t count = segment->where.end - segment->where.begin;
  for (size_t b = 0; b < bufferNames.size(); ++b) {
    std::vector<float> &values = exported.buffers[bufferNames[b]];
    values.resize(count);
    queue.copy(values.data(),
               static_cast<const float *>(buffers[b].data()) +
                   segment->where.begin,
               count * sizeof(float));
  }
  queue.synchronize();
  return exported;
}

void Optimizer::importState(const std::string &name,
                            const ParameterState &state) {
  size_t index = find(name);
  if (index == segments.size())
    throw std::invalid_argument("the optimizer steps no parameter '" + name +
                                "' to import a state into");
  Segment *segment = &segments[index];
  int64_t count = segment->where.end - segment->where.begin;
  allocateState();
  for (size_t b = 0; b < bufferNames.size(); ++b) {
    const std::vector<float> &values = state.buffers.at(bufferNames[b]);
    if (static_cast<int64_t>(values.size()) != count)
      throw std::invalid_argument(
          "the optimizer state '" + bufferNames[b] + "' of '" + name +
          "' has " + std::to_string(values.size()) + " values; this rank "
          "steps " + std::to_string(count) + " elements of it");
    queue.copy(static_cast<float *>(buffers[b].data()) +
                   segment->where.begin,
               values.data(), count * sizeof(float));
  }
  segment->steps = state.steps;
}

} // namespace pp::runtime
