//===- Optimizer.h - parameter updates over flat buffers --------*- C++ -*-===//

#ifndef PP_RUNTIME_OPTIMIZER_H
#define PP_RUNTIME_OPTIMIZER_H

#include "runtime/device/Buffer.h"
#include "runtime/training/OptimizerOptions.h"
#include "runtime/training/StateKernels.h"

#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace pp::runtime {

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
/// element-wise and deterministic. It steps flat buffers where they live
/// (on a device's queue, through StateKernels): parameters, gradients and
/// each state buffer are one contiguous array of floats, cut into
/// segments, one per parameter (each with its own step count and weight
/// decay), and a step is one pass over all of them.
class Optimizer {
public:
  /// An optimizer whose state lives on `where`'s device and whose steps
  /// run on its queue. Throws std::regex_error for an invalid
  /// options.noDecay.
  explicit Optimizer(OptimizerOptions options,
                     StateDevice where = hostStateDevice());

  /// Whether weight decay applies to the parameter `name` of `rank`
  /// dimensions (OptimizerOptions::noDecay).
  bool decays(const std::string &name, int64_t rank) const;

  /// Lays the state out over `segments`, which cover [0, n) in order
  /// without gaps, and forgets any state held so far.
  void layOut(std::vector<OptimizerSegment> segments);

  /// Updates the n parameters at `values` (the laid-out positions, on the
  /// optimizer's device) in place with their gradients at `learningRate`:
  /// one step of every segment, queued on the optimizer's queue.
  void step(float *values, const float *gradients, float learningRate);

  /// Bytes of state (momentum, moments) held so far: none before the first
  /// step or import.
  int64_t stateBytes() const;

  /// The names of the state buffers (optimizerBufferNames).
  const std::vector<std::string> &stateBufferNames() const {
    return bufferNames;
  }
  /// The values of state buffer `index` (optimizerBufferNames order) over
  /// the laid-out positions, copied to the host; empty before the first
  /// step or import.
  std::vector<float> buffer(size_t index) const;

  /// The state of the segment `name`, copied to the host; steps 0 and no
  /// buffers before its first step (or when no segment has that name).
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
  Queue &queue;
  StateKernels &kernels;
  std::vector<Segment> segments;
  /// The laid-out positions' count.
  int64_t size = 0;
  /// Per optimizerBufferNames entry, one value per position on the
  /// optimizer's device; none before the first step or import.
  std::vector<Buffer> buffers;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_OPTIMIZER_H
