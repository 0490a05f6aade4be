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

private:
  Optimizer optimizer;
  Communicator &dataParallel;
  bool sharded;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_PARAMETERUPDATE_H
