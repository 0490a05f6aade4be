//===- TiedParameters.h - weights held by several stages --------*- C++ -*-===//
//
// A tied parameter (a token embedding on the first stage that is also the
// LM head on the last) is held by every stage that uses it: each holds the
// same values, computes its part of the gradient, and the parts are summed
// over exactly the holders each step, so that every holder applies the same
// update (Megatron's embedding group).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TIEDPARAMETERS_H
#define PP_RUNTIME_TIEDPARAMETERS_H

#include "runtime/communication/Communicator.h"
#include "runtime/package/Package.h"
#include "runtime/training/Backend.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// The groups of pipeline ranks that sum the gradients of the tied
/// trainable parameters this rank holds (for one or several of its stages).
class TiedParameters {
public:
  /// Connects, over `pipeline`, one group per distinct set of holder ranks
  /// (the ranks of the holder stages) that includes `rank` and another, in
  /// manifest order of the groups' first parameters, so that every rank of
  /// a group splits it at the same point: every rank of the pipeline
  /// constructs this before the first step.
  TiedParameters(const Package &package, Communicator &pipeline, int64_t rank);

  /// Replaces each tied gradient of `gradients` (host f32 tensors by
  /// parameter name, this rank's part) by the sum of the holder ranks'
  /// parts, added in rank order in double: the same bits on every holder.
  void sumGradients(const std::map<std::string, TensorPtr> &gradients);

  /// Throws std::runtime_error, naming the parameters and stages, unless
  /// every holder's copies in `parameters` (host tensors by name) are the
  /// same bits as this rank's: holders that start equal and apply the same
  /// updates to the same gradients never drift apart.
  void checkHoldersAgree(const std::map<std::string, TensorPtr> &parameters);

private:
  struct Group {
    /// The holder ranks; the group's rank i is ranks[i].
    std::vector<int64_t> ranks;
    std::unique_ptr<Communicator> holders;
    /// The parameters the group holds, in manifest order.
    std::vector<std::string> names;
  };
  std::vector<Group> groups;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TIEDPARAMETERS_H
