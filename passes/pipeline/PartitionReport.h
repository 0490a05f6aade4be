//===- PartitionReport.h - what each stage and rank costs -------*- C++ -*-===//
//
// The partitioner's estimates (`pp.stage_costs`) as a table a user reads:
// per stage its rank, nodes, time, parameters, optimizer state, activations
// and boundary tensors; per rank its time and peak memory. pp-opt
// --pp-report and pp-run --report print it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PIPELINE_PARTITIONREPORT_H
#define PP_PASSES_PIPELINE_PARTITIONREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace pp {

/// One stage's entry of `pp.stage_costs`.
struct StageCostEntry {
  int64_t rank = 0;
  std::string firstNode, lastNode;
  /// Seconds per microbatch: the forward, the input-gradient and the
  /// weight-gradient parts of the backward, and all of it with the
  /// boundary traffic. The first three are what the schedule simulator
  /// (runtime/schedules/ScheduleSimulation.h, StageCosts) takes.
  double forwardSeconds = 0, backwardInputSeconds = 0,
         backwardWeightSeconds = 0, totalSeconds = 0;
  double parameterCount = 0, parameterBytes = 0, gradientBytes = 0,
         optimizerBytes = 0;
  /// Activations saved per microbatch, and the microbatches in flight.
  double savedBytes = 0;
  int64_t inFlight = 0;
  /// The values sent to later stages: name and bytes.
  std::vector<std::pair<std::string, double>> boundary;

  /// Parameters, their gradients and optimizer state, and the in-flight
  /// activations.
  double peakBytes() const {
    return parameterBytes + gradientBytes + optimizerBytes +
           savedBytes * static_cast<double>(inFlight);
  }
};

/// The stages' entries of `pp.stage_costs` (on the module after
/// pp-outline-stages, on @main before), or failure after an error when the
/// module has none or one is malformed.
mlir::FailureOr<std::vector<StageCostEntry>>
readStageCostEntries(mlir::ModuleOp module);

/// Prints the per-stage and per-rank tables of `module` (partitioned by
/// pp-partition, or compiled by pp-compile) to `os`.
mlir::LogicalResult printPartitionReport(mlir::ModuleOp module,
                                         llvm::raw_ostream &os);

} // namespace pp

#endif // PP_PASSES_PIPELINE_PARTITIONREPORT_H
