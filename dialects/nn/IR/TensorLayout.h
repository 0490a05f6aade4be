//===- TensorLayout.h - how a tensor lies on a tensor axis ------*- C++ -*-===//
//
// The layout of one tensor over the devices of a tensor-parallel axis:
// replicated, sharded along one dimension (possibly in blocks) or a pending
// sum; the per-device type it implies and how layouts map through
// reshapes. The vocabulary of the ops' sharding rules
// (ShardingRuleOpInterface) and of pp-shard-tensor-parallel.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_TENSORLAYOUT_H
#define PP_DIALECTS_NN_IR_TENSORLAYOUT_H

#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <string>

namespace pp::nn {

/// How a tensor is laid out over the `devices` of a tensor axis.
struct TensorLayout {
  enum class Kind { Replicated, Sharded, Partial };
  Kind kind = Kind::Replicated;
  /// Sharded: the split dimension, viewed as `blocks` equal blocks, each
  /// split into one contiguous piece per device (#pp.sharding's blocks).
  int64_t dim = 0;
  int64_t blocks = 1;

  static TensorLayout replicated() { return {}; }
  static TensorLayout sharded(int64_t dim, int64_t blocks = 1) {
    return {Kind::Sharded, dim, blocks};
  }
  static TensorLayout partial() { return {Kind::Partial, 0, 1}; }

  bool isReplicated() const { return kind == Kind::Replicated; }
  bool isSharded() const { return kind == Kind::Sharded; }
  bool isPartial() const { return kind == Kind::Partial; }
  /// True when this layout is sharded along `d` (any blocks).
  bool shards(int64_t d) const { return isSharded() && dim == d; }
  bool operator==(const TensorLayout &other) const {
    return kind == other.kind &&
           (!isSharded() || (dim == other.dim && blocks == other.blocks));
  }
  bool operator!=(const TensorLayout &other) const { return !(*this == other); }
  /// "replicated", "partial", "sharded(dim 2)" or "sharded(dim 0, 3 blocks)".
  std::string describe() const;
};

/// True when `layout` can lay out a tensor of `type` over `devices`: a
/// sharded dimension exists and splits into blocks x devices pieces.
bool layoutFits(mlir::RankedTensorType type, TensorLayout layout,
                int64_t devices);

/// The per-device type of a tensor of global type `type` laid out as
/// `layout` (which must fit) over `devices`.
mlir::RankedTensorType localType(mlir::RankedTensorType type,
                                 TensorLayout layout, int64_t devices);

/// The layout of the result of reshaping a tensor of shape `from`, laid out
/// as `layout`, to shape `to`: the devices' pieces must stay contiguous
/// pieces of one result dimension (a hidden dimension split by heads keeps
/// its sharding on the heads dimension when `devices` divides the heads).
/// Nullopt when they do not.
std::optional<TensorLayout> reshapeLayout(llvm::ArrayRef<int64_t> from,
                                          llvm::ArrayRef<int64_t> to,
                                          TensorLayout layout,
                                          int64_t devices);

} // namespace pp::nn

#endif // PP_DIALECTS_NN_IR_TENSORLAYOUT_H
