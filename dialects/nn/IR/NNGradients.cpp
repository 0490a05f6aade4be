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

/// The starts, limits and strides of the elements [start, limit) along
/// `axis` (negative values count from the end) of a tensor of `shape`, all of
/// every other dimension.
struct AxisSlice {
  SmallVector<int64_t> starts, limits, strides;

  AxisSlice(ArrayRef<int64_t> shape, int64_t axis, int64_t start, int64_t limit)
      : starts(shape.size(), 0), limits(shape), strides(shape.size(), 1) {
    int64_t dim = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
    starts[dim] = start;
    limits[dim] = limit;
  }
};
/// The rule of a binary op whose operand gradients are `GradOp` (an
/// NN_BinaryOperandGradOp) of its result gradient and operands.
template <typename GradOp, typename Op>
LogicalResult
binaryOperandGradients(Op op, OpBuilder &builder, ValueRange resultGradients,
                       ArrayRef<bool> wanted, SmallVectorImpl<Value> &out) {
  return gradientsOf(wanted, out, [&](unsigned i) -> Value {
    return GradOp::create(builder, op.getLoc(), resultGradients[0], op.getLhs(),
                          op.getRhs(), i);
  });
}

/// A constant of `type` (a ranked tensor type of floats) with every element
/// `value`.
Value splatConstant(OpBuilder &builder, Location loc, RankedTensorType type,
                    double value) {
  auto element = FloatAttr::get(type.getElementType(), value);
  return arith::ConstantOp::create(builder, loc,
                                   DenseElementsAttr::get(type, element));
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

LogicalResult LogOp::buildGradients(OpBuilder &builder,
                                    ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return DivOp::create(builder, getLoc(), resultGradients[0], getInput());
  });
}

LogicalResult SqrtOp::buildGradients(OpBuilder &builder,
                                     ValueRange resultGradients,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return SqrtGradOp::create(builder, getLoc(), resultGradients[0],
                              getResult());
  });
}

LogicalResult
RsqrtOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                        ArrayRef<bool> wanted,
                        SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return RsqrtGradOp::create(builder, getLoc(), resultGradients[0],
                               getResult());
  });
}

LogicalResult ErfOp::buildGradients(OpBuilder &builder,
                                    ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return ErfGradOp::create(builder, getLoc(), resultGradients[0], getInput());
  });
}

LogicalResult GeluOp::buildGradients(OpBuilder &builder,
                                     ValueRange resultGradients,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return GeluGradOp::create(builder, getLoc(), resultGradients[0], getInput(),
                              getApproximate());
  });
}

LogicalResult PowOp::buildGradients(OpBuilder &builder,
                                    ValueRange resultGradients,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGradients) {
  return binaryOperandGradients<PowGradOp>(*this, builder, resultGradients,
                                           wanted, operandGradients);
}

LogicalResult
MaximumOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                          ArrayRef<bool> wanted,
                          SmallVectorImpl<Value> &operandGradients) {
  return binaryOperandGradients<MaximumGradOp>(*this, builder, resultGradients,
                                               wanted, operandGradients);
}

LogicalResult
MinimumOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                          ArrayRef<bool> wanted,
                          SmallVectorImpl<Value> &operandGradients) {
  return binaryOperandGradients<MinimumGradOp>(*this, builder, resultGradients,
                                               wanted, operandGradients);
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
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  auto gradType = cast<RankedTensorType>(grad.getType());
  // A linear layer on a batch ([..., M, K] times a [K, N] weight): the
  // weight's gradient is one GEMM over the batch's rows flattened, instead
  // of a gradient per batch element that sum_to then adds up.
  bool flattenRows = !ta && bType.getRank() == 2 && aType.getRank() > 2 &&
                     gradType.getRank() == aType.getRank() &&
                     aType.hasStaticShape() && gradType.hasStaticShape();
  auto rows = [&](Value value, RankedTensorType type) -> Value {
    int64_t columns = type.getShape().back();
    return ReshapeOp::create(
        builder, loc, value,
        ArrayRef<int64_t>{type.getNumElements() / std::max<int64_t>(columns, 1),
                          columns});
  };
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    if (i == 0)
      return ta ? MatmulOp::create(builder, loc, b, grad, tb, true)   // B dC^T
                : MatmulOp::create(builder, loc, grad, b, false, !tb); // dC B^T
    if (flattenRows) {
      Value aRows = rows(a, aType), gradRows = rows(grad, gradType);
      return tb ? MatmulOp::create(builder, loc, gradRows, aRows, true, false)
                : MatmulOp::create(builder, loc, aRows, gradRows, true, false);
    }
    return tb ? MatmulOp::create(builder, loc, grad, a, true, ta)    // dC^T A
              : MatmulOp::create(builder, loc, a, grad, !ta, false); // A^T dC
  });
}

bool AttentionOp::isDifferentiableOperand(unsigned index) {
  return index < 3; // Query, key and value; never the bias or mask.
}

LogicalResult
AttentionOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                            ArrayRef<bool> wanted,
                            SmallVectorImpl<Value> &operandGradients) {
  // One op makes the three gradients from each head's recomputed
  // probabilities; those not wanted are left unused.
  auto grad = AttentionGradOp::create(
      builder, getLoc(), resultGradients[0], getQuery(), getKey(), getValue(),
      getBias(), getMask(), getDivideAttr(), getFillAttr(),
      getFillWhereTrueAttr(), getScaleAttr(), getTransposeKeyAttr());
  return gradientsOf(wanted, operandGradients,
                     [&](unsigned i) -> Value { return grad->getResult(i); });
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

LogicalResult
LogSoftmaxOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return LogSoftmaxGradOp::create(builder, getLoc(), resultGradients[0],
                                    getResult(), getAxis());
  });
}

LogicalResult
LayerNormOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                            ArrayRef<bool> wanted,
                            SmallVectorImpl<Value> &operandGradients) {
  // The operands (input, weight, bias; a bias needs a weight) have the
  // gradients of layer_norm_grad's results of the same index. Without a
  // weight the gradient is that of a weight of ones.
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0)
    axis += input.getRank();
  Value weight = getWeight();
  if (!weight)
    weight =
        splatConstant(builder, getLoc(),
                      RankedTensorType::get(input.getShape().drop_front(axis),
                                            input.getElementType()),
                      1.0);
  auto grad =
      LayerNormGradOp::create(builder, getLoc(), resultGradients[0], getInput(),
                              weight, getAxis(), getEpsilon());
  return gradientsOf(wanted, operandGradients,
                     [&](unsigned i) -> Value { return grad->getResult(i); });
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult
ReduceSumOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                            ArrayRef<bool> wanted,
                            SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    auto input = cast<RankedTensorType>(getInput().getType());
    return ReduceSumGradOp::create(builder, getLoc(), resultGradients[0],
                                   getAxes(), input.getShape());
  });
}

LogicalResult
ReduceMeanOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &operandGradients) {
  // The sum's gradient of the result gradient divided by the group size,
  // divided before it is broadcast.
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    auto input = cast<RankedTensorType>(getInput().getType());
    int64_t count = 1;
    for (int64_t axis : getAxes())
      count *= input.getDimSize(axis < 0 ? axis + input.getRank() : axis);
    Value scale = splatConstant(
        builder, getLoc(), RankedTensorType::get({}, input.getElementType()),
        1.0 / static_cast<double>(count));
    Value scaled = MulOp::create(builder, getLoc(), resultGradients[0], scale);
    return ReduceSumGradOp::create(builder, getLoc(), scaled, getAxes(),
                                   input.getShape());
  });
}

LogicalResult
ReduceMaxOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                            ArrayRef<bool> wanted,
                            SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return ReduceMaxGradOp::create(builder, getLoc(), resultGradients[0],
                                   getInput(), getResult(), getAxes());
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
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    Value sum;
    int64_t offset = 0;
    for (auto [grad, size] : llvm::zip(resultGradients, getSizes())) {
      int64_t start = offset;
      offset += size;
      if (!grad)
        continue;
      AxisSlice slice(type.getShape(), getAxisAttr().getInt(), start, offset);
      Value piece =
          SliceGradOp::create(builder, getLoc(), grad, type.getShape(),
                              slice.starts, slice.limits, slice.strides);
      sum = sum ? AddOp::create(builder, getLoc(), sum, piece) : piece;
    }
    return sum;
  });
}

LogicalResult
TransposeOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                            ArrayRef<bool> wanted,
                            SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    ArrayRef<int64_t> permutation = getPermutation();
    SmallVector<int64_t> inverse(permutation.size());
    for (auto [index, dim] : llvm::enumerate(permutation))
      inverse[dim] = index;
    return TransposeOp::create(builder, getLoc(), resultGradients[0], inverse);
  });
}

LogicalResult
SliceOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                        ArrayRef<bool> wanted,
                        SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    auto type = cast<RankedTensorType>(getInput().getType());
    return SliceGradOp::create(builder, getLoc(), resultGradients[0],
                               type.getShape(), getStarts(), getLimits(),
                               getStrides());
  });
}

LogicalResult
ConcatOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                         ArrayRef<bool> wanted,
                         SmallVectorImpl<Value> &operandGradients) {
  // Each input's gradient is its slice of the result gradient along the
  // axis.
  auto resultType = cast<RankedTensorType>(getResult().getType());
  int64_t axis = getAxisAttr().getInt();
  SmallVector<int64_t> offsets = {0};
  for (Value input : getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    offsets.push_back(offsets.back() +
                      type.getDimSize(axis < 0 ? axis + type.getRank() : axis));
  }
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    AxisSlice slice(resultType.getShape(), axis, offsets[i], offsets[i + 1]);
    return SliceOp::create(builder, getLoc(), resultGradients[0], slice.starts,
                           slice.limits, slice.strides);
  });
}

LogicalResult
BroadcastToOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &operandGradients) {
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    auto type = cast<RankedTensorType>(getInput().getType());
    return SumToOp::create(builder, getLoc(), resultGradients[0],
                           type.getShape());
  });
}

LogicalResult
TriluOp::buildGradients(OpBuilder &builder, ValueRange resultGradients,
                        ArrayRef<bool> wanted,
                        SmallVectorImpl<Value> &operandGradients) {
  // The kept elements pass their gradient through; the zeroed ones get none.
  return unaryGradient(wanted, operandGradients, [&]() -> Value {
    return TriluOp::create(builder, getLoc(), resultGradients[0],
                           getDiagonalAttr(), getUpperAttr());
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

LogicalResult LinearCrossEntropyOp::buildGradients(
    OpBuilder &builder, ValueRange resultGradients, ArrayRef<bool> wanted,
    SmallVectorImpl<Value> &operandGradients) {
  // One kernel makes every gradient (the hidden states', the weight's and
  // the bias's), or the hidden states' alone where the weight and bias
  // take none (frozen); the labels (operand 2) are integers and get none.
  bool parametersWanted = wanted[1] || (getBias() && wanted[3]);
  if (!parametersWanted)
    return gradientsOf(wanted, operandGradients, [&](unsigned) -> Value {
      return LinearCrossEntropyHiddenGradOp::create(
          builder, getLoc(), resultGradients[0], getHidden(), getWeight(),
          getLabels(), getBias(), getReduction(), getIgnoreIndex(),
          getChunkRows(), getTransposeWeight());
    });
  auto grad = LinearCrossEntropyGradOp::create(
      builder, getLoc(), resultGradients[0], getHidden(), getWeight(),
      getLabels(), getBias(), getReduction(), getIgnoreIndex(), getChunkRows(),
      getTransposeWeight());
  return gradientsOf(wanted, operandGradients, [&](unsigned i) -> Value {
    return grad->getResult(i == 3 ? 2 : i);
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
