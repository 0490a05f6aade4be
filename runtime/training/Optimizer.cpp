//===- Optimizer.cpp - parameter updates ----------------------------------===//

#include "runtime/training/Optimizer.h"

#include <cmath>

namespace pp::runtime {

Optimizer::Optimizer(OptimizerOptions options)
    : options(std::move(options)),
      noDecay(this->options.noDecay.value_or(kDefaultNoDecay)) {}

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

void Optimizer::step(const std::string &name, float *parameter,
                     const float *gradient, int64_t n, float lr, bool decay) {
  State &state = states[name];
  ++state.steps;
  float weightDecay = decay ? options.weightDecay : 0.0f;
  if (options.kind == "sgd") {
    // As torch.optim.SGD: weight decay joins the gradient, the momentum
    // buffer starts as the first (decayed) gradient.
    if (options.momentum != 0.0f && state.first.empty())
      state.first.assign(n, 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      float direction = gradient[i] + weightDecay * parameter[i];
      if (options.momentum != 0.0f) {
        state.first[i] = state.steps == 1
                             ? direction
                             : options.momentum * state.first[i] + direction;
        direction = state.first[i];
      }
      parameter[i] -= lr * direction;
    }
    return;
  }
  // AdamW.
  if (state.first.empty()) {
    state.first.assign(n, 0.0f);
    state.second.assign(n, 0.0f);
  }
  float correction1 = 1.0f - std::pow(options.beta1, state.steps);
  float correction2 = 1.0f - std::pow(options.beta2, state.steps);
  for (int64_t i = 0; i < n; ++i) {
    parameter[i] *= 1.0f - lr * weightDecay;
    state.first[i] =
        options.beta1 * state.first[i] + (1.0f - options.beta1) * gradient[i];
    state.second[i] = options.beta2 * state.second[i] +
                      (1.0f - options.beta2) * gradient[i] * gradient[i];
    float mHat = state.first[i] / correction1;
    float vHat = state.second[i] / correction2;
    parameter[i] -= lr * mHat / (std::sqrt(vHat) + options.epsilon);
  }
}

int64_t Optimizer::stateBytes() const {
  int64_t bytes = 0;
  for (const auto &[name, state] : states)
    bytes += (state.first.size() + state.second.size()) * sizeof(float);
  return bytes;
}

ParameterState Optimizer::exportState(const std::string &name) const {
  ParameterState exported;
  auto it = states.find(name);
  if (it == states.end())
    return exported;
  exported.steps = it->second.steps;
  // The buffers in optimizerBufferNames order: first, then second.
  const std::vector<float> *held[] = {&it->second.first, &it->second.second};
  std::vector<std::string> names = optimizerBufferNames(options);
  for (size_t i = 0; i < names.size(); ++i)
    exported.buffers[names[i]] = *held[i];
  return exported;
}

void Optimizer::importState(const std::string &name,
                            const ParameterState &state) {
  State &imported = states[name];
  imported.steps = state.steps;
  std::vector<float> *held[] = {&imported.first, &imported.second};
  std::vector<std::string> names = optimizerBufferNames(options);
  for (size_t i = 0; i < names.size(); ++i)
    *held[i] = state.buffers.at(names[i]);
}

} // namespace pp::runtime
