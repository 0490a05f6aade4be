//===- ParameterUpdate.h - optimizer steps at a ZeRO level ------*- C++ -*-===//
//
// Applies a step's clipped gradients to a stage's flat parameters
// (FlatParameters.h) at a ZeRO level over the stage's data-parallel group
// of D ranks:
//   0  every replica updates every element alike;
//   1  each replica keeps the optimizer state of its contiguous 1/D share
//      of the flat buffer, updates that share, and the replicas gather
//      each other's updated values;
//   2  as 1, and the gradients are reduce-scattered (each replica receives
//      the sums of its share only) and only the share's gradients are kept
//      between steps;
//   3  as 2, and between uses each replica holds only its share of the
//      values: the trainer gathers them before a stage computes and
//      releases them after (gatherValues, releaseValues).
// Every level gives the same bits: the optimizer is element-wise and the
// reduce-scatter adds in the all-reduce's order.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PARAMETERUPDATE_H
#define PP_RUNTIME_PARAMETERUPDATE_H

#include "runtime/communication/Communicator.h"
#include "runtime/communication/CollectiveGroup.h"
#include "runtime/schedules/Schedule.h"
#include "runtime/training/FlatParameters.h"
#include "runtime/training/Optimizer.h"

#include <map>
#include <string>

namespace pp::runtime {

class ParameterUpdate {
public:
  /// Updates `flat` (which outlives this object, laid out in D shares on
  /// `where`'s device) over the data-parallel group `dataParallel` of D
  /// ranks at ZeRO level `zeroLevel` (0 to kMaxZeroLevel), each parameter
  /// decaying as Optimizer::decays says: the buffers' collectives run on
  /// `buffers` (the same ranks, on that device's memory), the scalars'
  /// on `dataParallel`. Every rank of the group lays out the same
  /// parameters. In a group of one every level is level 0.
  ParameterUpdate(OptimizerOptions options, FlatParameters &flat,
                  Communicator &dataParallel, CollectiveGroup &buffers,
                  int zeroLevel, StateDevice where);

  /// Whether this rank holds only its share of the gradients between
  /// steps (level 2 and up), and of the values between uses (level 3).
  bool shardsGradients() const { return level >= 2; }
  bool shardsValues() const { return level >= 3; }
  /// The flat buffer's positions [begin, end) this rank steps (all of them
  /// at level 0), out of shares of `share` positions (ceil(size / D); the
  /// last ones may be short or empty).
  int64_t shareBegin() const { return begin; }
  int64_t shareEnd() const { return end; }
  int64_t shareSize() const { return share; }

  /// Multiplies this rank's gradients by `clip` when it is below 1, then
  /// steps the optimizer at `learningRate` over them: over every element
  /// at level 0, else over this rank's share, after which (levels 1 and 2)
  /// the ranks gather each other's updated values and (level 2 and up)
  /// the gradients outside the share are released.
  void apply(float clip, float learningRate);
  /// Ends a step without an update (its gradients overflowed: fp16 loss
  /// scaling): the values stay as they are, and (level 2 and up) the
  /// gradients outside the share are released, as after apply.
  void skip();
  /// Multiplies the gradients this rank holds by `factor`: every element
  /// below level 2, its share from level 2 on (the elements
  /// gradientSquares reads).
  void scaleGradients(float factor);

  /// Gathers every rank's share of the values (gradients) over `group`
  /// (the data-parallel group's buffers or one of the same ranks made for
  /// the gathers) on `queue`, so that every rank holds all of them.
  void gatherValues(CollectiveGroup &group, Queue &queue);
  void gatherGradients();
  /// Hands back the memory of the values outside this rank's share.
  void releaseValues();

  /// The sums of the gradients' squares in double, per parameter, each
  /// added in layout order from its first element and cut where the D
  /// shares of the flat buffer are, a share's running sum going on into
  /// the next (StateKernels::sumSquares' `initial`): at level 2 and up
  /// each rank sums its share, the shares' running sums passed on in rank
  /// order, and returns the sums of the parameters whose last element
  /// lies in its share; below, every rank holds the whole gradients and
  /// walks the shares itself, returning every sum. Either way a sum has the
  /// same bits at every level, on any device. Called on every rank of the
  /// group.
  std::map<std::string, double> gradientSquares();

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
  /// Adds the squares of the gradients' positions [from, to) to each
  /// parameter's running sum in `running` (one that starts there from 0),
  /// in one pass over them.
  void addShareSquares(int64_t from, int64_t to,
                       std::map<std::string, double> &running);
  /// What ends every step, updated or skipped: the release of the
  /// gradients outside the share (level 2 and up).
  void releaseGradients();
  /// gradientSquares at level 2 and up.
  std::map<std::string, double> sharedGradientSquares();
  /// Gathers every rank's share of `buffer` (of the flat layout) over
  /// `group` in place, on `queue`.
  void gatherShares(float *buffer, CollectiveGroup &group, Queue &queue);

  Optimizer optimizer;
  FlatParameters &flat;
  Communicator &dataParallel;
  CollectiveGroup &buffers;
  StateDevice where;
  /// The effective level: 0 in a group of one.
  int level;
  int64_t share = 0, begin = 0, end = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_PARAMETERUPDATE_H
