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

static double elementsOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

OpCost estimateCost(Operation *op) {
  OpCost cost;
  for (Type type : op->getOperandTypes())
    cost.bytes += bytesOf(type);
  for (Type type : op->getResultTypes())
    cost.bytes += bytesOf(type);
  if (auto matmul = dyn_cast<nn::MatmulOp>(op)) {
    auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
    int64_t k = matmul.getTransposeLhs() ? lhs.getDimSize(lhs.getRank() - 2)
                                         : lhs.getDimSize(lhs.getRank() - 1);
    cost.flops = 2.0 * elementsOf(matmul.getType()) * k;
    return cost;
  }
  // exp, sum, log and a subtraction per logit.
  if (auto ce = dyn_cast<nn::CrossEntropyOp>(op)) {
    cost.flops = 4.0 * elementsOf(ce.getLogits().getType());
    return cost;
  }
  if (auto ceGrad = dyn_cast<nn::CrossEntropyGradOp>(op)) {
    cost.flops = 4.0 * elementsOf(ceGrad.getLogits().getType());
    return cost;
  }
  for (Type type : op->getResultTypes())
    cost.flops += elementsOf(type);
  for (Type type : op->getOperandTypes())
    cost.flops = std::max(cost.flops, elementsOf(type));
  return cost;
}

} // namespace pp
