//===- PartitionReport.h - pp-opt --pp-report -------------------*- C++ -*-===//
//
// Reads the partitioner's estimates (`pp.stage_costs`) from a partitioned or
// compiled module and prints them with the runtime's report
// (runtime/schedules/PipelineReport.h): per stage and per rank, and the
// schedule the partition was made for, simulated.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_OPT_PARTITIONREPORT_H
#define PP_TOOLS_PP_OPT_PARTITIONREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace pp {

/// Prints the report of `module` (partitioned by pp-partition, or compiled
/// by pp-compile) to `os`; fails, with an error on the module, when it has
/// no estimates or they are malformed.
mlir::LogicalResult printPartitionReport(mlir::ModuleOp module,
                                         llvm::raw_ostream &os);

} // namespace pp

#endif // PP_TOOLS_PP_OPT_PARTITIONREPORT_H
