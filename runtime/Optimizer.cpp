//===- Optimizer.cpp - parameter updates ----------------------------------===//

#include "runtime/Optimizer.h"

#include <cmath>

namespace pp::runtime {

void Optimizer::step(const std::string &name, float *parameter,
                     const float *gradient, int64_t n) {
  State &state = states[name];
  ++state.steps;
  float lr = options.learningRate;
  if (options.kind == "sgd") {
    if (options.momentum != 0.0f && state.first.empty())
      state.first.assign(gradient, gradient + n);
    for (int64_t i = 0; i < n; ++i) {
      float direction = gradient[i];
      if (options.momentum != 0.0f) {
        if (state.steps > 1)
          state.first[i] = options.momentum * state.first[i] + gradient[i];
        direction = state.first[i];
      }
      parameter[i] -= lr * (direction + options.weightDecay * parameter[i]);
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
    parameter[i] *= 1.0f - lr * options.weightDecay;
    state.first[i] =
        options.beta1 * state.first[i] + (1.0f - options.beta1) * gradient[i];
    state.second[i] = options.beta2 * state.second[i] +
                      (1.0f - options.beta2) * gradient[i] * gradient[i];
    float mHat = state.first[i] / correction1;
    float vHat = state.second[i] / correction2;
    parameter[i] -= lr * mHat / (std::sqrt(vHat) + options.epsilon);
  }
}

} // namespace pp::runtime
