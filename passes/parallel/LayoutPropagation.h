//===- LayoutPropagation.h - layouts through a pipeline program -*- C++ -*-===//
//
// One walk over a program of pp.stage ops (forward stages, then backward)
// that gives every value a layout on the tensor axis by each op's sharding
// rule, starting from parameter seeds: as a trial it counts the all-gathers
// the layouts need; as the rewrite it inserts the collectives where a user
// needs another layout than its producer gives and makes the program
// per-device.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PARALLEL_LAYOUTPROPAGATION_H
#define PP_PASSES_PARALLEL_LAYOUTPROPAGATION_H

#include "dialects/nn/IR/TensorLayout.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <string>

namespace pp {

/// The mesh axis tensor parallelism shards over.
constexpr llvm::StringLiteral kTensorAxis = "tp";

/// Parameter layouts by @main argument number.
using ParameterLayouts = llvm::DenseMap<unsigned, nn::TensorLayout>;

/// What a propagation found.
struct PropagationResult {
  /// The layout of every parameter: the seeds and those the first user of
  /// an open parameter chose.
  ParameterLayouts parameters;
  /// All-gathers (and re-shardings) the layouts need.
  int64_t gathers = 0;
  /// Where the first of them is, for error messages.
  std::string firstGather;
  /// Why the first of them is needed when the reason is a size the tensor
  /// axis does not divide (attention heads), else "".
  std::string sizeProblem;
};

/// The operand `op` converts to another element type, keeping its shape
/// (nn.cast or another single-operand conversion: under a reduced precision,
/// pp-apply-precision's compute-type copy of a weight), else null. Layouts
/// treat such a copy of a parameter as the parameter.
mlir::Value convertedOperand(mlir::Operation *op);

/// Propagates layouts over `devices` devices through `main` (after
/// pp-insert-send-recv) from `seeds`. With `rewrite`, also turns `main`
/// into one device's program: collectives, per-device types, `pp.sharding`
/// on non-replicated values and sharded parameters; fails only after an
/// error.
mlir::FailureOr<PropagationResult>
propagateLayouts(mlir::func::FuncOp main, int64_t devices,
                 bool sequenceParallel, const ParameterLayouts &seeds,
                 bool rewrite);

} // namespace pp

#endif // PP_PASSES_PARALLEL_LAYOUTPROPAGATION_H
