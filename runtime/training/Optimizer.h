//===- Optimizer.h - parameter updates --------------------------*- C++ -*-===//

#ifndef PP_RUNTIME_OPTIMIZER_H
#define PP_RUNTIME_OPTIMIZER_H

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace pp::runtime {

/// The names the default weight-decay exclusion matches (ECMAScript, whole
/// name): a dot- or slash-separated component that is a norm (ln1, ln_f,
/// LayerNorm, rmsnorm, ...) or an embedding table (embed_tokens,
/// word_embeddings, GPT-2's wte and wpe).
inline constexpr const char *kDefaultNoDecay =
    R"((.*[./])?(ln\w*|\w*[Nn]orm\w*|\w*[Ee]mbed\w*|wte|wpe)([./].*)?)";

struct OptimizerOptions {
  /// "sgd" or "adamw".
  std::string kind = "sgd";
  float momentum = 0.0f;
  float weightDecay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  /// The parameters weight decay skips: those whose whole name matches
  /// this ECMAScript regex ("" decays every parameter). Unset: parameters
  /// of rank 0 or 1 (biases, norm scales) and those kDefaultNoDecay
  /// matches.
  std::optional<std::string> noDecay;
};

/// A parameter's optimizer state as checkpoints hold it: the steps it has
/// taken and its buffers by name (optimizerBufferNames), each over the
/// elements the optimizer stepped.
struct ParameterState {
  int64_t steps = 0;
  std::map<std::string, std::vector<float>> buffers;
};

/// The buffers the optimizer keeps per parameter: exp_avg and exp_avg_sq
/// for AdamW (torch.optim's names), momentum for SGD with momentum, none
/// for plain SGD.
std::vector<std::string> optimizerBufferNames(const OptimizerOptions &options);

/// SGD (momentum, weight decay added to the gradient) or AdamW (decoupled
/// weight decay, Loshchilov & Hutter), with torch.optim's update rules;
/// element-wise and deterministic.
class Optimizer {
public:
  /// Throws std::regex_error for an invalid options.noDecay.
  explicit Optimizer(OptimizerOptions options);

  /// Whether weight decay applies to the parameter `name` of `rank`
  /// dimensions (OptimizerOptions::noDecay).
  bool decays(const std::string &name, int64_t rank) const;

  /// Updates `parameter` (n floats) in place with its gradient at
  /// `learningRate`, with weight decay when `decay`.
  void step(const std::string &name, float *parameter, const float *gradient,
            int64_t n, float learningRate, bool decay);

  /// Bytes of state (momentum, moments) held so far.
  int64_t stateBytes() const;

  /// The state of `name`; steps 0 and no buffers before its first step.
  ParameterState exportState(const std::string &name) const;
  /// Replaces the state of `name` (buffers named as optimizerBufferNames
  /// lists them, each of the length later steps of `name` take), so that
  /// its next step continues from it.
  void importState(const std::string &name, const ParameterState &state);

private:
  struct State {
    int64_t steps = 0;
    std::vector<float> first, second;
  };
  OptimizerOptions options;
  std::regex noDecay;
  std::map<std::string, State> states;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_OPTIMIZER_H
