//===- ParameterUpdate.h - optimizer steps, whole or sharded ----*- C++ -*-===//
//
// Applies a step's clipped gradients to a stage's flat parameters
// (FlatParameters.h): on every data-parallel replica alike, or (ZeRO-1)
// each replica updating its contiguous share of the flat buffer with its
// share of the optimizer state, then all of them gathering the updated
// values.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PARAMETERUPDATE_H
#define PP_RUNTIME_PARAMETERUPDATE_H

#include "runtime/communication/Communicator.h"
#include "runtime/training/FlatParameters.h"
#include "runtime/training/Optimizer.h"

#include <map>
#include <string>

namespace pp::runtime {

class ParameterUpdate {
public:
  /// Updates `flat` (which outlives this object) over the data-parallel
  /// group `dataParallel`, each parameter decaying as
  /// Optimizer::decays says; `sharded` keeps 1/D of the optimizer state on
  /// each of its D ranks (--shard-optimizer). Every rank of the group lays
  /// out the same parameters.
  ParameterUpdate(OptimizerOptions options, FlatParameters &flat,
                  Communicator &dataParallel, bool sharded);

  /// Multiplies the gradients by `clip` when it is below 1, then steps the
  /// optimizer at `learningRate`: over every element (unsharded), or over
  /// this rank's contiguous 1/D of the flat buffer, after which the ranks
  /// gather each other's updated values. Every rank of the group holds the
  /// same gradients, so both ways give the same bits (the optimizer is
  /// element-wise).
  void apply(float clip, float learningRate);

  /// Bytes of optimizer state this rank holds.
  int64_t stateBytes() const { return optimizer.stateBytes(); }

  /// The whole optimizer state of each parameter that has taken a step,
  /// on every rank of the group: sharded, the ranks gather each other's
  /// shares (so each holds the stage's whole state for a moment).
  std::map<std::string, ParameterState> gatherState();

  /// Sets this rank's optimizer state from the parameters' whole state
  /// `states` (by name; a parameter missing there starts afresh):
  /// sharded, each rank keeps the share apply steps.
  void loadState(const std::map<std::string, ParameterState> &states);

private:
  Optimizer optimizer;
  FlatParameters &flat;
  Communicator &dataParallel;
  bool sharded;
  /// The flat buffer's positions [begin, end) this rank steps (all of them
  /// unsharded), out of shares of `share` positions (ceil(size / D); the
  /// last ones may be short or empty).
  int64_t share = 0, begin = 0, end = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_PARAMETERUPDATE_H
