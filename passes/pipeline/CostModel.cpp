//===- CostModel.cpp - what an op costs to run ----------------------------===//

#include "passes/pipeline/CostModel.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace pp {

double bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return static_cast<double>(tensor.getNumElements()) *
         std::max<unsigned>(1, tensor.getElementTypeBitWidth() / 8);
}

OpCost estimateCost(Operation *op) {
  OpCost cost;
  for (Type type : op->getOperandTypes())
    cost.bytes += bytesOf(type);
  for (Type type : op->getResultTypes())
    cost.bytes += bytesOf(type);
  if (auto costed = dyn_cast<nn::CostOpInterface>(op)) {
    cost.flops = costed.estimateFlops();
    return cost;
  }
  // About one operation per element of the largest tensor.
  for (Type type : op->getResultTypes())
    cost.flops += nn::staticElementCount(type);
  for (Type type : op->getOperandTypes())
    cost.flops = std::max(cost.flops, nn::staticElementCount(type));
  return cost;
}

} // namespace pp
