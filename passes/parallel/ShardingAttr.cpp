//===- ShardingAttr.cpp - a layout as #pp.sharding ------------------------===//

#include "passes/parallel/ShardingAttr.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace pp;

ShardingAttr pp::shardingAttr(MLIRContext *context, nn::TensorLayout layout,
                              int64_t rank, StringRef axis) {
  Builder builder(context);
  SmallVector<Attribute> dims(rank, builder.getArrayAttr({}));
  SmallVector<int64_t> blocks(rank, 1);
  ArrayAttr partial;
  if (layout.isSharded()) {
    dims[layout.dim] = builder.getStrArrayAttr({axis});
    blocks[layout.dim] = layout.blocks;
  }
  if (layout.isPartial())
    partial = builder.getStrArrayAttr({axis});
  DenseI64ArrayAttr blockAttr;
  if (layout.isSharded() && layout.blocks != 1)
    blockAttr = builder.getDenseI64ArrayAttr(blocks);
  return ShardingAttr::get(context, builder.getArrayAttr(dims), blockAttr,
                           partial);
}
