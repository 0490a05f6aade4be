//===- Optimizer.h - parameter updates --------------------------*- C++ -*-===//

#ifndef PP_RUNTIME_OPTIMIZER_H
#define PP_RUNTIME_OPTIMIZER_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pp::runtime {

struct OptimizerOptions {
  /// "sgd" or "adamw".
  std::string kind = "sgd";
  float learningRate = 0.01f;
  float momentum = 0.0f;
  float weightDecay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
};

/// SGD (momentum, weight decay added to the gradient) or AdamW (decoupled
/// weight decay, Loshchilov & Hutter), with torch.optim's update rules;
/// element-wise and deterministic.
class Optimizer {
public:
  explicit Optimizer(OptimizerOptions options) : options(std::move(options)) {}

  /// Updates `parameter` (n floats) in place with its gradient.
  void step(const std::string &name, float *parameter, const float *gradient,
            int64_t n);

  /// Bytes of state (momentum, moments) held so far.
  int64_t stateBytes() const;

private:
  struct State {
    int64_t steps = 0;
    std::vector<float> first, second;
  };
  OptimizerOptions options;
  std::map<std::string, State> states;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_OPTIMIZER_H
