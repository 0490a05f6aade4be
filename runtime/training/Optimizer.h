//===- Optimizer.h - parameter updates over flat buffers --------*- C++ -*-===//

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

/// The elements of one parameter that an Optimizer steps: positions
/// [begin, end) of the flat buffers it steps.
struct OptimizerSegment {
  std::string name;
  int64_t begin = 0, end = 0;
  /// Whether weight decay applies (Optimizer::decays).
  bool decay = true;
};

/// SGD (momentum, weight decay added to the gradient) or AdamW (decoupled
/// weight decay, Loshchilov & Hutter), with torch.optim's update rules;
/// element-wise and deterministic. It steps flat buffers: parameters,
/// gradients and each state buffer are one contiguous array of floats,
/// cut into segments, one per parameter (each with its own step count and
/// weight decay), and each segment is one vectorizable loop.
class Optimizer {
public:
  /// Throws std::regex_error for an invalid options.noDecay.
  explicit Optimizer(OptimizerOptions options);

  /// Whether weight decay applies to the parameter `name` of `rank`
  /// dimensions (OptimizerOptions::noDecay).
  bool decays(const std::string &name, int64_t rank) const;

  /// Lays the state out over `segments`, which cover [0, n) in order
  /// without gaps, and forgets any state held so far.
  void layOut(std::vector<OptimizerSegment> segments);

  /// Updates the n parameters at `values` (the laid-out positions) in
  /// place with their gradients at `learningRate`: one step of every
  /// segment.
  void step(float *values, const float *gradients, float learningRate);

  /// Bytes of state (momentum, moments) held so far: none before the first
  /// step or import.
  int64_t stateBytes() const;

  /// The names of the state buffers (optimizerBufferNames).
  const std::vector<std::string> &stateBufferNames() const {
    return bufferNames;
  }
  /// State buffer `index` (optimizerBufferNames order) over the laid-out
  /// positions; empty before the first step or import.
  const std::vector<float> &buffer(size_t index) const {
    return buffers[index];
  }

  /// The state of the segment `name`; steps 0 and no buffers before its
  /// first step (or when no segment has that name).
  ParameterState exportState(const std::string &name) const;
  /// Replaces the state of the segment `name` (buffers named as
  /// optimizerBufferNames lists them, each of the segment's length), so
  /// that its next step continues from it. Throws std::invalid_argument
  /// for a name no segment has or a buffer of another length.
  void importState(const std::string &name, const ParameterState &state);

private:
  struct Segment {
    OptimizerSegment where;
    int64_t steps = 0;
  };
  /// Zero-filled state buffers over the laid-out positions, unless held.
  void allocateState();
  /// The index of the segment `name`; segments.size() when none has it.
  size_t find(const std::string &name) const;

  OptimizerOptions options;
  std::regex noDecay;
  std::vector<std::string> bufferNames;
  std::vector<Segment> segments;
  /// The laid-out positions' count.
  int64_t size = 0;
  /// Per optimizerBufferNames entry, one value per position.
  std::vector<std::vector<float>> buffers;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_OPTIMIZER_H
