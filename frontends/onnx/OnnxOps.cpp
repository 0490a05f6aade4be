//===- OnnxOps.cpp - ONNX nodes into nn ops -------------------------------===//
//
// One converter per ONNX op type, and the table (nodeRules) that says which
// op types pp imports, with their input and output counts and attributes.
// Nodes whose inputs are constants were folded before (ConstantFolding.cpp):
// a converter sees at least one value computed at run time.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxShapes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/Format.h"

using namespace mlir;

namespace pp::onnx_frontend {

const std::map<std::string, NodeRule, std::less<>> &nodeRules() {
  using G = GraphImporter;
  using A = onnx::AttributeProto;
  constexpr int64_t kMax = kMaxOpset;
  constexpr int kAny = -1;
  const AttributeRule axis{"axis", A::INT};
  auto unary = [](auto import) { return NodeRule{import, 1, 1}; };
  auto binary = [](auto import) { return NodeRule{import, 2, 2}; };
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  auto reduce = [&](auto import, int64_t axesInputSince) {
    return NodeRule{import,
                    1,
                    2,
                    1,
                    1,
                    {{"axes", A::INTS, kMinOpset, axesInputSince - 1},
                     {"keepdims", A::INT},
                     {"noop_with_empty_axes", A::INT, axesInputSince, kMax}}};
  };
  // Ops that pp evaluates only over constants: masks, positions and rotary
  // tables, which exporters compute in the graph from shapes.
  auto foldOnly = [](int inputs, std::vector<AttributeRule> attributes = {}) {
    return NodeRule{nullptr,
                    inputs,
                    inputs,
                    1,
                    1,
                    std::move(attributes),
                    kMinOpset,
                    "pp has no such op on values computed at run time: it "
                    "only folds over constants (mask, position and rotary "
                    "table computations)"};
  };
  static const std::map<std::string, NodeRule, std::less<>> rules = {
      {"Add", binary(&G::importBinary<nn::AddOp>)},
      {"And", foldOnly(2)},
      {"Cast",
       {&G::importCast,
        1,
        1,
        1,
        1,
        {{"to", A::INT, kMinOpset, kMax, true},
         {"saturate", A::INT, 19, kMax}}}},
      {"CastLike",
       {&G::importCastLike,
        2,
        2,
        1,
        1,
        {{"saturate", A::INT, 19, kMax}},
        15}},
      {"Concat",
       {&G::importConcat,
        1,
        kAny,
        1,
        1,
        {{"axis", A::INT, kMinOpset, kMax, true}}}},
      {"Constant",
       {&G::importConstant,
        0,
        0,
        1,
        1,
        {{"value", A::TENSOR},
         {"value_float", A::FLOAT},
         {"value_floats", A::FLOATS},
         {"value_int", A::INT},
         {"value_ints", A::INTS}}}},
      {"ConstantOfShape",
       {nullptr,
        1,
        1,
        1,
        1,
        {{"value", A::TENSOR}},
        kMinOpset,
        "it makes a tensor of the shape its input gives"}},
      {"Cos", foldOnly(1)},
      {"CumSum", foldOnly(2, {{"exclusive", A::INT}, {"reverse", A::INT}})},
      {"Div", binary(&G::importBinary<nn::DivOp>)},
      {"Dropout", {&G::importDropout, 1, 3, 1, 2, {{"seed", A::INT}}}},
      {"Equal",
       {nullptr,
        2,
        2,
        1,
        1,
        {},
        kMinOpset,
        "pp has no comparison op: Equal only folds over constants (shape "
        "and mask computations)"}},
      {"Erf", unary(&G::importUnary<nn::ErfOp>)},
      {"Exp", unary(&G::importUnary<nn::ExpOp>)},
      {"Expand", binary(&G::importExpand)},
      {"Flatten", {&G::importFlatten, 1, 1, 1, 1, {axis}}},
      {"Gather", {&G::importGather, 2, 2, 1, 1, {axis}}},
      {"GatherElements", foldOnly(2, {axis})},
      {"GatherND", foldOnly(2, {{"batch_dims", A::INT}})},
      {"Gelu", {&G::importGelu, 1, 1, 1, 1, {{"approximate", A::STRING}}, 20}},
      {"Gemm",
       {&G::importGemm,
        2,
        3,
        1,
        1,
        {{"alpha", A::FLOAT},
         {"beta", A::FLOAT},
         {"transA", A::INT},
         {"transB", A::INT}}}},
      {"Greater", foldOnly(2)},
      {"GreaterOrEqual", foldOnly(2)},
      {"Identity", unary(&G::importIdentity)},
      {"IsNaN", foldOnly(1)},
      {"LayerNormalization",
       {&G::importLayerNormalization,
        2,
        3,
        1,
        3,
        {axis, {"epsilon", A::FLOAT}, {"stash_type", A::INT}},
        17}},
      {"Less", foldOnly(2)},
      {"LessOrEqual", foldOnly(2)},
      {"Log", unary(&G::importUnary<nn::LogOp>)},
      {"LogSoftmax", {&G::importSoftmax<nn::LogSoftmaxOp>, 1, 1, 1, 1, {axis}}},
      {"MatMul", binary(&G::importMatMul)},
      {"Max", {&G::importVariadic<nn::MaximumOp>, 1, kAny}},
      {"Min", {&G::importVariadic<nn::MinimumOp>, 1, kAny}},
      {"Mul", binary(&G::importBinary<nn::MulOp>)},
      {"Neg", unary(&G::importUnary<nn::NegOp>)},
      {"Not", foldOnly(1)},
      {"Or", foldOnly(2)},
      {"Pow", binary(&G::importPow)},
      {"Range",
       {nullptr,
        3,
        3,
        1,
        1,
        {},
        kMinOpset,
        "pp compiles static shapes and Range's length depends on them"}},
      {"Reciprocal", unary(&G::importReciprocal)},
      {"ReduceMax", reduce(&G::importReduce<nn::ReduceMaxOp>, 18)},
      {"ReduceMean", reduce(&G::importReduce<nn::ReduceMeanOp>, 18)},
      {"ReduceSum", reduce(&G::importReduce<nn::ReduceSumOp>, 13)},
      {"Relu", unary(&G::importUnary<nn::ReluOp>)},
      {"Reshape",
       {&G::importReshape, 2, 2, 1, 1, {{"allowzero", A::INT, 14, kMax}}}},
      // Shape always folds: every tensor's shape is static.
      {"Shape",
       {nullptr,
        1,
        1,
        1,
        1,
        {{"start", A::INT, 15, kMax}, {"end", A::INT, 15, kMax}}}},
      {"SequenceAt", {&G::importSequenceAt, 2, 2}},
      {"Sigmoid", unary(&G::importUnary<nn::SigmoidOp>)},
      {"Sin", foldOnly(1)},
      // Size always folds: every tensor's shape is static.
      {"Size", {nullptr, 1, 1}},
      {"Slice", {&G::importSlice, 3, 5}},
      {"Softmax", {&G::importSoftmax<nn::SoftmaxOp>, 1, 1, 1, 1, {axis}}},
      {"SplitToSequence",
       {&G::importSplitToSequence,
        1,
        2,
        1,
        1,
        {axis, {"keepdims", A::INT}}}},
      {"Split",
       {&G::importSplit,
        1,
        2,
        1,
        kAny,
        {axis, {"num_outputs", A::INT, 18, kMax}}}},
      {"Sqrt", unary(&G::importUnary<nn::SqrtOp>)},
      {"Squeeze", {&G::importSqueeze, 1, 2}},
      {"Sub", binary(&G::importBinary<nn::SubOp>)},
      {"Tanh", unary(&G::importUnary<nn::TanhOp>)},
      {"Transpose", {&G::importTranspose, 1, 1, 1, 1, {{"perm", A::INTS}}}},
      {"Trilu", {&G::importTrilu, 1, 2, 1, 1, {{"upper", A::INT}}, 14}},
      {"Unsqueeze", binary(&G::importUnsqueeze)},
      {"Where", {&G::importWhere, 3, 3}},
  };
  return rules;
}

/// The outputs of a node with the one output `value`.
static FailureOr<NodeOutputs> single(FailureOr<Value> value) {
  if (failed(value))
    return failure();
  return NodeOutputs{*value};
}

static RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Properties of an nn.matmul with the given transpositions.
static nn::MatmulOp::Properties
matmulProperties(Builder &builder, bool transposeLhs, bool transposeRhs) {
  nn::MatmulOp::Properties properties;
  if (transposeLhs)
    properties.transpose_lhs = builder.getUnitAttr();
  if (transposeRhs)
    properties.transpose_rhs = builder.getUnitAttr();
  return properties;
}

/// Reads a matrix operand through a transpose of its two dimensions (a
/// weight that pp-import keeps in its module layout behind a Transpose, or
/// `x @ W.T` as written): the transpose's input, with `transposed` flipped,
/// so that the product reads the weight in place and tensor parallelism sees
/// the projection.
static Value throughTranspose(Value operand, bool &transposed) {
  auto transpose = operand.getDefiningOp<nn::TransposeOp>();
  if (!transpose || typeOf(operand).getRank() != 2 ||
      transpose.getPermutation()[0] != 1)
    return operand;
  transposed = !transposed;
  return transpose.getInput();
}

FailureOr<NodeOutputs> GraphImporter::importGemm(const NodeContext &ctx,
                                                 ValueRange inputs) {
  for (Value operand : inputs.take_front(2))
    if (typeOf(operand).getRank() != 2)
      return ctx.error() << "operands A and B must have rank 2, found "
                         << operand.getType();
  const onnx::NodeProto &node = ctx.node;
  bool transposeA = intAttribute(node, "transA", 0) != 0;
  bool transposeB = intAttribute(node, "transB", 0) != 0;
  Value a = throughTranspose(inputs[0], transposeA);
  Value b = throughTranspose(inputs[1], transposeB);
  FailureOr<Value> result = createChecked<nn::MatmulOp>(
      ctx, {a, b}, matmulProperties(builder, transposeA, transposeB));
  if (failed(result))
    return failure();
  Type elementType = getElementTypeOrSelf(*result);
  float alpha = floatAttribute(node, "alpha", 1.0f);
  if (alpha != 1.0f)
    result =
        Value(nn::MulOp::create(builder, ctx.loc, *result,
                                scalarConstant(ctx.loc, alpha, elementType)));
  if (inputs.size() < 3)
    return single(result);
  Value bias = inputs[2];
  float beta = floatAttribute(node, "beta", 1.0f);
  if (beta != 1.0f)
    bias = nn::MulOp::create(builder, ctx.loc, bias,
                             scalarConstant(ctx.loc, beta, elementType));
  return single(createChecked<nn::AddOp>(ctx, {*result, bias}));
}

FailureOr<NodeOutputs> GraphImporter::importMatMul(const NodeContext &ctx,
                                                   ValueRange inputs) {
  // NumPy's matmul: a vector operand is a matrix of one row (lhs) or one
  // column (rhs) whose added dimension leaves the result.
  Value lhs = inputs[0], rhs = inputs[1];
  RankedTensorType lhsType = typeOf(lhs), rhsType = typeOf(rhs);
  if (lhsType.getRank() == 0 || rhsType.getRank() == 0)
    return ctx.error() << "MatMul operands must have rank 1 or more, found "
                       << lhsType << " and " << rhsType;
  if (lhsType.getRank() == 1)
    lhs = reshaped(ctx.loc, lhs, {1, lhsType.getDimSize(0)});
  if (rhsType.getRank() == 1)
    rhs = reshaped(ctx.loc, rhs, {rhsType.getDimSize(0), 1});
  bool transposeLhs = false, transposeRhs = false;
  lhs = throughTranspose(lhs, transposeLhs);
  rhs = throughTranspose(rhs, transposeRhs);
  FailureOr<Value> product = createChecked<nn::MatmulOp>(
      ctx, {lhs, rhs}, matmulProperties(builder, transposeLhs, transposeRhs));
  if (failed(product))
    return failure();
  Shape shape(typeOf(*product).getShape());
  if (rhsType.getRank() == 1)
    shape.pop_back();
  if (lhsType.getRank() == 1)
    shape.erase(shape.end() - (rhsType.getRank() == 1 ? 1 : 2));
  return NodeOutputs{reshaped(ctx.loc, *product, shape)};
}

/// `input` cast to `elementType`.
static Value castedTo(OpBuilder &builder, Location loc, Value input,
                      Type elementType) {
  RankedTensorType type = typeOf(input);
  if (type.getElementType() == elementType)
    return input; // A cast to the same type is the identity.
  return nn::CastOp::create(builder, loc, type.clone(elementType), input);
}

FailureOr<NodeOutputs> GraphImporter::importCast(const NodeContext &ctx,
                                                 ValueRange inputs) {
  int64_t to = intAttribute(ctx.node, "to", onnx::TensorProto::UNDEFINED);
  FailureOr<Type> elementType =
      elementTypeOf(static_cast<int32_t>(to), "Cast's 'to'", ctx.loc);
  if (failed(elementType))
    return failure();
  return NodeOutputs{castedTo(builder, ctx.loc, inputs[0], *elementType)};
}

FailureOr<NodeOutputs> GraphImporter::importCastLike(const NodeContext &ctx,
                                                     ValueRange inputs) {
  return NodeOutputs{
      castedTo(builder, ctx.loc, inputs[0], getElementTypeOrSelf(inputs[1]))};
}

FailureOr<NodeOutputs> GraphImporter::importGather(const NodeContext &ctx,
                                                   ValueRange inputs) {
  int64_t axis = intAttribute(ctx.node, "axis", 0);
  if (failed(normalizeAxis(ctx, "axis", axis, typeOf(inputs[0]).getRank())))
    return failure();
  Type indexType = getElementTypeOrSelf(inputs[1]);
  if (!indexType.isInteger(64) && !indexType.isInteger(32))
    return ctx.error() << "indices '" << ctx.inputName(1)
                       << "' must be INT64 or INT32, found "
                       << inputs[1].getType();
  nn::GatherOp::Properties properties;
  properties.axis = builder.getI64IntegerAttr(axis);
  return single(createChecked<nn::GatherOp>(ctx, inputs, properties));
}

FailureOr<NodeOutputs> GraphImporter::importConstant(const NodeContext &ctx,
                                                     ValueRange) {
  const onnx::NodeProto &node = ctx.node;
  DenseElementsAttr value;
  auto vector = [&](auto data, Type elementType) {
    return DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(data.size())}, elementType),
        ArrayRef(data));
  };
  auto scalar = [&](auto data, Type elementType) {
    return DenseElementsAttr::get(RankedTensorType::get({}, elementType),
                                  ArrayRef(data));
  };
  if (const onnx::AttributeProto *tensor = findAttribute(node, "value")) {
    FailureOr<TensorValues> converted =
        readTensor(tensor->t(), ctx.describe("its value"), ctx.loc, builder);
    if (failed(converted))
      return failure();
    value = toElementsAttr(*converted);
  } else if (const onnx::AttributeProto *f =
                 findAttribute(node, "value_float")) {
    value = scalar(f->f(), builder.getF32Type());
  } else if (const onnx::AttributeProto *fs =
                 findAttribute(node, "value_floats")) {
    value = vector(std::vector<float>(fs->floats().begin(), fs->floats().end()),
                   builder.getF32Type());
  } else if (const onnx::AttributeProto *i = findAttribute(node, "value_int")) {
    value = scalar(static_cast<int64_t>(i->i()), builder.getI64Type());
  } else if (const onnx::AttributeProto *is =
                 findAttribute(node, "value_ints")) {
    value = vector(std::vector<int64_t>(is->ints().begin(), is->ints().end()),
                   builder.getI64Type());
  } else {
    return ctx.error() << "needs one of the attributes value, value_float, "
                          "value_floats, value_int, value_ints";
  }
  return NodeOutputs{arith::ConstantOp::create(builder, ctx.loc, value)};
}

FailureOr<NodeOutputs> GraphImporter::importFlatten(const NodeContext &ctx,
                                                    ValueRange inputs) {
  FailureOr<Shape> shape = flattenShape(ctx, typeOf(inputs[0]).getShape(),
                                        intAttribute(ctx.node, "axis", 1));
  if (failed(shape))
    return failure();
  return NodeOutputs{reshaped(ctx.loc, inputs[0], *shape)};
}

template <typename OpTy>
FailureOr<NodeOutputs> GraphImporter::importBinary(const NodeContext &ctx,
                                                   ValueRange inputs) {
  return single(createChecked<OpTy>(ctx, inputs));
}

template <typename OpTy>
FailureOr<NodeOutputs> GraphImporter::importVariadic(const NodeContext &ctx,
                                                     ValueRange inputs) {
  // Every input of Max, Min, Sum and Mean is required: an empty name is a
  // missing one.
  for (auto [index, input] : llvm::enumerate(inputs))
    if (!input)
      return ctx.error() << "input " << index
                         << " has an empty name, but every input of "
                         << ctx.node.op_type()
                         << " is required; name a tensor or drop the input";
  Value result = inputs[0];
  for (Value next : inputs.drop_front()) {
    FailureOr<Value> combined = createChecked<OpTy>(ctx, {result, next});
    if (failed(combined))
      return failure();
    result = *combined;
  }
  return NodeOutputs{result};
}

/// Checks that `input`, input `index` of the node, is a float tensor: pp's
/// elementwise functions are float-only.
static LogicalResult checkFloat(const NodeContext &ctx, Value input,
                                int index) {
  if (isa<FloatType>(getElementTypeOrSelf(input)))
    return success();
  return ctx.error() << "input " << index << " ('" << ctx.inputName(index)
                     << "') is " << input.getType() << "; pp computes "
                     << ctx.node.op_type() << " on floating-point tensors only";
}

template <typename OpTy>
FailureOr<NodeOutputs> GraphImporter::importUnary(const NodeContext &ctx,
                                                  ValueRange inputs) {
  if (failed(checkFloat(ctx, inputs[0], 0)))
    return failure();
  return single(createChecked<OpTy>(ctx, inputs));
}

FailureOr<NodeOutputs> GraphImporter::importPow(const NodeContext &ctx,
                                                ValueRange inputs) {
  if (failed(checkFloat(ctx, inputs[0], 0)))
    return failure();
  // ONNX lets the exponent have another numeric type.
  Value exponent = inputs[1];
  RankedTensorType exponentType = typeOf(exponent);
  Type elementType = getElementTypeOrSelf(inputs[0]);
  if (exponentType.getElementType() != elementType)
    exponent = nn::CastOp::create(builder, ctx.loc,
                                  exponentType.clone(elementType), exponent);
  return single(createChecked<nn::PowOp>(ctx, {inputs[0], exponent}));
}

FailureOr<NodeOutputs> GraphImporter::importReciprocal(const NodeContext &ctx,
                                                       ValueRange inputs) {
  if (failed(checkFloat(ctx, inputs[0], 0)))
    return failure();
  Value one = scalarConstant(ctx.loc, 1.0, getElementTypeOrSelf(inputs[0]));
  return single(createChecked<nn::DivOp>(ctx, {one, inputs[0]}));
}

FailureOr<NodeOutputs> GraphImporter::importGelu(const NodeContext &ctx,
                                                 ValueRange inputs) {
  if (failed(checkFloat(ctx, inputs[0], 0)))
    return failure();
  nn::GeluOp::Properties properties;
  std::string approximate = "none";
  if (const onnx::AttributeProto *given =
          findAttribute(ctx.node, "approximate"))
    approximate = given->s();
  if (approximate == "tanh")
    properties.approximate =
        nn::GeluApproximationAttr::get(context, nn::GeluApproximation::tanh);
  else if (approximate != "none")
    return ctx.error() << "approximate is '" << approximate
                       << "'; ONNX knows 'none' and 'tanh'";
  return single(createChecked<nn::GeluOp>(ctx, inputs, properties));
}

FailureOr<NodeOutputs> GraphImporter::importWhere(const NodeContext &ctx,
                                                  ValueRange inputs) {
  if (!getElementTypeOrSelf(inputs[0]).isInteger(1))
    return ctx.error() << "condition '" << ctx.inputName(0)
                       << "' must be BOOL, found " << inputs[0].getType();
  return single(createChecked<nn::WhereOp>(ctx, inputs));
}

FailureOr<NodeOutputs> GraphImporter::importIdentity(const NodeContext &,
                                                     ValueRange inputs) {
  return NodeOutputs{inputs[0]};
}

template <typename OpTy>
FailureOr<NodeOutputs> GraphImporter::importSoftmax(const NodeContext &ctx,
                                                    ValueRange inputs) {
  // Opset 13 made Softmax and LogSoftmax single-axis ops (they used to
  // flatten from `axis`).
  int64_t axis = intAttribute(ctx.node, "axis", -1);
  if (failed(normalizeAxis(ctx, "axis", axis, typeOf(inputs[0]).getRank())) ||
      failed(checkFloat(ctx, inputs[0], 0)))
    return failure();
  typename OpTy::Properties properties;
  properties.axis = builder.getI64IntegerAttr(axis);
  return single(createChecked<OpTy>(ctx, inputs, properties));
}

template <typename OpTy>
FailureOr<NodeOutputs> GraphImporter::importReduce(const NodeContext &ctx,
                                                   ValueRange inputs) {
  RankedTensorType type = typeOf(inputs[0]);
  Shape axes;
  if (inputs.size() > 1) {
    FailureOr<Shape> given = constantInts(ctx, inputs, 1, "the axes");
    if (failed(given))
      return failure();
    axes = *given;
  } else if (const onnx::AttributeProto *given =
                 findAttribute(ctx.node, "axes")) {
    axes.assign(given->ints().begin(), given->ints().end());
  }
  if (axes.empty()) {
    if (intAttribute(ctx.node, "noop_with_empty_axes", 0) != 0)
      return NodeOutputs{inputs[0]};
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
  }
  FailureOr<Shape> normalized = normalizeAxes(ctx, axes, type.getRank());
  if (failed(normalized))
    return failure();
  typename OpTy::Properties properties;
  properties.axes = builder.getDenseI64ArrayAttr(*normalized);
  if (intAttribute(ctx.node, "keepdims", 1) != 0)
    properties.keep_dims = builder.getUnitAttr();
  return single(createChecked<OpTy>(ctx, inputs[0], properties));
}

FailureOr<NodeOutputs>
GraphImporter::importLayerNormalization(const NodeContext &ctx,
                                        ValueRange inputs) {
  RankedTensorType type = typeOf(inputs[0]);
  FailureOr<int64_t> axis = normalizeAxis(
      ctx, "axis", intAttribute(ctx.node, "axis", -1), type.getRank());
  if (failed(axis))
    return failure();
  double epsilon = shortestDecimal(floatAttribute(ctx.node, "epsilon", 1e-5f));
  nn::LayerNormOp::Properties properties;
  properties.axis = builder.getI64IntegerAttr(*axis);
  properties.epsilon = builder.getF64FloatAttr(epsilon);
  properties.operandSegmentSizes = {1, 1, inputs.size() > 2 ? 1 : 0};
  FailureOr<Value> normalized =
      createChecked<nn::LayerNormOp>(ctx, inputs, properties);
  if (failed(normalized))
    return failure();
  bool statisticsUsed =
      llvm::any_of(llvm::drop_begin(ctx.node.output()),
                   [&](const std::string &name) { return consumed(name); });
  if (!statisticsUsed)
    return NodeOutputs{*normalized};
  // The optional Mean and InvStdDev outputs, computed apart: the mean and
  // 1 / sqrt(biased variance + epsilon) over axes axis..rank-1, kept as
  // dimensions of size 1, in the precision stash_type names (the input is
  // cast to it when it differs).
  FailureOr<Type> stashType =
      elementTypeOf(static_cast<int32_t>(intAttribute(
                        ctx.node, "stash_type", onnx::TensorProto::FLOAT)),
                    ctx.describe("stash_type"), ctx.loc);
  if (failed(stashType))
    return failure();
  if (!isa<FloatType>(*stashType))
    return ctx.error() << "stash_type is " << *stashType
                       << "; it must name a floating-point type";
  Value input = inputs[0];
  if (type.getElementType() != *stashType)
    input = nn::CastOp::create(builder, ctx.loc, type.clone(*stashType), input);
  nn::ReduceMeanOp::Properties reduce;
  reduce.axes = builder.getDenseI64ArrayAttr(
      llvm::to_vector(llvm::seq<int64_t>(*axis, type.getRank())));
  reduce.keep_dims = builder.getUnitAttr();
  FailureOr<Value> mean = createChecked<nn::ReduceMeanOp>(ctx, input, reduce);
  if (failed(mean))
    return failure();
  Value deviation = nn::SubOp::create(builder, ctx.loc, input, *mean);
  Value squared = nn::MulOp::create(builder, ctx.loc, deviation, deviation);
  FailureOr<Value> variance =
      createChecked<nn::ReduceMeanOp>(ctx, squared, reduce);
  if (failed(variance))
    return failure();
  Value shifted =
      nn::AddOp::create(builder, ctx.loc, *variance,
                        scalarConstant(ctx.loc, epsilon, *stashType));
  Value invStdDev = nn::RsqrtOp::create(builder, ctx.loc, shifted);
  return NodeOutputs{*normalized, *mean, invStdDev};
}

FailureOr<NodeOutputs> GraphImporter::importSplit(const NodeContext &ctx,
                                                  ValueRange inputs) {
  RankedTensorType type = typeOf(inputs[0]);
  int64_t axis = intAttribute(ctx.node, "axis", 0);
  FailureOr<int64_t> dim = normalizeAxis(ctx, "axis", axis, type.getRank());
  if (failed(dim))
    return failure();
  int64_t outputs = ctx.node.output_size();
  if (const onnx::AttributeProto *count =
          findAttribute(ctx.node, "num_outputs")) {
    if (inputs.size() > 1)
      return ctx.error() << "takes the split sizes or num_outputs, not both";
    if (count->i() != outputs)
      return ctx.error() << "num_outputs is " << count->i() << " but it has "
                         << outputs << " outputs";
  }
  std::optional<Shape> given;
  if (inputs.size() > 1) {
    FailureOr<Shape> sizes = constantInts(ctx, inputs, 1, "the split sizes");
    if (failed(sizes))
      return failure();
    given = *sizes;
  }
  FailureOr<Shape> sizes = splitSizes(
      ctx, type.getShape(), *dim,
      given ? std::optional<ArrayRef<int64_t>>(*given) : std::nullopt, outputs);
  if (failed(sizes))
    return failure();
  nn::SplitOp::Properties properties;
  properties.axis = builder.getI64IntegerAttr(axis);
  properties.sizes = builder.getDenseI64ArrayAttr(*sizes);
  FailureOr<Operation *> split =
      createCheckedOp<nn::SplitOp>(ctx, inputs[0], properties);
  if (failed(split))
    return failure();
  return NodeOutputs((*split)->getResults());
}

FailureOr<NodeOutputs>
GraphImporter::importSplitToSequence(const NodeContext &ctx,
                                     ValueRange inputs) {
  RankedTensorType type = typeOf(inputs[0]);
  int64_t axis = intAttribute(ctx.node, "axis", 0);
  FailureOr<int64_t> dim = normalizeAxis(ctx, "axis", axis, type.getRank());
  if (failed(dim))
    return failure();
  int64_t length = type.getDimSize(*dim);
  // No split: pieces of one, without the axis unless keepdims; a scalar:
  // pieces of that size (the last one smaller); else the sizes.
  Shape sizes(length, 1);
  bool squeeze = intAttribute(ctx.node, "keepdims", 1) == 0;
  if (inputs.size() > 1) {
    squeeze = false;
    FailureOr<Shape> given = constantInts(ctx, inputs, 1, "the split sizes");
    if (failed(given))
      return failure();
    sizes = *given;
    if (typeOf(inputs[1]).getRank() == 0) {
      int64_t chunk = sizes.front();
      if (chunk <= 0)
        return ctx.error() << "the split size " << chunk
                           << " is not positive";
      sizes.clear();
      for (int64_t at = 0; at < length; at += chunk)
        sizes.push_back(std::min(chunk, length - at));
    }
  }
  FailureOr<Shape> checked = splitSizes(ctx, type.getShape(), *dim,
                                        ArrayRef<int64_t>(sizes), sizes.size());
  if (failed(checked))
    return failure();
  nn::SplitOp::Properties properties;
  properties.axis = builder.getI64IntegerAttr(*dim);
  properties.sizes = builder.getDenseI64ArrayAttr(*checked);
  FailureOr<Operation *> split =
      createCheckedOp<nn::SplitOp>(ctx, inputs[0], properties);
  if (failed(split))
    return failure();
  SmallVector<Value> &pieces = sequences[ctx.node.output(0)];
  for (Value piece : (*split)->getResults()) {
    Shape shape(typeOf(piece).getShape());
    if (squeeze)
      shape.erase(shape.begin() + *dim);
    pieces.push_back(reshaped(ctx.loc, piece, shape));
  }
  return NodeOutputs{};
}

FailureOr<NodeOutputs> GraphImporter::importSequenceAt(const NodeContext &ctx,
                                                       ValueRange inputs) {
  const SmallVector<Value> &pieces = sequences[ctx.inputName(0)];
  FailureOr<Shape> position = constantInts(ctx, inputs, 1, "the position");
  if (failed(position))
    return failure();
  int64_t count = pieces.size();
  if (position->size() != 1 || position->front() < -count ||
      position->front() >= count)
    return ctx.error() << "the position must be one index into the sequence "
                          "of "
                       << count << " tensors";
  int64_t at = position->front();
  return NodeOutputs{pieces[at < 0 ? at + count : at]};
}

FailureOr<NodeOutputs> GraphImporter::importConcat(const NodeContext &ctx,
                                                   ValueRange inputs) {
  FailureOr<int64_t> axis =
      normalizeAxis(ctx, "axis", intAttribute(ctx.node, "axis", 0),
                    typeOf(inputs[0]).getRank());
  if (failed(axis))
    return failure();
  if (inputs.size() == 1)
    return NodeOutputs{inputs[0]};
  nn::ConcatOp::Properties properties;
  properties.axis = builder.getI64IntegerAttr(*axis);
  return single(createChecked<nn::ConcatOp>(ctx, inputs, properties));
}

FailureOr<NodeOutputs> GraphImporter::importTranspose(const NodeContext &ctx,
                                                      ValueRange inputs) {
  FailureOr<Shape> perm =
      transposePermutation(ctx, typeOf(inputs[0]).getRank());
  if (failed(perm))
    return failure();
  nn::TransposeOp::Properties properties;
  properties.permutation = builder.getDenseI64ArrayAttr(*perm);
  return single(createChecked<nn::TransposeOp>(ctx, inputs, properties));
}

FailureOr<NodeOutputs> GraphImporter::importReshape(const NodeContext &ctx,
                                                    ValueRange inputs) {
  FailureOr<Shape> requested = constantInts(ctx, inputs, 1, "the shape");
  if (failed(requested))
    return failure();
  FailureOr<Shape> shape =
      reshapeShape(ctx, typeOf(inputs[0]).getShape(), *requested,
                   intAttribute(ctx.node, "allowzero", 0) != 0);
  if (failed(shape))
    return failure();
  return NodeOutputs{reshaped(ctx.loc, inputs[0], *shape)};
}

FailureOr<NodeOutputs> GraphImporter::importUnsqueeze(const NodeContext &ctx,
                                                      ValueRange inputs) {
  FailureOr<Shape> axes = constantInts(ctx, inputs, 1, "the axes");
  if (failed(axes))
    return failure();
  FailureOr<Shape> shape =
      unsqueezeShape(ctx, typeOf(inputs[0]).getShape(), *axes);
  if (failed(shape))
    return failure();
  return NodeOutputs{reshaped(ctx.loc, inputs[0], *shape)};
}

FailureOr<NodeOutputs> GraphImporter::importSqueeze(const NodeContext &ctx,
                                                    ValueRange inputs) {
  std::optional<Shape> axes;
  if (inputs.size() > 1) {
    FailureOr<Shape> given = constantInts(ctx, inputs, 1, "the axes");
    if (failed(given))
      return failure();
    axes = *given;
  }
  FailureOr<Shape> shape = squeezeShape(
      ctx, typeOf(inputs[0]).getShape(),
      axes ? std::optional<ArrayRef<int64_t>>(*axes) : std::nullopt);
  if (failed(shape))
    return failure();
  return NodeOutputs{reshaped(ctx.loc, inputs[0], *shape)};
}

FailureOr<NodeOutputs> GraphImporter::importSlice(const NodeContext &ctx,
                                                  ValueRange inputs) {
  static constexpr const char *kWhat[] = {"", "the starts", "the ends",
                                          "the axes", "the steps"};
  SmallVector<std::optional<Shape>, 5> given(5);
  for (int i = 1, e = inputs.size(); i < e; ++i) {
    if (!inputs[i])
      continue; // An optional input left out in the middle.
    FailureOr<Shape> ints = constantInts(ctx, inputs, i, kWhat[i]);
    if (failed(ints))
      return failure();
    given[i] = *ints;
  }
  auto optional = [&](int i) -> std::optional<ArrayRef<int64_t>> {
    if (given[i])
      return ArrayRef<int64_t>(*given[i]);
    return std::nullopt;
  };
  FailureOr<SliceBounds> bounds =
      sliceBounds(ctx, typeOf(inputs[0]).getShape(), *given[1], *given[2],
                  optional(3), optional(4));
  if (failed(bounds))
    return failure();
  nn::SliceOp::Properties properties;
  properties.starts = builder.getDenseI64ArrayAttr(bounds->starts);
  properties.limits = builder.getDenseI64ArrayAttr(bounds->limits);
  properties.strides = builder.getDenseI64ArrayAttr(bounds->strides);
  return single(createChecked<nn::SliceOp>(ctx, inputs[0], properties));
}

FailureOr<NodeOutputs> GraphImporter::importExpand(const NodeContext &ctx,
                                                   ValueRange inputs) {
  FailureOr<Shape> requested = constantInts(ctx, inputs, 1, "the shape");
  if (failed(requested))
    return failure();
  RankedTensorType type = typeOf(inputs[0]);
  FailureOr<Shape> shape = expandShape(ctx, type.getShape(), *requested);
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) == type.getShape())
    return NodeOutputs{inputs[0]};
  nn::BroadcastToOp::Properties properties;
  properties.shape = builder.getDenseI64ArrayAttr(*shape);
  return single(createChecked<nn::BroadcastToOp>(ctx, inputs[0], properties));
}

FailureOr<NodeOutputs> GraphImporter::importTrilu(const NodeContext &ctx,
                                                  ValueRange inputs) {
  int64_t diagonal = 0;
  if (inputs.size() > 1) {
    FailureOr<Shape> k = constantInts(ctx, inputs, 1, "k");
    if (failed(k))
      return failure();
    if (k->size() != 1)
      return ctx.error() << "k must hold one value, found " << k->size();
    diagonal = k->front();
  }
  nn::TriluOp::Properties properties;
  properties.diagonal = builder.getI64IntegerAttr(diagonal);
  if (intAttribute(ctx.node, "upper", 1) != 0)
    properties.upper = builder.getUnitAttr();
  return single(createChecked<nn::TriluOp>(ctx, inputs[0], properties));
}

FailureOr<NodeOutputs> GraphImporter::importDropout(const NodeContext &ctx,
                                                    ValueRange inputs) {
  // Opset 12 and later: the ratio and training_mode are inputs; without
  // training_mode (or with it false), Dropout is the identity.
  auto scalar = [&](int index, StringRef what) -> FailureOr<double> {
    DenseElementsAttr value;
    if (!matchPattern(inputs[index], m_Constant(&value)))
      return notConstant(ctx, index, what);
    if (value.getNumElements() != 1)
      return ctx.error() << what << " must be a scalar";
    if (value.getElementType().isF32())
      return shortestDecimal(*value.getValues<float>().begin());
    if (isa<FloatType>(value.getElementType()))
      return (*value.getValues<APFloat>().begin()).convertToDouble();
    return static_cast<double>(
        (*value.getValues<APInt>().begin()).getZExtValue());
  };
  bool training = false;
  if (inputs.size() > 2 && inputs[2]) {
    FailureOr<double> mode = scalar(2, "training_mode");
    if (failed(mode))
      return failure();
    training = *mode != 0;
  }
  double ratio = 0.5;
  if (inputs.size() > 1 && inputs[1]) {
    FailureOr<double> given = scalar(1, "the ratio");
    if (failed(given))
      return failure();
    ratio = *given;
  }
  if (!training || ratio == 0.0) {
    // The identity keeps every element: its mask is all true.
    NodeOutputs outputs{inputs[0]};
    if (ctx.node.output_size() > 1)
      outputs.push_back(arith::ConstantOp::create(
          builder, ctx.loc,
          DenseElementsAttr::get(typeOf(inputs[0]).clone(builder.getI1Type()),
                                 true)));
    return outputs;
  }
  if (ctx.node.output_size() > 1) {
    std::string reason;
    llvm::raw_string_ostream(reason)
        << "pp does not compute Dropout's mask output in training mode "
           "(training_mode true, ratio "
        << llvm::format("%g", ratio)
        << "): nn.dropout draws its mask inside the op; only the mask of "
           "a Dropout that is the identity (training_mode false or ratio 0) "
           "is available";
    unavailable[ctx.node.output(1)] = reason;
  }
  nn::DropoutOp::Properties properties;
  properties.ratio = builder.getF64FloatAttr(ratio);
  properties.key =
      builder.getI64IntegerAttr(static_cast<int64_t>(nn::dropoutKey(ctx.name)));
  return single(createChecked<nn::DropoutOp>(ctx, inputs[0], properties));
}

Value GraphImporter::reshaped(Location loc, Value input,
                              ArrayRef<int64_t> shape) {
  if (typeOf(input).getShape() == shape)
    return input;
  return nn::ReshapeOp::create(builder, loc, input, shape);
}

template <typename OpTy>
FailureOr<Operation *>
GraphImporter::createCheckedOp(const NodeContext &ctx, ValueRange operands,
                               typename OpTy::Properties properties) {
  SmallVector<Type> types;
  std::string message;
  LogicalResult inferred = [&] {
    ScopedDiagnosticHandler capture(context, [&](Diagnostic &diagnostic) {
      message = diagnostic.str();
      return success();
    });
    return OpTy::inferReturnTypes(context, ctx.loc, operands, nullptr,
                                  OpaqueProperties(&properties), {}, types);
  }();
  if (failed(inferred))
    return ctx.error() << message;
  OperationState state(ctx.loc, OpTy::getOperationName());
  state.addOperands(operands);
  state.addTypes(types);
  state.useProperties(properties);
  return builder.create(state);
}

template <typename OpTy>
FailureOr<Value>
GraphImporter::createChecked(const NodeContext &ctx, ValueRange operands,
                             typename OpTy::Properties properties) {
  FailureOr<Operation *> op =
      createCheckedOp<OpTy>(ctx, operands, std::move(properties));
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

} // namespace pp::onnx_frontend
