//===- OnnxImporter.cpp - ONNX models into the nn dialect -----------------===//

#include "frontends/onnx/OnnxImporter.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/checker.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>

using namespace mlir;

namespace pp::onnx_frontend {
namespace {

constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 17;

/// The version of the default ONNX opset the model imports, if pp imports
/// it (13 to 17).
FailureOr<int64_t> readOpset(const onnx::ModelProto &model, Location loc) {
  int64_t opset = 0;
  for (const onnx::OperatorSetIdProto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  if (opset == 0)
    return emitError(loc) << "the model imports no version of the default "
                             "ONNX opset; re-export it with opset 13 to 17";
  if (opset < kMinOpset || opset > kMaxOpset)
    return emitError(loc)
           << "the model uses ONNX opset " << opset << "; pp imports opsets "
           << kMinOpset << " to " << kMaxOpset
           << " (re-export it, e.g. torch.onnx.export(..., opset_version=17))";
  return opset;
}

/// Turns one ONNX graph into `func.func @main`.
class GraphImporter {
public:
  GraphImporter(MLIRContext *context, StringRef path, int64_t opset,
                const ImportOptions &options)
      : context(context), builder(context),
        fileLoc(FileLineColLoc::get(context, path, 0, 0)), options(options),
        opset(opset) {}

  OwningOpRef<ModuleOp> import(const onnx::ModelProto &model);

  /// How one op type imports: its input count range and the member that
  /// builds its (single) result from the looked-up inputs.
  struct NodeRule {
    FailureOr<Value> (GraphImporter::*import)(const onnx::NodeProto &, Location,
                                              ValueRange);
    int minInputs;
    int maxInputs;
  };
  /// The rule of each supported op type.
  static const std::map<std::string, NodeRule, std::less<>> &nodeRules();

private:
  FailureOr<RankedTensorType> convertType(const onnx::TypeProto &type,
                                          StringRef what);
  FailureOr<Type> convertElementType(int32_t dataType, StringRef what);
  FailureOr<DenseElementsAttr> convertTensor(const onnx::TensorProto &tensor,
                                             Location loc);
  LogicalResult importNode(const onnx::NodeProto &node, StringRef nodeName);
  FailureOr<Value> lookup(StringRef name, Location loc);
  /// The node's inputs, after checking their count against `rule`.
  FailureOr<SmallVector<Value>>
  lookupInputs(const onnx::NodeProto &node, Location loc, const NodeRule &rule);

  // Op importers.
  FailureOr<Value> importGemm(const onnx::NodeProto &node, Location loc,
                              ValueRange inputs);
  FailureOr<Value> importMatMul(const onnx::NodeProto &node, Location loc,
                                ValueRange inputs);
  FailureOr<Value> importConstant(const onnx::NodeProto &node, Location loc,
                                  ValueRange inputs);
  FailureOr<Value> importFlatten(const onnx::NodeProto &node, Location loc,
                                 ValueRange inputs);
  template <typename OpTy>
  FailureOr<Value> importElementwise(const onnx::NodeProto &node, Location loc,
                                     ValueRange inputs);
  FailureOr<Value> importIdentity(const onnx::NodeProto &node, Location loc,
                                  ValueRange inputs);

  /// Creates an OpTy after checking that its result types infer (the
  /// inference explains a failure), so that bad models never abort.
  template <typename OpTy>
  FailureOr<Value> createChecked(Location loc, ValueRange operands,
                                 typename OpTy::Properties properties = {});

  Value scalarConstant(Location loc, float value);

  MLIRContext *context;
  OpBuilder builder;
  Location fileLoc;
  const ImportOptions &options;
  int64_t opset;
  llvm::StringMap<Value> values;
  StringAttr currentNode;
};

const std::map<std::string, GraphImporter::NodeRule, std::less<>> &
GraphImporter::nodeRules() {
  using G = GraphImporter;
  static const std::map<std::string, NodeRule, std::less<>> rules = {
      {"Add", {&G::importElementwise<nn::AddOp>, 2, 2}},
      {"Constant", {&G::importConstant, 0, 0}},
      {"Flatten", {&G::importFlatten, 1, 1}},
      {"Gemm", {&G::importGemm, 2, 3}},
      {"Identity", {&G::importIdentity, 1, 1}},
      {"MatMul", {&G::importMatMul, 2, 2}},
      {"Mul", {&G::importElementwise<nn::MulOp>, 2, 2}},
      {"Relu", {&G::importElementwise<nn::ReluOp>, 1, 1}},
      {"Sigmoid", {&G::importElementwise<nn::SigmoidOp>, 1, 1}},
      {"Sub", {&G::importElementwise<nn::SubOp>, 2, 2}},
      {"Tanh", {&G::importElementwise<nn::TanhOp>, 1, 1}},
  };
  return rules;
}

FailureOr<Type> GraphImporter::convertElementType(int32_t dataType,
                                                  StringRef what) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return Type(builder.getF32Type());
  case onnx::TensorProto::INT64:
    return Type(builder.getI64Type());
  default:
    return emitError(fileLoc)
           << what << " has ONNX element type "
           << onnx::TensorProto::DataType_Name(
                  static_cast<onnx::TensorProto::DataType>(dataType))
           << "; pp supports FLOAT and INT64";
  }
}

FailureOr<RankedTensorType>
GraphImporter::convertType(const onnx::TypeProto &type, StringRef what) {
  if (!type.has_tensor_type())
    return emitError(fileLoc) << what << " is not a tensor";
  const onnx::TypeProto::Tensor &tensor = type.tensor_type();
  FailureOr<Type> elementType = convertElementType(tensor.elem_type(), what);
  if (failed(elementType))
    return failure();
  if (!tensor.has_shape())
    return emitError(fileLoc) << what
                              << " has no shape; pp needs static "
                                 "shapes (run ONNX shape inference)";
  SmallVector<int64_t> shape;
  for (const auto &[index, dim] : llvm::enumerate(tensor.shape().dim())) {
    if (dim.has_dim_value() && dim.dim_value() > 0) {
      shape.push_back(dim.dim_value());
      continue;
    }
    if (options.batchSize > 0) {
      shape.push_back(options.batchSize);
      continue;
    }
    std::string symbol =
        dim.has_dim_param() ? "'" + dim.dim_param() + "'" : "unknown";
    return emitError(fileLoc)
           << what << " has a symbolic dimension " << index << " (" << symbol
           << "); pp compiles static shapes: give its size with "
              "--batch-size=B (pp-opt) or --microbatch-size=B (pp-run)";
  }
  return RankedTensorType::get(shape, *elementType);
}

/// The `count` values of `tensor`, from its raw bytes or its typed `field`;
/// nullopt when it holds another number of values.
template <typename T, typename Field>
static std::optional<std::vector<T>>
readValues(const onnx::TensorProto &tensor, const Field &field, int64_t count) {
  std::vector<T> data;
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != static_cast<size_t>(count) * sizeof(T))
      return std::nullopt;
    data.resize(count);
    std::memcpy(data.data(), raw.data(), raw.size());
    return data;
  }
  if (field.size() != count)
    return std::nullopt;
  data.assign(field.begin(), field.end());
  return data;
}

FailureOr<DenseElementsAttr>
GraphImporter::convertTensor(const onnx::TensorProto &tensor, Location loc) {
  std::string what = "tensor '" + tensor.name() + "'";
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError(loc) << what
                          << " keeps its data in an external file; save the "
                             "model with the weights inside it";
  FailureOr<Type> elementType = convertElementType(tensor.data_type(), what);
  if (failed(elementType))
    return failure();
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  auto type = RankedTensorType::get(shape, *elementType);
  int64_t count = type.getNumElements();
  auto damaged = [&]() {
    return emitError(loc) << what << " does not hold the " << count
                          << " values its shape needs; the model file is "
                             "damaged";
  };
  if (elementType->isF32()) {
    std::optional<std::vector<float>> data =
        readValues<float>(tensor, tensor.float_data(), count);
    if (!data)
      return damaged();
    return DenseElementsAttr::get(type, ArrayRef<float>(*data));
  }
  std::optional<std::vector<int64_t>> data =
      readValues<int64_t>(tensor, tensor.int64_data(), count);
  if (!data)
    return damaged();
  return DenseElementsAttr::get(type, ArrayRef<int64_t>(*data));
}

FailureOr<Value> GraphImporter::lookup(StringRef name, Location loc) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  return emitError(loc) << "input '" << name
                        << "' is neither a graph input, an initializer nor "
                           "the output of an earlier node";
}

FailureOr<SmallVector<Value>>
GraphImporter::lookupInputs(const onnx::NodeProto &node, Location loc,
                            const NodeRule &rule) {
  int count = node.input_size();
  while (count > 0 && node.input(count - 1).empty())
    --count; // Trailing optional inputs may be given as "".
  if (count < rule.minInputs || count > rule.maxInputs ||
      node.output_size() != 1) {
    InFlightDiagnostic diag = emitError(loc)
                              << node.op_type() << " takes " << rule.minInputs;
    if (rule.maxInputs != rule.minInputs)
      diag << " to " << rule.maxInputs;
    return diag << " inputs and one output, found " << count << " and "
                << node.output_size();
  }
  SmallVector<Value> inputs;
  for (int i = 0; i < count; ++i) {
    if (node.input(i).empty())
      return emitError(loc)
             << node.op_type() << " input " << i << " is missing";
    FailureOr<Value> input = lookup(node.input(i), loc);
    if (failed(input))
      return failure();
    inputs.push_back(*input);
  }
  return inputs;
}

Value GraphImporter::scalarConstant(Location loc, float value) {
  auto type = RankedTensorType::get({}, builder.getF32Type());
  auto constant = arith::ConstantOp::create(
      builder, loc, DenseElementsAttr::get(type, ArrayRef<float>(value)));
  constant->setAttr(kNodeAttrName, currentNode);
  return constant;
}

static const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                                 StringRef name) {
  for (const onnx::AttributeProto &attribute : node.attribute())
    if (attribute.name() == name)
      return &attribute;
  return nullptr;
}

static float floatAttribute(const onnx::NodeProto &node, StringRef name,
                            float fallback) {
  const onnx::AttributeProto *attribute = findAttribute(node, name);
  return attribute ? attribute->f() : fallback;
}

static int64_t intAttribute(const onnx::NodeProto &node, StringRef name,
                            int64_t fallback) {
  const onnx::AttributeProto *attribute = findAttribute(node, name);
  return attribute ? attribute->i() : fallback;
}

template <typename OpTy>
FailureOr<Value>
GraphImporter::createChecked(Location loc, ValueRange operands,
                             typename OpTy::Properties properties) {
  SmallVector<Type> types;
  if (failed(OpTy::inferReturnTypes(context, loc, operands, nullptr,
                                    OpaqueProperties(&properties), {}, types)))
    return failure();
  OperationState state(loc, OpTy::getOperationName());
  state.addOperands(operands);
  state.addTypes(types);
  state.useProperties(properties);
  return builder.create(state)->getResult(0);
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

FailureOr<Value> GraphImporter::importGemm(const onnx::NodeProto &node,
                                           Location loc, ValueRange inputs) {
  for (Value operand : inputs.take_front(2))
    if (cast<RankedTensorType>(operand.getType()).getRank() != 2)
      return emitError(loc)
             << "Gemm operands must have rank 2, found " << operand.getType();
  FailureOr<Value> result = createChecked<nn::MatmulOp>(
      loc, inputs.take_front(2),
      matmulProperties(builder, intAttribute(node, "transA", 0) != 0,
                       intAttribute(node, "transB", 0) != 0));
  if (failed(result))
    return failure();
  float alpha = floatAttribute(node, "alpha", 1.0f);
  if (alpha != 1.0f)
    result = Value(
        nn::MulOp::create(builder, loc, *result, scalarConstant(loc, alpha)));
  if (inputs.size() < 3)
    return result;
  Value bias = inputs[2];
  float beta = floatAttribute(node, "beta", 1.0f);
  if (beta != 1.0f)
    bias = nn::MulOp::create(builder, loc, bias, scalarConstant(loc, beta));
  return createChecked<nn::AddOp>(loc, {*result, bias});
}

FailureOr<Value> GraphImporter::importMatMul(const onnx::NodeProto &node,
                                             Location loc, ValueRange inputs) {
  for (Value operand : inputs)
    if (cast<RankedTensorType>(operand.getType()).getRank() < 2)
      return emitError(loc)
             << "MatMul with a rank-1 operand (" << operand.getType()
             << ") is not supported yet; reshape it to rank 2";
  return createChecked<nn::MatmulOp>(loc, inputs,
                                     matmulProperties(builder, false, false));
}

FailureOr<Value> GraphImporter::importConstant(const onnx::NodeProto &node,
                                               Location loc, ValueRange) {
  DenseElementsAttr value;
  if (const onnx::AttributeProto *tensor = findAttribute(node, "value")) {
    FailureOr<DenseElementsAttr> converted = convertTensor(tensor->t(), loc);
    if (failed(converted))
      return failure();
    value = *converted;
  } else if (const onnx::AttributeProto *f =
                 findAttribute(node, "value_float")) {
    value =
        DenseElementsAttr::get(RankedTensorType::get({}, builder.getF32Type()),
                               ArrayRef<float>(f->f()));
  } else if (const onnx::AttributeProto *fs =
                 findAttribute(node, "value_floats")) {
    std::vector<float> data(fs->floats().begin(), fs->floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)data.size()}, builder.getF32Type()),
        ArrayRef<float>(data));
  } else if (const onnx::AttributeProto *i = findAttribute(node, "value_int")) {
    value =
        DenseElementsAttr::get(RankedTensorType::get({}, builder.getI64Type()),
                               ArrayRef<int64_t>(static_cast<int64_t>(i->i())));
  } else if (const onnx::AttributeProto *is =
                 findAttribute(node, "value_ints")) {
    std::vector<int64_t> data(is->ints().begin(), is->ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)data.size()}, builder.getI64Type()),
        ArrayRef<int64_t>(data));
  } else {
    return emitError(loc) << "Constant needs one of the attributes value, "
                             "value_float, value_floats, value_int, value_ints";
  }
  return Value(arith::ConstantOp::create(builder, loc, value));
}

FailureOr<Value> GraphImporter::importFlatten(const onnx::NodeProto &node,
                                              Location loc, ValueRange inputs) {
  auto type = cast<RankedTensorType>(inputs[0].getType());
  int64_t rank = type.getRank();
  int64_t axis = intAttribute(node, "axis", 1);
  if (axis < -rank || axis > rank)
    return emitError(loc) << "Flatten axis " << axis << " is out of range for "
                          << type;
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= type.getDimSize(d);
  return Value(nn::ReshapeOp::create(builder, loc, inputs[0],
                                     ArrayRef<int64_t>{outer, inner}));
}

template <typename OpTy>
FailureOr<Value> GraphImporter::importElementwise(const onnx::NodeProto &,
                                                  Location loc,
                                                  ValueRange inputs) {
  return createChecked<OpTy>(loc, inputs);
}

FailureOr<Value> GraphImporter::importIdentity(const onnx::NodeProto &,
                                               Location, ValueRange inputs) {
  return inputs[0];
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        StringRef nodeName) {
  Location loc = NameLoc::get(builder.getStringAttr(nodeName), fileLoc);
  bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
  const auto &rules = nodeRules();
  auto rule = rules.find(node.op_type());
  if (!defaultDomain || rule == rules.end()) {
    InFlightDiagnostic diag = emitError(loc) << "unsupported ONNX op '";
    if (!defaultDomain)
      diag << node.domain() << ".";
    return diag << node.op_type() << "' (node '" << nodeName << "', opset "
                << opset << "); supported ops: " << supportedOnnxOps();
  }
  currentNode = builder.getStringAttr(nodeName);
  Block *block = builder.getInsertionBlock();
  auto firstNew = std::prev(block->end());
  bool wasEmpty = block->empty();
  FailureOr<SmallVector<Value>> inputs = lookupInputs(node, loc, rule->second);
  if (failed(inputs))
    return failure();
  FailureOr<Value> result = (this->*rule->second.import)(node, loc, *inputs);
  if (failed(result))
    return failure();
  // Tag every op the node produced with its name.
  for (Operation &op : llvm::make_range(
           wasEmpty ? block->begin() : std::next(firstNew), block->end()))
    op.setAttr(kNodeAttrName, currentNode);
  values[node.output(0)] = *result;
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::import(const onnx::ModelProto &model) {
  if (!model.has_graph())
    return emitError(fileLoc) << "the model has no graph", nullptr;
  const onnx::GraphProto &graph = model.graph();

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());

  // Arguments: graph inputs (minus initializers listed as inputs, as old
  // exporters do), then float initializers as parameters.
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &init : graph.initializer())
    initializerNames.insert(init.name());
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    FailureOr<RankedTensorType> type =
        convertType(input.type(), "graph input '" + input.name() + "'");
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argNames.push_back(input.name());
    argAttrs.push_back(getNameAndRoleAttrs(context, input.name(), kRoleInput));
  }
  SmallVector<std::pair<std::string, DenseElementsAttr>> constants;
  for (const onnx::TensorProto &init : graph.initializer()) {
    FailureOr<DenseElementsAttr> value = convertTensor(init, fileLoc);
    if (failed(value))
      return nullptr;
    if (!value->getElementType().isF32()) {
      constants.emplace_back(init.name(), *value);
      continue;
    }
    auto type = cast<RankedTensorType>(value->getType());
    auto floats = llvm::to_vector(value->getValues<float>());
    auto blob = HeapAsmResourceBlob::allocateAndCopyInferAlign<float>(floats);
    auto initialValue =
        DenseResourceElementsAttr::get(type, init.name(), std::move(blob));
    argTypes.push_back(type);
    argNames.push_back(init.name());
    argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(kNameAttrName,
                              builder.getStringAttr(init.name())),
         builder.getNamedAttr(kRoleAttrName,
                              builder.getStringAttr(kRoleParameter)),
         builder.getNamedAttr(kInitAttrName, initialValue)}));
  }

  SmallVector<Type> resultTypes;
  auto function = func::FuncOp::create(builder, fileLoc, "main",
                                       builder.getFunctionType(argTypes, {}));
  function.setAllArgAttrs(argAttrs);
  function->setAttr("pp.onnx_opset", builder.getI64IntegerAttr(opset));
  Block *body = function.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  for (auto [name, arg] : llvm::zip(argNames, body->getArguments()))
    values[name] = arg;
  for (auto &[name, value] : constants) {
    auto constant = arith::ConstantOp::create(builder, fileLoc, value);
    constant->setAttr(kNodeAttrName, builder.getStringAttr(name));
    values[name] = constant;
  }

  // Nodes in graph order (ONNX requires a topological order). Empty or
  // repeated node names get a unique one so that split points can name them.
  llvm::StringSet<> usedNames;
  for (const auto &[index, node] : llvm::enumerate(graph.node())) {
    std::string name = node.name();
    if (name.empty())
      name = node.op_type() + "_" + std::to_string(index);
    for (int suffix = 1; usedNames.contains(name); ++suffix)
      name = (node.name().empty() ? node.op_type() : node.name()) + "_" +
             std::to_string(index) + "_" + std::to_string(suffix);
    usedNames.insert(name);
    if (failed(importNode(node, name)))
      return nullptr;
  }

  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    auto it = values.find(output.name());
    if (it == values.end())
      return emitError(fileLoc) << "graph output '" << output.name()
                                << "' is produced by no node",
             nullptr;
    results.push_back(it->second);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        kNameAttrName, builder.getStringAttr(output.name()))));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  function.setType(
      builder.getFunctionType(argTypes, TypeRange(ValueRange(results))));
  function.setAllResultAttrs(resultAttrs);
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

bool isOnnxModelPath(StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtxt");
}

std::string supportedOnnxOps() {
  std::string list;
  for (const auto &entry : GraphImporter::nodeRules()) {
    if (!list.empty())
      list += ", ";
    list += entry.first;
  }
  return list;
}

OwningOpRef<ModuleOp> importOnnxModel(StringRef contents, StringRef path,
                                      MLIRContext *context,
                                      const ImportOptions &options) {
  context->loadDialect<nn::NNDialect, PPDialect, arith::ArithDialect,
                       func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  onnx::ModelProto model;
  if (path.ends_with(".onnxtxt")) {
    std::string text = contents.str();
    onnx::Status status = onnx::OnnxParser::Parse(model, text.c_str());
    if (!status.IsOK())
      return emitError(fileLoc) << "cannot parse the ONNX text syntax: "
                                << status.ErrorMessage(),
             nullptr;
  } else if (contents.empty() ||
             !model.ParseFromArray(contents.data(),
                                   static_cast<int>(contents.size()))) {
    return emitError(fileLoc)
               << "not a readable ONNX model: the file is empty, truncated or "
                  "not an ONNX protobuf (ModelProto)",
           nullptr;
  }
  FailureOr<int64_t> opset = readOpset(model, fileLoc);
  if (failed(opset))
    return nullptr;
  // Newer exporters stamp newer IR versions (9, 10) on models that use
  // nothing beyond this checker's IR: the opset decides whether pp knows
  // the ops, so check the graph at the checker's IR version.
  if (model.ir_version() > onnx::IR_VERSION)
    model.set_ir_version(onnx::IR_VERSION);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &error) {
    return emitError(fileLoc)
               << "the ONNX checker rejects the model: " << error.what(),
           nullptr;
  }
  GraphImporter importer(context, path, *opset, options);
  return importer.import(model);
}

} // namespace pp::onnx_frontend
