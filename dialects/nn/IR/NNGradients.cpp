//===- NNGradients.cpp - reverse-mode rules of the nn ops -----------------===//
//
// One GradientOpInterface::buildGradients per differentiable op: given the
// gradients of its results, the contributions to its operands' gradients.
// Rules may return a gradient in the op's broadcast shape; pp-autodiff sums
// it back to the operand's shape. Every rule is checked against finite
// differences (test/Unit/Passes/GradientCheckTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace pp::nn;

namespace {

/// Fills `out` with one gradient per operand: `make(i)` for each wanted
/// operand, null for the others.
LogicalResult
gradientsOf(ArrayRef<bool> wanted, SmallVectorImpl<Value> &out,
            llvm::function_ref<Value(unsigned operand)> make) {
  out.assign(wanted.size(), Value());
  for (auto [index, want] : llvm::enumerate(wanted))
    if (want)
      out[index] = make(index);
  return success();
}

/// The rule of an op with one result and one operand whose gradient is
/// `make()`.
LogicalResult unaryGradient(ArrayRef<bool> wanted, SmallVectorImpl<Value> &out,
                            llvm::function_ref<Value()> make) {
  return gradientsOf(wanted, out, [&](unsigned) { return make(); });
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpBuilder &, ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  return gradientsOf(wanted, operandGradients,
                     [&](unsigned) { return resultGradients[0]; });
}

LogicalResult SubOp::buildGradients(OpBuilder &builder,
                                    ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  Value grad = resultGradients[0];
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    return i == 0 ? grad : NegOp::create(builder, getLoc(), grad);
  });
}

LogicalResult MulOp::buildGradients(OpBuilder &builder,
                                    ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  Value grad = resultGradients[0];
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    return MulOp::create(builder, getLoc(), grad, getOperand(1 - i));
  });
}

LogicalResult DivOp::buildGradients(OpBuilder &builder,
                                    ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  // d(a / b) = da / b - db * (a / b) / b.
  Value grad = resultGradients[0];
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    if (i == 0)
      return DivOp::create(builder, getLoc(), grad, getRhs());
    Value scaled = MulOp::create(builder, getLoc(), grad, getResult());
    Value quotient = DivOp::create(builder, getLoc(), scaled, getRhs());
    return NegOp::create(builder, getLoc(), quotient);
  });
}

LogicalResult NegOp::buildGradients(OpBuilder &builder,
                                    ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return NegOp::create(builder, getLoc(), resultGradients[0]);
  });
}

LogicalResult ExpOp::buildGradients(OpBuilder &builder,
                                    ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return MulOp::create(builder, getLoc(), resultGradients[0], getResult());
  });
}

LogicalResult TanhOp::buildGradients(OpBuilder &builder,
                                     ValueRange resultGradients,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return TanhGradOp::create(builder, getLoc(), resultGradients[0],
                              getResult());
  });
}

LogicalResult ReluOp::buildGradients(OpBuilder &builder,
                                     ValueRange resultGradients,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return ReluGradOp::create(builder, getLoc(), resultGradients[0],
                              getInput());
  });
}

LogicalResult
SigmoidOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                          ArrayRef<bool> wanted,
                          SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return SigmoidGradOp::create(builder, getLoc(), resultGradients[0],
                                 getResult());
  });
}

bool CastOp::isDifferentiableOperand(unsigned) {
  return isa<FloatType>(getElementTypeOrSelf(getInput())) &&
         isa<FloatType>(getElementTypeOrSelf(getResult()));
}

LogicalResult
DropoutOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                          ArrayRef<bool> wanted,
                          SmallVectorImpl<Value> &operandGradients) {
  // The same op on the gradient draws the same mask (the call's position
  // is the forward's) and scales by the same factor.
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return DropoutOp::create(builder, getLoc(), resultGradients[0],
                             getRatioAttr(), getKeyAttr());
  });
}

LogicalResult CastOp::buildGradients(OpBuilder &builder,
                                     ValueRange resultGradients,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return CastOp::create(builder, getLoc(), getInput().getType(),
                          resultGradients[0]);
  });
}

LogicalResult
WhereOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                        ArrayRef<bool> wanted,
                        SmallVectorImpl<Value> &operandGradients) {
  // The gradient where the operand was taken, zero elsewhere; the condition
  // is i1 and carries none (isDifferentiableOperand).
  Value grad = resultGradients[0];
  auto zeroType = RankedTensorType::get({}, getElementTypeOrSelf(grad));
  Value zero = arith::ConstantOp::create(builder, getLoc(),
                                         builder.getZeroAttr(zeroType));
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    Value onTrue = i == 1 ? grad : zero, onFalse = i == 1 ? zero : grad;
    return WhereOp::create(builder, getLoc(), getCondition(), onTrue, onFalse);
  });
}

//===----------------------------------------------------------------------===//
// Contractions and normalizations
//===----------------------------------------------------------------------===//

LogicalResult
MatmulOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                         ArrayRef<bool> wanted,
                         SmallVectorImpl<Value> &operandGradients) {
  // C = op(A) * op(B) with op = identity or transpose: each operand's
  // gradient is again a matmul of the result gradient with the other one.
  Value grad = resultGradients[0], a = getLhs(), b = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  Location loc = getLoc();
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    if (i == 0)
      return ta ? MatmulOp::create(builder, loc, b, grad, tb, true)   // B dC^T
                : MatmulOp::create(builder, loc, grad, b, false, !tb); // dC B^T
    return tb ? MatmulOp::create(builder, loc, grad, a, true, ta)    // dC^T A
              : MatmulOp::create(builder, loc, a, grad, !ta, false); // A^T dC
  });
}

LogicalResult
SoftmaxOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                          ArrayRef<bool> wanted,
                          SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return SoftmaxGradOp::create(builder, getLoc(), resultGradients[0],
                                 getResult(), getAxis());
  });
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

LogicalResult
ReshapeOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                          ArrayRef<bool> wanted,
                          SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    auto type = cast<RankedTensorType>(getInput().getType());
    return ReshapeOp::create(builder, getLoc(), resultGradients[0],
                             type.getShape());
  });
}

LogicalResult SplitOp::buildGradients(OpBuilder &builder,
                                      ValueRange resultGradients,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGradients) {
  // Each piece's gradient goes back to its slice of the input; the pieces'
  // contributions are summed in result order.
  auto type = cast<RankedTensorType>(getInput().getType());
  int64_t rank = type.getRank();
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0)
    axis += rank;
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    Value sum;
    int64_t offset = 0;
    for (auto [grad, size] : llvm::zip(resultGradients, getSizes())) {
      int64_t start = offset;
      offset += size;
      if (!grad)
        continue;
      SmallVector<int64_t> starts(rank, 0), strides(rank, 1);
      SmallVector<int64_t> limits(type.getShape());
      starts[axis] = start;
      limits[axis] = start + size;
      Value piece = SliceGradOp::create(builder, getLoc(), grad,
                                        type.getShape(), starts, limits,
                                        strides);
      sum = sum ? AddOp::create(builder, getLoc(), sum, piece) : piece;
    }
    return sum;
  });
}

LogicalResult
GatherOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                         ArrayRef<bool> wanted,
                         SmallVectorImpl<Value> &operandGradients) {
  // Only the data is differentiable (isDifferentiableOperand: the indices
  // are integers).
  return gradientsOf(wanted, operandGradients, [&](unsigned) -> Value {
    auto data = cast<RankedTensorType>(getData().getType());
    return GatherGradOp::create(builder, getLoc(), resultGradients[0],
                                getIndices(), getAxis(), data.getShape());
  });
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult
MseLossOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                          ArrayRef<bool> wanted,
                          SmallVectorImpl<Value> &operandGradients) {
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    Value input =
        MseLossGradOp::create(builder, getLoc(), resultGradients[0], getInput(),
                              getTarget(), getReduction());
    return i == 0 ? input : NegOp::create(builder, getLoc(), input);
  });
}

LogicalResult
CrossEntropyOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                               ArrayRef<bool> wanted,
                               SmallVectorImpl<Value> &operandGradients) {
  // Only the logits are differentiable (isDifferentiableOperand: the labels
  // are integers).
  return gradientsOf(wanted, operandGradients, [&](unsigned) -> Value {
    return CrossEntropyGradOp::create(builder, getLoc(), resultGradients[0],
                                      getLogits(), getLabels(),
                                      getReduction(), getIgnoreIndex());
  });
}
