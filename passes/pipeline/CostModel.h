//===- CostModel.h - what an op costs to run --------------------*- C++ -*-===//
//
// A static estimate of an op's work: floating-point operations and bytes
// read and written, turned into seconds at a machine's compute and memory
// rates. The partitioner balances stages with it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PIPELINE_COSTMODEL_H
#define PP_PASSES_PIPELINE_COSTMODEL_H

#include "mlir/IR/Operation.h"

namespace pp {

/// Work of one or more ops.
struct OpCost {
  double flops = 0;
  double bytes = 0;

  OpCost &operator+=(const OpCost &other) {
    flops += other.flops;
    bytes += other.bytes;
    return *this;
  }
  /// Estimated seconds on a machine with the given rates.
  double seconds(double flopsPerSecond, double bytesPerSecond) const {
    return flops / flopsPerSecond + bytes / bytesPerSecond;
  }
};

/// Compute and memory rates of one CPU core, the default target.
constexpr double kCpuFlopsPerSecond = 5e10;
constexpr double kCpuBytesPerSecond = 1e10;

/// Bytes per second between the ranks of two stages (Gloo over loopback).
constexpr double kLinkBytesPerSecond = 5e9;

/// The bytes of a tensor type (0 for anything else).
double bytesOf(mlir::Type type);

/// The work of `op`: what its nn::CostOpInterface says (2*M*N*K for a
/// matrix product), else one operation per element of its largest tensor;
/// and the bytes of all operands and results.
OpCost estimateCost(mlir::Operation *op);

} // namespace pp

#endif // PP_PASSES_PIPELINE_COSTMODEL_H
