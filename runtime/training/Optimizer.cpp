//===- Optimizer.cpp - parameter updates over flat buffers ----------------===//
//
// Each segment's update is one loop over contiguous floats with the
// segment's constants hoisted; the file is compiled with -fno-math-errno so
// that std::sqrt is the sqrtps instruction and the AdamW loop vectorizes.
// The arithmetic of every element is torch.optim's formula, written in one
// order: the result does not depend on how elements are grouped.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/Optimizer.h"

#include <cmath>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// torch.optim.SGD over n elements: weight decay joins the gradient; the
/// momentum buffer (null without momentum) starts as the first (decayed)
/// gradient.
void stepSgd(float *__restrict values, const float *__restrict gradients,
             float *__restrict momentumBuffer, int64_t n, float lr,
             float weightDecay, float momentum, bool firstStep) {
  if (!momentumBuffer) {
    for (int64_t i = 0; i < n; ++i)
      values[i] -= lr * (gradients[i] + weightDecay * values[i]);
    return;
  }
  if (firstStep) {
    for (int64_t i = 0; i < n; ++i) {
      momentumBuffer[i] = gradients[i] + weightDecay * values[i];
      values[i] -= lr * momentumBuffer[i];
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    momentumBuffer[i] = momentum * momentumBuffer[i] +
                        (gradients[i] + weightDecay * values[i]);
    values[i] -= lr * momentumBuffer[i];
  }
}

/// torch.optim.AdamW over n elements at step `steps` (from 1).
void stepAdamW(const OptimizerOptions &options, float *__restrict values,
               const float *__restrict gradients, float *__restrict first,
               float *__restrict second, int64_t n, float lr,
               float weightDecay, int64_t steps) {
  float correction1 = 1.0f - std::pow(options.beta1, steps);
  float correction2 = 1.0f - std::pow(options.beta2, steps);
  float shrink = 1.0f - lr * weightDecay;
  float beta1 = options.beta1, beta2 = options.beta2;
  float take1 = 1.0f - beta1, take2 = 1.0f - beta2;
  float epsilon = options.epsilon;
  for (int64_t i = 0; i < n; ++i) {
    values[i] *= shrink;
    first[i] = beta1 * first[i] + take1 * gradients[i];
    second[i] = beta2 * second[i] + take2 * gradients[i] * gradients[i];
    float mHat = first[i] / correction1;
    float vHat = second[i] / correction2;
    values[i] -= lr * mHat / (std::sqrt(vHat) + epsilon);
  }
}

} // namespace

Optimizer::Optimizer(OptimizerOptions options)
    : options(std::move(options)),
      noDecay(this->options.noDecay.value_or(kDefaultNoDecay)),
      bufferNames(optimizerBufferNames(this->options)),
      buffers(bufferNames.size()) {}

bool Optimizer::decays(const std::string &name, int64_t rank) const {
  if (!options.noDecay && rank <= 1)
    return false;
  return !std::regex_match(name, noDecay);
}

std::vector<std::string> optimizerBufferNames(const OptimizerOptions &options) {
  if (options.kind == "adamw")
    return {"exp_avg", "exp_avg_sq"};
  if (options.momentum != 0.0f)
    return {"momentum"};
  return {};
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
  for (std::vector<float> &buffer : buffers)
    buffer.clear();
}

void Optimizer::allocateState() {
  for (std::vector<float> &buffer : buffers)
    if (buffer.empty())
      buffer.assign(size, 0.0f);
}

void Optimizer::step(float *values, const float *gradients, float lr) {
  allocateState();
  for (Segment &segment : segments) {
    ++segment.steps;
    int64_t begin = segment.where.begin, n = segment.where.end - begin;
    float weightDecay = segment.where.decay ? options.weightDecay : 0.0f;
    if (options.kind == "sgd")
      stepSgd(values + begin, gradients + begin,
              buffers.empty() ? nullptr : buffers[0].data() + begin, n, lr,
              weightDecay, options.momentum, segment.steps == 1);
    else
      stepAdamW(options, values + begin, gradients + begin,
                buffers[0].data() + begin, buffers[1].data() + begin, n, lr,
                weightDecay, segment.steps);
  }
}

int64_t Optimizer::stateBytes() const {
  int64_t bytes = 0;
  for (const std::vector<float> &buffer : buffers)
    bytes += buffer.size() * sizeof(float);
  return bytes;
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
  for (size_t b = 0; b < bufferNames.size(); ++b)
    exported.buffers[bufferNames[b]].assign(
        buffers[b].begin() + segment->where.begin,
        buffers[b].begin() + segment->where.end);
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
    std::copy(values.begin(), values.end(),
              buffers[b].begin() + segment->where.begin);
  }
  segment->steps = state.steps;
}

} // namespace pp::runtime
