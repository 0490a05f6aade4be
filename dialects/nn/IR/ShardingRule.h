//===- ShardingRule.h - how an op runs on sharded operands ------*- C++ -*-===//
//
// What an op's sharding rule (ShardingRuleOpInterface, as Shardy's
// OpShardingRule) is given and what it decides: given the layouts its
// operands arrive in, the layouts it needs them in and the layouts of its
// results. pp-shard-tensor-parallel inserts the collectives that convert
// between the two.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_SHARDINGRULE_H
#define PP_DIALECTS_NN_IR_SHARDINGRULE_H

#include "dialects/nn/IR/TensorLayout.h"
#include "mlir/IR/Operation.h"

#include <optional>
#include <string>

namespace pp::nn {

/// What an op's rule decides.
struct ShardingPlan {
  /// The layout each operand must have when the op runs on a device.
  llvm::SmallVector<TensorLayout> operands;
  /// The layout of each result.
  llvm::SmallVector<TensorLayout> results;
  /// The pp op that computes the device's part when the nn op on local
  /// data would not: a vocabulary-parallel gather, gather gradient or
  /// cross-entropy. It takes the nn op's operands in order.
  enum class Replacement {
    None,
    ShardedGather,
    ShardedGatherGrad,
    ShardedCrossEntropy,
    ShardedCrossEntropyGrad
  };
  Replacement replacement = Replacement::None;
  /// The replacement's `axis` (ShardedGather, ShardedGatherGrad).
  int64_t gatherAxis = 0;
  /// The replacement's `ignore_index` (ShardedCrossEntropy,
  /// ShardedCrossEntropyGrad).
  int64_t ignoreIndex = 0;
  /// When the op needs a sharded operand whole because the tensor axis does
  /// not divide a size (a reshape splitting a hidden dimension into
  /// attention heads): what does not split, for error messages; else "".
  std::string sizeProblem;

  /// Every operand and result replicated: how an op without a rule of its
  /// own runs.
  static ShardingPlan replicated(unsigned numOperands, unsigned numResults) {
    ShardingPlan plan;
    plan.operands.assign(numOperands, TensorLayout::replicated());
    plan.results.assign(numResults, TensorLayout::replicated());
    return plan;
  }
};

/// What a rule may look at besides the op.
struct ShardingContext {
  /// Devices on the tensor axis.
  int64_t devices = 1;
  /// Sequence parallelism: pending sums that feed anything but a
  /// contraction are split along dimension 1 (the sequence of [batch,
  /// sequence, hidden] activations) rather than replicated.
  bool sequenceParallel = false;
  /// The global types of the op's operands (the op's own operand types may
  /// already be per-device).
  llvm::ArrayRef<mlir::RankedTensorType> operandTypes;
  /// For each operand, true when it is a parameter (gathering one every
  /// step is the costliest conversion a rule can ask for).
  llvm::ArrayRef<bool> operandIsParameter;
  /// For each result, the layout its users want when the rule may choose
  /// (a parameter's gradient wants the parameter's layout); may be empty.
  llvm::ArrayRef<std::optional<TensorLayout>> resultHints;
};

/// A parameter operand worth sharding before layouts propagate, as
/// Megatron-LM shards its weights: a token embedding's table along the
/// vocabulary, a projection's weight along its output (column-parallel).
/// pp-shard-tensor-parallel keeps a seed when it needs no more all-gathers
/// than the program without it.
struct ShardingSeed {
  /// The operand to shard (when it is a parameter) and its dimension.
  unsigned operand = 0;
  int64_t dim = 0;
  /// The block counts to try, in order (2 or 3 for fused projections).
  llvm::SmallVector<int64_t> blockCounts;
  /// Seeds of one `group` value (the input of several projections: q, k
  /// and v) are sharded together; a parameter `group` is no seed. Null: a
  /// seed of its own.
  mlir::Value group;
  /// The dimension is a vocabulary (a token embedding, an LM head): one
  /// the tensor axis does not divide is an error.
  bool vocabulary = false;
};

/// The rule of an elementwise map with NumPy broadcasting (NN_Elementwise):
/// a sharding of a result dimension flows through the operands that span
/// it; pending sums pass where the op keeps them
/// (ShardingRuleOpInterface::keepsPendingSum). Any other op runs
/// replicated.
ShardingPlan planElementwiseSharding(mlir::Operation *op,
                                     llvm::ArrayRef<TensorLayout> operands,
                                     const ShardingContext &context);

} // namespace pp::nn

#endif // PP_DIALECTS_NN_IR_SHARDINGRULE_H
