//===- ShardingAttr.h - a layout as #pp.sharding ----------------*- C++ -*-===//
//
// How pp-shard-tensor-parallel records a tensor layout in the IR.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PARALLEL_SHARDINGATTR_H
#define PP_PASSES_PARALLEL_SHARDINGATTR_H

#include "dialects/nn/IR/TensorLayout.h"
#include "dialects/pp/IR/PPDialect.h"

namespace pp {

/// The `#pp.sharding` of a tensor of rank `rank` laid out as `layout` over
/// the mesh axis `axis`.
ShardingAttr shardingAttr(mlir::MLIRContext *context, nn::TensorLayout layout,
                          int64_t rank, llvm::StringRef axis);

} // namespace pp

#endif // PP_PASSES_PARALLEL_SHARDINGATTR_H
