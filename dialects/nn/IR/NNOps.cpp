//===- NNOps.cpp - nn dialect ops -------------------------------*- C++ -*-===//
//
// Result-type inference of the nn ops. Inference is also the verifier: the
// InferTypeOpInterface trait checks the written result types against it, so
// every failure here is reported with the op's name, the operand types and
// the attribute values that disagree.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pp::nn;

namespace {

using Shape = SmallVector<int64_t>;

/// Formats a shape as `[4, 8]`, with `?` for a dynamic dimension.
std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os, [&](int64_t dim) {
    if (ShapedType::isDynamic(dim))
      os << '?';
    else
      os << dim;
  });
  os << ']';
  return text;
}

/// Reports an inference (and so verification) failure of `opName`.
template <typename... Args>
LogicalResult emitInferError(std::optional<Location> loc, StringRef opName,
                             Args &&...args) {
  return emitOptionalError(loc, "'", opName, "' op ",
                           std::forward<Args>(args)...);
}

/// Two dimensions agree when equal or when either is dynamic.
bool dimsAgree(int64_t lhs, int64_t rhs) {
  return lhs == rhs || ShapedType::isDynamic(lhs) || ShapedType::isDynamic(rhs);
}

bool shapesAgree(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  return lhs.size() == rhs.size() &&
         llvm::all_of(llvm::zip_equal(lhs, rhs), [](auto dims) {
           return dimsAgree(std::get<0>(dims), std::get<1>(dims));
         });
}

/// Maps `axis` in [-rank, rank) to [0, rank).
FailureOr<int64_t> normalizeAxis(std::optional<Location> loc, StringRef opName,
                                 StringRef what, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return emitInferError(loc, opName, what, " ", axis,
                          " is out of range for rank ", rank, " (expected ",
                          -rank, " <= ", what, " < ", rank, ")");
  return axis < 0 ? axis + rank : axis;
}

/// Checks that the shape attribute `what` has static, non-negative
/// dimensions.
LogicalResult checkStaticShape(std::optional<Location> loc, StringRef opName,
                               StringRef what, ArrayRef<int64_t> shape) {
  if (llvm::any_of(shape, [](int64_t dim) { return dim < 0; }))
    return emitInferError(loc, opName, what, " ", formatShape(shape),
                          " must have non-negative static dimensions");
  return success();
}

/// Checks that `from` broadcasts to `to` (NumPy rules).
bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (auto [index, dim] : llvm::enumerate(from))
    if (dim != 1 && !dimsAgree(dim, to[offset + index]))
      return false;
  return true;
}

/// Checks that every attribute of a strided slice has one entry per dimension
/// and addresses elements inside `shape`; returns the slice's shape.
FailureOr<Shape> inferSliceShape(std::optional<Location> loc, StringRef opName,
                                 ArrayRef<int64_t> shape,
                                 ArrayRef<int64_t> starts,
                                 ArrayRef<int64_t> limits,
                                 ArrayRef<int64_t> strides) {
  size_t rank = shape.size();
  if (starts.size() != rank || limits.size() != rank || strides.size() != rank)
    return emitInferError(loc, opName,
                          "starts, limits and strides need one entry "
                          "per dimension of ",
                          formatShape(shape), ", got ", starts.size(), ", ",
                          limits.size(), " and ", strides.size());
  Shape result;
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] < 1)
      return emitInferError(loc, opName, "stride ", strides[d],
                            " of dimension ", d, " must be at least 1");
    bool inBounds = 0 <= starts[d] && starts[d] <= limits[d] &&
                    (ShapedType::isDynamic(shape[d]) || limits[d] <= shape[d]);
    if (!inBounds)
      return emitInferError(loc, opName, "slice [", starts[d], ", ", limits[d],
                            ") of dimension ", d, " is not within [0, ",
                            ShapedType::isDynamic(shape[d])
                                ? std::string("?")
                                : std::to_string(shape[d]),
                            "] with start <= limit");
    result.push_back(llvm::divideCeil(limits[d] - starts[d], strides[d]));
  }
  return result;
}

/// Checks `labels` against `logits` (classes last) and `grad`, when given,
/// against the loss shape; returns the loss type.
FailureOr<RankedTensorType> inferCrossEntropyType(std::optional<Location> loc,
                                                  StringRef opName,
                                                  RankedTensorType logits,
                                                  RankedTensorType labels,
                                                  LossReduction reduction) {
  if (logits.getRank() < 1)
    return emitInferError(loc, opName,
                          "logits must have a class dimension, got ", logits);
  ArrayRef<int64_t> positions = logits.getShape().drop_back();
  if (!shapesAgree(positions, labels.getShape()))
    return emitInferError(
        loc, opName, "labels shape ", formatShape(labels.getShape()),
        " must equal the logits shape without the class dimension ",
        formatShape(positions));
  if (reduction == LossReduction::none)
    return RankedTensorType::get(positions, logits.getElementType());
  return RankedTensorType::get({}, logits.getElementType());
}

RankedTensorType lossType(RankedTensorType input, LossReduction reduction) {
  if (reduction == LossReduction::none)
    return input;
  return RankedTensorType::get({}, input.getElementType());
}

LogicalResult checkLossGrad(std::optional<Location> loc, StringRef opName,
                            RankedTensorType grad, RankedTensorType loss) {
  if (!shapesAgree(grad.getShape(), loss.getShape()))
    return emitInferError(
        loc, opName, "grad shape ", formatShape(grad.getShape()),
        " must equal the loss shape ", formatShape(loss.getShape()));
  return success();
}

/// The loss type of an nn.linear_cross_entropy (or of the one whose
/// gradient an nn.linear_cross_entropy_grad is): `cross_entropy(hidden x
/// weight, labels)`, with the shapes and chunk size checked.
template <typename Adaptor>
FailureOr<RankedTensorType>
inferLinearCrossEntropyType(std::optional<Location> loc, StringRef opName,
                            Adaptor &adaptor) {
  auto hidden = cast<RankedTensorType>(adaptor.getHidden().getType());
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  bool transposed = adaptor.getTransposeWeight();
  if (hidden.getRank() < 1 || weight.getRank() != 2)
    return emitInferError(loc, opName, "expects hidden [..., D] and weight ",
                          transposed ? "[V, D]" : "[D, V]", ", got ", hidden,
                          " and ", weight);
  int64_t depth = hidden.getShape().back();
  int64_t weightDepth = weight.getShape()[transposed ? 1 : 0];
  if (!shapesAgree({depth}, {weightDepth}))
    return emitInferError(loc, opName, "hidden ", hidden, " and weight ",
                          weight, " must share the depth D (",
                          transposed ? "the weight's second dimension"
                                     : "the weight's first dimension",
                          ")");
  if (adaptor.getChunkRows() < 1)
    return emitInferError(loc, opName, "chunk_rows must be positive, got ",
                          adaptor.getChunkRows());
  int64_t classes = weight.getShape()[transposed ? 0 : 1];
  if (Value biasValue = adaptor.getBias()) {
    auto bias = cast<RankedTensorType>(biasValue.getType());
    if (bias.getRank() != 1 || !shapesAgree(bias.getShape(), {classes}))
      return emitInferError(loc, opName, "bias ", bias,
                            " must be [V] with V = ", classes,
                            ", the classes of weight ", weight);
  }
  Shape logits(hidden.getShape().drop_back());
  logits.push_back(classes);
  return inferCrossEntropyType(
      loc, opName, RankedTensorType::get(logits, hidden.getElementType()),
      cast<RankedTensorType>(adaptor.getLabels().getType()),
      adaptor.getReduction());
}

/// Checks the operands of a gradient of an nn.linear_cross_entropy: those of
/// the op, and a loss gradient shaped like its loss.
template <typename Adaptor>
LogicalResult checkLinearCrossEntropyGrad(std::optional<Location> loc,
                                          StringRef opName, Adaptor &adaptor) {
  FailureOr<RankedTensorType> loss =
      inferLinearCrossEntropyType(loc, opName, adaptor);
  if (failed(loss))
    return failure();
  return checkLossGrad(
      loc, opName, cast<RankedTensorType>(adaptor.getGrad().getType()), *loss);
}

/// Checks that an optional per-feature operand of layer_norm has the shape of
/// the normalized dimensions.
LogicalResult checkNormalizedOperand(std::optional<Location> loc,
                                     StringRef opName, StringRef what,
                                     Value operand,
                                     ArrayRef<int64_t> normalized) {
  if (!operand)
    return success();
  auto type = cast<RankedTensorType>(operand.getType());
  if (!shapesAgree(type.getShape(), normalized))
    return emitInferError(
        loc, opName, what, " shape ", formatShape(type.getShape()),
        " must equal the normalized shape ", formatShape(normalized));
  return success();
}

} // namespace

/// Shared by the elementwise binary ops (see NN_BinaryOp in NNOps.td).
static LogicalResult inferBroadcastResult(std::optional<Location> loc,
                                          StringRef opName, ValueRange operands,
                                          SmallVectorImpl<Type> &types) {
  auto lhs = cast<RankedTensorType>(operands[0].getType());
  auto rhs = cast<RankedTensorType>(operands[1].getType());
  Shape shape;
  if (!OpTrait::util::getBroadcastedShape(lhs.getShape(), rhs.getShape(),
                                          shape))
    return emitInferError(
        loc, opName, "operand shapes ", formatShape(lhs.getShape()), " and ",
        formatShape(rhs.getShape()), " are not broadcast-compatible");
  types.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

/// The shape of `shape` reduced over `axes` (checked: in range, unique),
/// with the reduced dimensions kept as 1 under `keepDims`.
static FailureOr<Shape> reducedShape(std::optional<Location> loc,
                                     StringRef opName, ArrayRef<int64_t> shape,
                                     ArrayRef<int64_t> axes, bool keepDims) {
  int64_t rank = static_cast<int64_t>(shape.size());
  llvm::SmallSet<int64_t, 4> reduced;
  for (int64_t axis : axes) {
    FailureOr<int64_t> dim = normalizeAxis(loc, opName, "axis", axis, rank);
    if (failed(dim))
      return failure();
    if (!reduced.insert(*dim).second)
      return emitInferError(loc, opName, "axes ", formatShape(axes),
                            " name dimension ", *dim, " twice");
  }
  Shape result;
  for (auto [dim, size] : llvm::enumerate(shape)) {
    if (!reduced.contains(dim))
      result.push_back(size);
    else if (keepDims)
      result.push_back(1);
  }
  return result;
}

/// Shared by the reductions (see NN_ReduceOp in NNOps.td).
static LogicalResult inferReduceResult(std::optional<Location> loc,
                                       StringRef opName, Value input,
                                       ArrayRef<int64_t> axes, bool keepDims,
                                       SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(input.getType());
  FailureOr<Shape> shape =
      reducedShape(loc, opName, type.getShape(), axes, keepDims);
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, type.getElementType()));
  return success();
}

/// Checks that `what` (of shape `reduced`) is `input` reduced over `axes`,
/// with or without the kept dimensions (the reduction gradients).
static LogicalResult checkReducedShape(std::optional<Location> loc,
                                       StringRef opName, StringRef what,
                                       ArrayRef<int64_t> reduced,
                                       ArrayRef<int64_t> input,
                                       ArrayRef<int64_t> axes) {
  FailureOr<Shape> removed = reducedShape(loc, opName, input, axes, false);
  if (failed(removed))
    return failure();
  Shape kept = *reducedShape(loc, opName, input, axes, true);
  if (!shapesAgree(reduced, *removed) && !shapesAgree(reduced, kept))
    return emitInferError(loc, opName, what, " shape ", formatShape(reduced),
                          " must be ", formatShape(input), " reduced over ",
                          formatShape(axes), ": ", formatShape(*removed),
                          " or, with kept dimensions, ", formatShape(kept));
  return success();
}

/// Shared by the gradients of one operand of a binary op (see
/// NN_BinaryOperandGradOp in NNOps.td): the gradient has the type of
/// `grad`, the broadcast of `lhs` and `rhs`.
static LogicalResult inferOperandGradResult(std::optional<Location> loc,
                                            StringRef opName, Value grad,
                                            Value lhs, Value rhs,
                                            int64_t operand,
                                            SmallVectorImpl<Type> &types) {
  if (operand != 0 && operand != 1)
    return emitInferError(loc, opName, "operand ", operand,
                          " must be 0 (lhs) or 1 (rhs)");
  auto gradType = cast<RankedTensorType>(grad.getType());
  ArrayRef<int64_t> lhsShape = cast<RankedTensorType>(lhs.getType()).getShape();
  ArrayRef<int64_t> rhsShape = cast<RankedTensorType>(rhs.getType()).getShape();
  Shape shape;
  if (!OpTrait::util::getBroadcastedShape(lhsShape, rhsShape, shape) ||
      !shapesAgree(shape, gradType.getShape()))
    return emitInferError(loc, opName, "lhs ", formatShape(lhsShape),
                          " and rhs ", formatShape(rhsShape),
                          " must broadcast to the grad shape ",
                          formatShape(gradType.getShape()));
  types.push_back(gradType);
  return success();
}

/// Shared by the softmax-like ops: `axis` indexes the first operand.
static LogicalResult verifyAxisInRange(Operation *op, int64_t axis) {
  auto type = cast<RankedTensorType>(op->getOperand(0).getType());
  return normalizeAxis(op->getLoc(), op->getName().getStringRef(), "axis", axis,
                       type.getRank());
}

#include "dialects/nn/IR/NNInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

std::optional<Dtype> CastOp::dtypeOf(Type elementType) {
  return llvm::TypeSwitch<Type, std::optional<Dtype>>(elementType)
      .Case([](Float32Type) { return Dtype::f32; })
      .Case([](Float64Type) { return Dtype::f64; })
      .Case([](Float16Type) { return Dtype::f16; })
      .Case([](BFloat16Type) { return Dtype::bf16; })
      .Case([](IntegerType type) -> std::optional<Dtype> {
        if (!type.isSignless())
          return std::nullopt;
        switch (type.getWidth()) {
        case 64:
          return Dtype::i64;
        case 32:
          return Dtype::i32;
        case 1:
          return Dtype::i1;
        default:
          return std::nullopt;
        }
      })
      .Default([](Type) { return std::nullopt; });
}

void CastOp::build(OpBuilder &builder, OperationState &state, Type resultType,
                   Value input) {
  std::optional<Dtype> to = dtypeOf(getElementTypeOrSelf(resultType));
  assert(to && "nn.cast to an element type that has no nn::Dtype");
  build(builder, state, resultType, input, *to);
}

ParseResult CastOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::UnresolvedOperand input;
  FunctionType type;
  if (parser.parseOperand(input) ||
      parser.parseOptionalAttrDict(result.attributes) || parser.parseColon())
    return failure();
  SMLoc typeLoc = parser.getCurrentLocation();
  if (parser.parseType(type))
    return failure();
  if (type.getNumInputs() != 1 || type.getNumResults() != 1)
    return parser.emitError(typeLoc, "expected the type of one operand and "
                                     "one result, as (tensor<4xf32>) -> "
                                     "tensor<4xi64>, got ")
           << type;
  Type resultType = type.getResult(0);
  std::optional<Dtype> to = dtypeOf(getElementTypeOrSelf(resultType));
  if (!to)
    return parser.emitError(typeLoc, "nn.cast cannot convert to ")
           << resultType << "; the element type must be f32, f64, f16, bf16, "
           << "i64, i32 or i1";
  result.getOrAddProperties<Properties>().to =
      DtypeAttr::get(parser.getContext(), *to);
  result.addTypes(resultType);
  return parser.resolveOperand(input, type.getInput(0), result.operands);
}

void CastOp::print(OpAsmPrinter &printer) {
  printer << ' ' << getInput();
  printer.printOptionalAttrDict((*this)->getAttrs(), {getToAttrName()});
  printer << " : ";
  printer.printFunctionalType(getOperation());
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio ")
           << ratio << " is outside [0, 1); a dropout ratio is the "
           << "probability of zeroing an element";
  return success();
}

uint64_t pp::nn::dropoutKey(llvm::StringRef nodeName) {
  // FNV-1a: stable across runs, machines and compilers.
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : nodeName)
    hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

LogicalResult TriluOp::verify() {
  if (cast<RankedTensorType>(getInput().getType()).getRank() < 2)
    return emitOpError("input has rank ")
           << cast<RankedTensorType>(getInput().getType()).getRank()
           << "; nn.trilu takes the triangle of the two trailing dimensions, "
           << "so the input needs rank 2 or more";
  return success();
}

LogicalResult CastOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (!shapesAgree(input.getShape(), result.getShape()))
    return emitOpError("result shape ")
           << formatShape(result.getShape()) << " differs from the input shape "
           << formatShape(input.getShape())
           << "; nn.cast changes the element type only";
  if (dtypeOf(result.getElementType()) != getTo())
    return emitOpError("attribute 'to' (")
           << stringifyDtype(getTo()) << ") differs from the result element "
           << "type " << result.getElementType()
           << "; the parser and the builders derive it from the result type";
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto condition = cast<RankedTensorType>(adaptor.getCondition().getType());
  auto onTrue = cast<RankedTensorType>(adaptor.getOnTrue().getType());
  auto onFalse = cast<RankedTensorType>(adaptor.getOnFalse().getType());
  if (onTrue.getElementType() != onFalse.getElementType())
    return emitInferError(loc, getOperationName(), "on_true element type ",
                          onTrue.getElementType(),
                          " differs from on_false element "
                          "type ",
                          onFalse.getElementType());
  Shape values, shape;
  if (!OpTrait::util::getBroadcastedShape(onTrue.getShape(), onFalse.getShape(),
                                          values) ||
      !OpTrait::util::getBroadcastedShape(condition.getShape(), values, shape))
    return emitInferError(loc, getOperationName(), "operand shapes ",
                          formatShape(condition.getShape()), ", ",
                          formatShape(onTrue.getShape()), " and ",
                          formatShape(onFalse.getShape()),
                          " are not broadcast-compatible");
  types.push_back(RankedTensorType::get(shape, onTrue.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitInferError(loc, getOperationName(),
                          "operands must have rank 2 or more, got ", lhs,
                          " and ", rhs);
  ArrayRef<int64_t> lhsShape = lhs.getShape(), rhsShape = rhs.getShape();
  int64_t lhsRows = lhsShape[lhs.getRank() - 2];
  int64_t lhsCols = lhsShape[lhs.getRank() - 1];
  int64_t rhsRows = rhsShape[rhs.getRank() - 2];
  int64_t rhsCols = rhsShape[rhs.getRank() - 1];
  if (adaptor.getTransposeLhs())
    std::swap(lhsRows, lhsCols);
  if (adaptor.getTransposeRhs())
    std::swap(rhsRows, rhsCols);
  if (!dimsAgree(lhsCols, rhsRows))
    return emitInferError(
        loc, getOperationName(), "contracting dimensions differ: lhs ", lhs,
        " has K = ", lhsCols, ", rhs ", rhs, " has K = ", rhsRows);
  Shape shape;
  if (!OpTrait::util::getBroadcastedShape(lhsShape.drop_back(2),
                                          rhsShape.drop_back(2), shape))
    return emitInferError(loc, getOperationName(), "batch dimensions ",
                          formatShape(lhsShape.drop_back(2)), " and ",
                          formatShape(rhsShape.drop_back(2)),
                          " are not broadcast-compatible");
  shape.push_back(lhsRows);
  shape.push_back(rhsCols);
  types.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

namespace {

/// The result type of an nn.attention of these operands, or failure with an
/// error naming the operands that disagree.
FailureOr<RankedTensorType>
inferAttentionResult(std::optional<Location> loc, StringRef opName,
                     Value queryValue, Value keyValue, Value valueValue,
                     Value bias, Value mask, bool transposeKey) {
  auto query = cast<RankedTensorType>(queryValue.getType());
  auto key = cast<RankedTensorType>(keyValue.getType());
  auto value = cast<RankedTensorType>(valueValue.getType());
  int64_t rank = query.getRank();
  if (rank < 2 || key.getRank() != rank || value.getRank() != rank) {
    (void)emitInferError(loc, opName,
                         "query, key and value must have one rank, 2 or "
                         "more, got ",
                         query, ", ", key, " and ", value);
    return failure();
  }
  ArrayRef<int64_t> batch = query.getShape().drop_back(2);
  if (!shapesAgree(batch, key.getShape().drop_back(2)) ||
      !shapesAgree(batch, value.getShape().drop_back(2))) {
    (void)emitInferError(loc, opName,
                         "query, key and value must share their leading "
                         "(batch and head) dimensions, got ",
                         query, ", ", key, " and ", value);
    return failure();
  }
  int64_t queries = query.getShape()[rank - 2];
  int64_t depth = query.getShape()[rank - 1];
  int64_t keyDepth = key.getShape()[rank - (transposeKey ? 1 : 2)];
  int64_t keys = key.getShape()[rank - (transposeKey ? 2 : 1)];
  if (!dimsAgree(depth, keyDepth)) {
    (void)emitInferError(loc, opName, "query ", query, " has depth ", depth,
                         " but key ", key, " has ", keyDepth,
                         transposeKey ? " (key is [..., Sk, D] with "
                                        "transpose_key)"
                                      : " (key is [..., D, Sk])");
    return failure();
  }
  if (!dimsAgree(keys, value.getShape()[rank - 2])) {
    (void)emitInferError(loc, opName, "key ", key, " has ", keys,
                         " positions but value ", value, " has ",
                         value.getShape()[rank - 2]);
    return failure();
  }
  Shape scores(batch);
  scores.append({queries, keys});
  for (Value broadcast : {bias, mask}) {
    if (!broadcast)
      continue;
    auto type = cast<RankedTensorType>(broadcast.getType());
    Shape shape;
    if (type.getRank() > rank ||
        !OpTrait::util::getBroadcastedShape(scores, type.getShape(), shape) ||
        !shapesAgree(shape, scores)) {
      (void)emitInferError(loc, opName, broadcast == bias ? "bias " : "mask ",
                           type, " does not broadcast to the scores' shape ",
                           formatShape(scores));
      return failure();
    }
  }
  Shape result(batch);
  result.append({queries, value.getShape()[rank - 1]});
  return RankedTensorType::get(result, query.getElementType());
}

/// inferAttentionResult of an nn.attention's or nn.attention_grad's
/// operands and attributes.
template <typename Adaptor>
FailureOr<RankedTensorType> inferAttentionResult(std::optional<Location> loc,
                                                 StringRef opName,
                                                 Adaptor &adaptor) {
  return inferAttentionResult(loc, opName, adaptor.getQuery(), adaptor.getKey(),
                              adaptor.getValue(), adaptor.getBias(),
                              adaptor.getMask(), adaptor.getTransposeKey());
}

} // namespace

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> result =
      inferAttentionResult(loc, getOperationName(), adaptor);
  if (failed(result))
    return failure();
  types.push_back(*result);
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> result =
      inferAttentionResult(loc, getOperationName(), adaptor);
  if (failed(result))
    return failure();
  if (adaptor.getGrad().getType() != *result)
    return emitInferError(loc, getOperationName(), "grad ",
                          adaptor.getGrad().getType(),
                          " must have the attention's result type ", *result);
  types.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                adaptor.getValue().getType()});
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  if (input.getRank() < 1 || weight.getRank() != 2)
    return emitInferError(loc, getOperationName(),
                          "expects input [..., in] and "
                          "weight [out, in], got ",
                          input, " and ", weight);
  int64_t in = input.getShape().back();
  if (!dimsAgree(in, weight.getDimSize(1)))
    return emitInferError(loc, getOperationName(), "input features ", in,
                          " differ from weight input features ",
                          weight.getDimSize(1), " (weight is [out, in])");
  int64_t out = weight.getDimSize(0);
  if (Value bias = adaptor.getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() != 1 || !dimsAgree(biasType.getDimSize(0), out))
      return emitInferError(loc, getOperationName(), "bias ", biasType,
                            " must be [", out,
                            "], the weight's output features");
  }
  Shape shape(input.getShape().drop_back());
  shape.push_back(out);
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, getOperationName(), "axis",
                                          adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return failure();
  if (adaptor.getBias() && !adaptor.getWeight())
    return emitInferError(loc, getOperationName(), "a bias needs a weight");
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  if (failed(checkNormalizedOperand(loc, getOperationName(), "weight",
                                    adaptor.getWeight(), normalized)) ||
      failed(checkNormalizedOperand(loc, getOperationName(), "bias",
                                    adaptor.getBias(), normalized)))
    return failure();
  if (adaptor.getEpsilon().convertToDouble() < 0)
    return emitInferError(loc, getOperationName(), "epsilon ",
                          adaptor.getEpsilon().convertToDouble(),
                          " must not be negative");
  types.push_back(input);
  return success();
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto grad = cast<RankedTensorType>(adaptor.getGrad().getType());
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (grad != input)
    return emitInferError(loc, getOperationName(), "grad ", grad,
                          " must have the input type ", input);
  FailureOr<int64_t> axis = normalizeAxis(loc, getOperationName(), "axis",
                                          adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  if (failed(checkNormalizedOperand(loc, getOperationName(), "weight",
                                    adaptor.getWeight(), normalized)))
    return failure();
  auto featureType = RankedTensorType::get(normalized, input.getElementType());
  types.append({input, featureType, featureType});
  return success();
}

//===----------------------------------------------------------------------===//
// Reduction gradients
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto grad = cast<RankedTensorType>(adaptor.getGrad().getType());
  ArrayRef<int64_t> inputShape = adaptor.getInputShape();
  if (failed(
          checkStaticShape(loc, getOperationName(), "input_shape", inputShape)))
    return failure();
  if (failed(checkReducedShape(loc, getOperationName(), "grad", grad.getShape(),
                               inputShape, adaptor.getAxes())))
    return failure();
  types.push_back(RankedTensorType::get(inputShape, grad.getElementType()));
  return success();
}

LogicalResult ReduceMaxGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto grad = cast<RankedTensorType>(adaptor.getGrad().getType());
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto result = cast<RankedTensorType>(adaptor.getResultValue().getType());
  if (!shapesAgree(grad.getShape(), result.getShape()))
    return emitInferError(
        loc, getOperationName(), "grad shape ", formatShape(grad.getShape()),
        " must equal the result shape ", formatShape(result.getShape()));
  if (failed(checkReducedShape(loc, getOperationName(), "result",
                               result.getShape(), input.getShape(),
                               adaptor.getAxes())))
    return failure();
  types.push_back(input);
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> permutation = adaptor.getPermutation();
  SmallVector<bool> seen(input.getRank(), false);
  bool valid = static_cast<int64_t>(permutation.size()) == input.getRank();
  for (int64_t dim : permutation) {
    if (!valid || dim < 0 || dim >= input.getRank() || seen[dim]) {
      valid = false;
      break;
    }
    seen[dim] = true;
  }
  if (!valid)
    return emitInferError(loc, getOperationName(), "permutation ",
                          formatShape(permutation),
                          " is not a permutation of the dimensions of ", input);
  Shape shape;
  for (int64_t dim : permutation)
    shape.push_back(input.getDimSize(dim));
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> shape = adaptor.getShape();
  if (failed(checkStaticShape(loc, getOperationName(), "shape", shape)))
    return failure();
  if (input.hasStaticShape() &&
      input.getNumElements() != ShapedType::getNumElements(shape))
    return emitInferError(loc, getOperationName(), "shape ", formatShape(shape),
                          " holds ", ShapedType::getNumElements(shape),
                          " elements but the input ", input, " holds ",
                          input.getNumElements());
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (!broadcastsTo(input.getShape(), adaptor.getShape()))
    return emitInferError(
        loc, getOperationName(), "input shape ", formatShape(input.getShape()),
        " does not broadcast to ", formatShape(adaptor.getShape()));
  types.push_back(
      RankedTensorType::get(adaptor.getShape(), input.getElementType()));
  return success();
}

LogicalResult SumToOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (!broadcastsTo(adaptor.getShape(), input.getShape()))
    return emitInferError(loc, getOperationName(), "shape ",
                          formatShape(adaptor.getShape()),
                          " does not broadcast to the input shape ",
                          formatShape(input.getShape()));
  types.push_back(
      RankedTensorType::get(adaptor.getShape(), input.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  FailureOr<Shape> shape = inferSliceShape(
      loc, getOperationName(), input.getShape(), adaptor.getStarts(),
      adaptor.getLimits(), adaptor.getStrides());
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, input.getElementType()));
  return success();
}

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto grad = cast<RankedTensorType>(adaptor.getGrad().getType());
  ArrayRef<int64_t> inputShape = adaptor.getInputShape();
  if (failed(
          checkStaticShape(loc, getOperationName(), "input_shape", inputShape)))
    return failure();
  FailureOr<Shape> sliced =
      inferSliceShape(loc, getOperationName(), inputShape, adaptor.getStarts(),
                      adaptor.getLimits(), adaptor.getStrides());
  if (failed(sliced))
    return failure();
  if (!shapesAgree(grad.getShape(), *sliced))
    return emitInferError(loc, getOperationName(), "grad shape ",
                          formatShape(grad.getShape()),
                          " must equal the slice shape ", formatShape(*sliced));
  types.push_back(RankedTensorType::get(inputShape, grad.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitInferError(loc, getOperationName(), "needs at least one input");
  auto first = cast<RankedTensorType>(inputs.front().getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, getOperationName(), "axis",
                                          adaptor.getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  Shape shape(first.getShape());
  for (auto [index, input] : llvm::enumerate(inputs.drop_front())) {
    auto type = cast<RankedTensorType>(input.getType());
    bool agree = type.getRank() == first.getRank();
    for (int64_t d = 0; agree && d < first.getRank(); ++d)
      agree = d == *axis || dimsAgree(type.getDimSize(d), shape[d]);
    if (!agree)
      return emitInferError(loc, getOperationName(), "input ", index + 1, " ",
                            type, " does not match input 0 ", first,
                            " outside the concatenated axis ", *axis);
    if (ShapedType::isDynamic(shape[*axis]) || type.isDynamicDim(*axis))
      shape[*axis] = ShapedType::kDynamic;
    else
      shape[*axis] += type.getDimSize(*axis);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, getOperationName(), "axis",
                                          adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty() || llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
    return emitInferError(loc, getOperationName(), "sizes ", formatShape(sizes),
                          " must be a non-empty list of non-negative sizes");
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size;
  if (!dimsAgree(total, input.getDimSize(*axis)))
    return emitInferError(loc, getOperationName(), "sizes ", formatShape(sizes),
                          " add up to ", total, " but dimension ", *axis,
                          " of ", input, " is ", input.getDimSize(*axis));
  for (int64_t size : sizes) {
    Shape shape(input.getShape());
    shape[*axis] = size;
    types.push_back(RankedTensorType::get(shape, input.getElementType()));
  }
  return success();
}

/// The shape of gather's result: data[:axis] + indices + data[axis+1:].
static Shape gatherShape(ArrayRef<int64_t> data, ArrayRef<int64_t> indices,
                         int64_t axis) {
  Shape shape(data.take_front(axis));
  shape.append(indices.begin(), indices.end());
  shape.append(data.begin() + axis + 1, data.end());
  return shape;
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  FailureOr<int64_t> axis = normalizeAxis(loc, getOperationName(), "axis",
                                          adaptor.getAxis(), data.getRank());
  if (failed(axis))
    return failure();
  types.push_back(RankedTensorType::get(
      gatherShape(data.getShape(), indices.getShape(), *axis),
      data.getElementType()));
  return success();
}

LogicalResult GatherGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto grad = cast<RankedTensorType>(adaptor.getGrad().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  ArrayRef<int64_t> dataShape = adaptor.getDataShape();
  if (failed(
          checkStaticShape(loc, getOperationName(), "data_shape", dataShape)))
    return failure();
  FailureOr<int64_t> axis =
      normalizeAxis(loc, getOperationName(), "axis", adaptor.getAxis(),
                    static_cast<int64_t>(dataShape.size()));
  if (failed(axis))
    return failure();
  Shape expected = gatherShape(dataShape, indices.getShape(), *axis);
  if (!shapesAgree(grad.getShape(), expected))
    return emitInferError(
        loc, getOperationName(), "grad shape ", formatShape(grad.getShape()),
        " must equal the gather result shape ", formatShape(expected));
  types.push_back(RankedTensorType::get(dataShape, grad.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> loss = inferCrossEntropyType(
      loc, getOperationName(),
      cast<RankedTensorType>(adaptor.getLogits().getType()),
      cast<RankedTensorType>(adaptor.getLabels().getType()),
      adaptor.getReduction());
  if (failed(loss))
    return failure();
  types.push_back(*loss);
  return success();
}

LogicalResult
CrossEntropyGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  auto logits = cast<RankedTensorType>(adaptor.getLogits().getType());
  FailureOr<RankedTensorType> loss = inferCrossEntropyType(
      loc, getOperationName(), logits,
      cast<RankedTensorType>(adaptor.getLabels().getType()),
      adaptor.getReduction());
  if (failed(loss) ||
      failed(checkLossGrad(loc, getOperationName(),
                           cast<RankedTensorType>(adaptor.getGrad().getType()),
                           *loss)))
    return failure();
  types.push_back(logits);
  return success();
}

LogicalResult LinearCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  FailureOr<RankedTensorType> loss =
      inferLinearCrossEntropyType(loc, getOperationName(), adaptor);
  if (failed(loss))
    return failure();
  types.push_back(*loss);
  return success();
}

LogicalResult LinearCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(checkLinearCrossEntropyGrad(loc, getOperationName(), adaptor)))
    return failure();
  types.append({adaptor.getHidden().getType(), adaptor.getWeight().getType()});
  if (Value bias = adaptor.getBias())
    types.push_back(bias.getType());
  return success();
}

LogicalResult LinearCrossEntropyHiddenGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(checkLinearCrossEntropyGrad(loc, getOperationName(), adaptor)))
    return failure();
  types.push_back(adaptor.getHidden().getType());
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto target = cast<RankedTensorType>(adaptor.getTarget().getType());
  if (!shapesAgree(input.getShape(), target.getShape()))
    return emitInferError(loc, getOperationName(), "input ", input,
                          " and target ", target, " must have the same shape");
  types.push_back(lossType(input, adaptor.getReduction()));
  return success();
}

LogicalResult MseLossGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto target = cast<RankedTensorType>(adaptor.getTarget().getType());
  if (input != target)
    return emitInferError(loc, getOperationName(), "input ", input,
                          " and target ", target, " must have the same type");
  if (failed(checkLossGrad(loc, getOperationName(),
                           cast<RankedTensorType>(adaptor.getGrad().getType()),
                           lossType(input, adaptor.getReduction()))))
    return failure();
  types.push_back(input);
  return success();
}
