//===- NNFusion.cpp - nn.fusion and nn.yield --------------------*- C++ -*-===//
//
// The verifier of nn.fusion: a body of elementwise ops that all compute
// the fusion's shape, from inputs that broadcast to it.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace pp::nn;

namespace {

/// True when `shape` broadcasts to `target` as in NumPy (aligned from the
/// trailing dimension, each dimension equal or 1).
bool broadcastsTo(ArrayRef<int64_t> shape, ArrayRef<int64_t> target) {
  if (shape.size() > target.size())
    return false;
  ArrayRef<int64_t> aligned = target.take_back(shape.size());
  return llvm::all_of(llvm::zip_equal(shape, aligned), [](auto dims) {
    return std::get<0>(dims) == 1 || std::get<0>(dims) == std::get<1>(dims);
  });
}

} // namespace

RankedTensorType FusionOp::getFusionType() {
  return cast<RankedTensorType>(getResult(0).getType());
}

LogicalResult FusionOp::verify() {
  if (getNumResults() == 0)
    return emitOpError("has no results; a fusion computes at least one "
                       "tensor");
  RankedTensorType shaped = getFusionType();
  if (!shaped.hasStaticShape())
    return emitOpError("result 0 has the dynamic type ")
           << shaped << "; a fusion loops over a static shape";
  for (OpResult result : getResults())
    if (cast<RankedTensorType>(result.getType()).getShape() !=
        shaped.getShape())
      return emitOpError("result ")
             << result.getResultNumber() << " has type " << result.getType()
             << ", whose shape differs from result 0's " << shaped
             << "; all results of a fusion have one shape";
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (!type.hasStaticShape() ||
        !broadcastsTo(type.getShape(), shaped.getShape()))
      return emitOpError("input ")
             << index << " of type " << type
             << " does not broadcast to the fusion's shape (that of " << shaped
             << ")";
  }
  return success();
}

LogicalResult FusionOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError("body takes (")
           << body.getArgumentTypes() << ") but the inputs are ("
           << getInputs().getTypes() << "); the body has one argument per "
           << "input, of its type";
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with nn.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return yield.emitOpError("yields (")
           << yield.getValues().getTypes() << ") but the fusion returns ("
           << getResultTypes() << ")";
  ArrayRef<int64_t> shape = getFusionType().getShape();
  for (Operation &op : body.without_terminator()) {
    if (!op.hasTrait<Elementwise>())
      return op.emitOpError("is not elementwise (no NN_Elementwise trait); "
                            "an nn.fusion holds only elementwise ops");
    for (Type type : op.getResultTypes())
      if (cast<RankedTensorType>(type).getShape() != shape)
        return op.emitOpError("computes ")
               << type << " inside a fusion of shape " << getFusionType()
               << "; every op of a fusion computes the fusion's shape";
  }
  return success();
}
