//===- ParameterUpdate.h - optimizer steps, whole or sharded ----*- C++ -*-===//
//
// Applies a step's clipped gradients to a stage's parameters: on every
// data-parallel replica alike, or (ZeRO-1) each replica updating its share
// of the stage's elements with its share of the optimizer state, then all
// of them gathering the updated values.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PARAMETERUPDATE_H
#define PP_RUNTIME_PARAMETERUPDATE_H

#include "runtime/communication/Communicator.h"
#include "runtime/training/Optimizer.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pp::runtime {

/// A trainable parameter's host values and gradient (which the update
/// scales in place when it clips).
struct ParameterSlot {
  std::string name;
  float *values = nullptr;
  float *gradient = nullptr;
  int64_t count = 0;
  /// Whether weight decay applies (ParameterUpdate::decays).
  bool decay = true;
};

class ParameterUpdate {
public:
  /// Updates over the data-parallel group `dataParallel`; `sharded` keeps
  /// 1/D of the optimizer state on each of its D ranks (--shard-optimizer).
  ParameterUpdate(OptimizerOptions options, Communicator &dataParallel,
                  bool sharded);

  /// Multiplies the gradients by `clip` when it is below 1, then steps the
  /// optimizer at `learningRate`: over every element (unsharded), or over
  /// this rank's contiguous 1/D of the elements of `parameters` taken in
  /// order, after which the ranks gather each other's updated values.
  /// Every rank of the group lists the same parameters in the same order
  /// with the same gradients, so both ways give the same bits (the
  /// optimizer is element-wise).
  void apply(const std::vector<ParameterSlot> &parameters, float clip,
             float learningRate);

  /// Whether weight decay applies to the parameter `name` of `rank`
  /// dimensions (OptimizerOptions::noDecay).
  bool decays(const std::string &name, int64_t rank) const {
    return optimizer.decays(name, rank);
  }

  /// Bytes of optimizer state this rank holds.
  int64_t stateBytes() const { return optimizer.stateBytes(); }

  /// The whole optimizer state of each of `parameters` (apply's list) that
  /// has taken a step, on every rank of the group: sharded, the ranks
  /// gather each other's shares (so each holds the stage's whole state
  /// for a moment).
  std::map<std::string, ParameterState>
  gatherState(const std::vector<ParameterSlot> &parameters);

  /// Sets this rank's optimizer state of `parameters` (apply's list) from
  /// their whole state `states` (by name; a parameter missing there starts
  /// afresh): sharded, each rank keeps the share apply steps.
  void loadState(const std::vector<ParameterSlot> &parameters,
                 const std::map<std::string, ParameterState> &states);

private:
  /// The elements of `parameters`, concatenated, that each rank steps
  /// (all of them unsharded): ceil(total / D).
  int64_t shareSize(const std::vector<ParameterSlot> &parameters) const;
  /// Calls `visit(parameter, first, last, offset)` for each of `parameters`
  /// with the elements [first, last) of it that this rank steps
  /// (first == last when it steps none), `offset` being where the
  /// parameter starts in the concatenation.
  void forEachShare(const std::vector<ParameterSlot> &parameters,
                       const std::function<void(const ParameterSlot &,
                                                int64_t, int64_t, int64_t)>
                           &visit) const;

  Optimizer optimizer;
  /// optimizerBufferNames of the options.
  std::vector<std::string> bufferNames;
  Communicator &dataParallel;
  bool sharded;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_PARAMETERUPDATE_H
