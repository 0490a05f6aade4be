//===- RecomputePolicy.h - what a stage's backward recomputes ---*- C++ -*-===//
//
// Activation recomputation trades compute for memory: a stage's backward
// recomputes some forward values from the values it keeps (checkpoints)
// instead of taking them saved from the forward. The policy says which
// forward ops are recomputed; pp-partition counts saved bytes and backward
// work by it, and pp-recompute rewrites the program by it, so that the two
// agree by construction.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PIPELINE_RECOMPUTEPOLICY_H
#define PP_PASSES_PIPELINE_RECOMPUTEPOLICY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Regex.h"

#include <memory>
#include <string>

namespace pp {

/// How much of its forward a stage's backward recomputes.
enum class RecomputeGranularity {
  /// Nothing: every value the backward reads is saved.
  none,
  /// The whole forward, from the values the stage receives, its graph
  /// inputs and its parameters.
  full,
  /// Everything but the results of ops that multiply by a weight (the
  /// GEMMs, kept) and of the ops that only carry such a result on, which
  /// nothing else reads (a bias add, a split, a transpose, an activation
  /// function whose gradient reads its result: recomputing them would keep
  /// the product in their place, as large): attention scores and
  /// probabilities, activation functions, normalizations, residual sums.
  selective,
  /// The ops whose names match a regular expression (`nn\.(softmax|erf)`).
  ops,
};

/// Which forward ops a stage's backward recomputes.
class RecomputePolicy {
public:
  RecomputePolicy() = default;

  /// The policy for `granularity` (none, full or selective) and `ops` (a
  /// regular expression over whole op names, or ""), or an error at
  /// `program` saying what is wrong: an unknown granularity, `ops` with
  /// `full` or `selective`, a pattern that does not parse or that names no
  /// op of `program` (listing the op names it has).
  static mlir::FailureOr<RecomputePolicy> parse(llvm::StringRef granularity,
                                                llvm::StringRef ops,
                                                mlir::func::FuncOp program);

  /// The policy a stage's `pp.stage_costs` entry records ("recompute" and
  /// "recompute_ops"); none when it records none.
  static RecomputePolicy ofStage(mlir::DictionaryAttr stageCost);

  /// The entries `ofStage` reads back (none for a policy that recomputes
  /// nothing).
  llvm::SmallVector<mlir::NamedAttribute>
  stageAttributes(mlir::Builder &builder) const;

  bool recomputesNothing() const { return kind == RecomputeGranularity::none; }

  /// Whether the backward recomputes `op`'s results (a forward op of the
  /// training program) rather than taking them saved: the ops the policy
  /// names, and constants under any policy that recomputes (a stage makes
  /// its own copies of constants; they are never saved). The same before
  /// and after pp-partition: selective's rule reads the program through
  /// the stages' boundaries.
  bool recomputes(mlir::Operation *op) const;

  /// The forward ops of `program` the backward recomputes when no stage
  /// boundary stops it: those `recomputes` accepts whose results a backward
  /// op, or another such op, reads.
  llvm::DenseSet<mlir::Operation *>
  recomputedOps(mlir::func::FuncOp program) const;

private:
  /// Matches the ops whose whole name `ops` matches.
  void setPattern(llvm::StringRef ops);

  RecomputeGranularity kind = RecomputeGranularity::none;
  std::string pattern;
  std::shared_ptr<llvm::Regex> matcher;
};

} // namespace pp

#endif // PP_PASSES_PIPELINE_RECOMPUTEPOLICY_H
