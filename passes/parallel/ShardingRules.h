//===- ShardingRules.h - how each op runs on sharded operands ---*- C++ -*-===//
//
// The sharding rule of every nn op, in one place (as Shardy's op sharding
// rule registry): given the layouts its operands arrive in, the layouts it
// needs them in and the layouts of its results. The pass inserts the
// collectives that convert between the two.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PARALLEL_SHARDINGRULES_H
#define PP_PASSES_PARALLEL_SHARDINGRULES_H

#include "passes/parallel/TensorLayout.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace pp {

/// What an op's rule decides.
struct ShardingPlan {
  /// The layout each operand must have when the op runs on a device.
  llvm::SmallVector<TensorLayout> operands;
  /// The layout of each result.
  llvm::SmallVector<TensorLayout> results;
  /// The pp op that computes the device's part when the nn op on local
  /// data would not: a vocabulary-parallel gather, gather gradient or
  /// cross-entropy.
  enum class Replacement {
    None,
    ShardedGather,
    ShardedGatherGrad,
    ShardedCrossEntropy,
    ShardedCrossEntropyGrad
  };
  Replacement replacement = Replacement::None;
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

/// The plan for `op` (an nn op or arith.constant; its result types are
/// global) whose operands currently have the layouts `operands`. Ops without
/// a rule of their own run replicated: every operand replicated.
ShardingPlan planSharding(mlir::Operation *op,
                          llvm::ArrayRef<TensorLayout> operands,
                          const ShardingContext &context);

} // namespace pp

#endif // PP_PASSES_PARALLEL_SHARDINGRULES_H
