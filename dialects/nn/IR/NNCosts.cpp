//===- NNCosts.cpp - the work of ops that is not one op per element -------===//
//
// nn::CostOpInterface of the ops whose floating-point work pp-partition's
// cost model cannot infer from their shapes.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

using namespace mlir;
using namespace pp::nn;

double pp::nn::staticElementCount(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

double MatmulOp::estimateFlops() {
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  int64_t k = getTransposeLhs() ? lhs.getDimSize(lhs.getRank() - 2)
                                : lhs.getDimSize(lhs.getRank() - 1);
  return 2.0 * staticElementCount(getType()) * k;
}

// An exponential, a sum, a logarithm and a subtraction per logit.
double CrossEntropyOp::estimateFlops() {
  return 4.0 * staticElementCount(getLogits().getType());
}

double CrossEntropyGradOp::estimateFlops() {
  return 4.0 * staticElementCount(getLogits().getType());
}

// One operation per input element, whatever the result's size.
double ReduceSumOp::estimateFlops() {
  return staticElementCount(getInput().getType());
}

double ReduceMeanOp::estimateFlops() {
  return staticElementCount(getInput().getType());
}

double ReduceMaxOp::estimateFlops() {
  return staticElementCount(getInput().getType());
}
