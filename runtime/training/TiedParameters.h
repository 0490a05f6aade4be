//===- TiedParameters.h - gradients summed from parts -----------*- C++ -*-===//
//
// A parameter that several nodes use (a token embedding that is also the
// LM head) gets its gradient in parts, one per node in program order
// (ParameterInfo::gradientPartStages): the trainer sums each part over the
// microbatches (and the data-parallel replicas) on its own, and this class
// adds the parts in part order. The parts are the same whatever the stages
// the nodes land on, so one stage and many add the same values in the same
// order: the same bits on every layout. A parameter whose nodes land on
// several stages (tied) is held by each of them, and the holders exchange
// their parts, so that every holder applies the same update (Megatron's
// embedding group).
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
#include <utility>
#include <vector>

namespace pp::runtime {

/// A part of a parameter's gradient: the parameter's name and the part's
/// number.
using GradientPartKey = std::pair<std::string, int64_t>;

/// The gradients this rank forms from parts: those of the trainable
/// parameters it holds that come in several parts or are held by several
/// pipeline ranks.
class TiedParameters {
public:
  /// Connects, over `pipeline`, one group per distinct set of holder ranks
  /// (the ranks of the holder stages) that includes `rank` and another, in
  /// manifest order of the groups' first parameters, so that every rank of
  /// a group splits it at the same point: every rank of the pipeline
  /// constructs this before the first step.
  TiedParameters(const Package &package, Communicator &pipeline, int64_t rank);

  /// Writes into each gradient of `gradients` (host f32 tensors by
  /// parameter name) that this class forms the sum of its parts, added in
  /// part order in double: the parts this rank computes, `parts` (host
  /// tensors, each summed over the step's microbatches and the replicas),
  /// and those the other holder ranks send. Every holder ends with the
  /// same bits. A part may be the gradient's own tensor.
  void sumGradients(const std::map<GradientPartKey, pp_tensor *> &parts,
                    const std::map<std::string, TensorPtr> &gradients);

  /// Whether this class forms the gradient of the parameter `name` (its
  /// holders need its parts whole).
  bool forms(const std::string &name) const;

  /// Throws std::runtime_error, naming the parameters and stages, unless
  /// every holder's copies in `parameters` (host tensors by name) are the
  /// same bits as this rank's: holders that start equal and apply the same
  /// updates to the same gradients never drift apart.
  void checkHoldersAgree(const std::map<std::string, TensorPtr> &parameters);

private:
  /// A parameter whose gradient this class forms.
  struct Summed {
    std::string name;
    int64_t elements = 0;
    /// The pipeline rank computing each part, in part order.
    std::vector<int64_t> partRanks;
  };
  struct Group {
    /// The holder ranks; the group's rank i is ranks[i].
    std::vector<int64_t> ranks;
    /// Null for a group of this rank alone (its parts are all local).
    std::unique_ptr<Communicator> holders;
    /// The parameters the group holds, in manifest order.
    std::vector<Summed> parameters;
  };
  int64_t rank;
  std::vector<Group> groups;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TIEDPARAMETERS_H
