//===- OptimizerOptions.h - which optimizer, with what settings -*- C++ -*-===//

#ifndef PP_RUNTIME_TRAINING_OPTIMIZEROPTIONS_H
#define PP_RUNTIME_TRAINING_OPTIMIZEROPTIONS_H

#include <cstdint>
#include <map>
#include <optional>
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

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_OPTIMIZEROPTIONS_H
