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
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <unistd.h>
#include <map>
#include <optional>
#include <set>

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

/// The MLIR element type of an ONNX tensor element type, or null when pp
/// does not import it (kSupportedElementTypes lists those it does).
Type convertElementType(int32_t dataType, Builder &builder) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return builder.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return builder.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return builder.getBF16Type();
  case onnx::TensorProto::DOUBLE:
    return builder.getF64Type();
  case onnx::TensorProto::INT64:
    return builder.getI64Type();
  case onnx::TensorProto::INT32:
    return builder.getI32Type();
  case onnx::TensorProto::BOOL:
    return builder.getI1Type();
  default:
    return nullptr;
  }
}
constexpr llvm::StringLiteral kSupportedElementTypes =
    "FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT64, INT32 and BOOL";

/// "FLOAT16" for ONNX's TensorProto::FLOAT16.
std::string onnxTypeName(int32_t dataType) {
  if (!onnx::TensorProto::DataType_IsValid(dataType))
    return "unknown (" + std::to_string(dataType) + ")";
  return onnx::TensorProto::DataType_Name(
      static_cast<onnx::TensorProto::DataType>(dataType));
}

/// The values of an ONNX tensor: its type and its elements as the
/// little-endian bytes of that type (one byte per bool).
struct TensorValues {
  RankedTensorType type;
  std::vector<char> bytes;
};

/// `values` as an attribute.
DenseElementsAttr toElementsAttr(const TensorValues &values) {
  if (!values.type.getElementType().isInteger(1))
    return DenseElementsAttr::getFromRawBuffer(values.type, values.bytes);
  SmallVector<bool> bools(values.bytes.begin(), values.bytes.end());
  return DenseElementsAttr::get(values.type, ArrayRef<bool>(bools));
}

/// Turns one ONNX graph into `func.func @main`.
class GraphImporter {
public:
  GraphImporter(MLIRContext *context, StringRef path, int64_t opset,
                const ImportOptions &options)
      : context(context), builder(context),
        fileLoc(FileLineColLoc::get(context, path, 0, 0)), options(options),
        opset(opset) {}

  /// Imports `model`; the raw bytes of its floating-point initializers move
  /// into the module's blobs (the model keeps none of them).
  OwningOpRef<ModuleOp> import(onnx::ModelProto &model);

  /// The values a node computes, one per ONNX output.
  using NodeOutputs = SmallVector<Value, 1>;
  /// How one op type imports: its input count range, whether it has one
  /// output or one or more, and the member that builds its outputs from the
  /// looked-up inputs.
  struct NodeRule {
    FailureOr<NodeOutputs> (GraphImporter::*import)(const onnx::NodeProto &,
                                                    Location, ValueRange);
    int minInputs;
    int maxInputs;
    bool variadicOutputs = false;
  };
  /// The rule of each supported op type.
  static const std::map<std::string, NodeRule, std::less<>> &nodeRules();

private:
  /// The element type of a tensor called `what` (for messages).
  FailureOr<Type> elementTypeOf(int32_t dataType, StringRef what, Location loc);
  /// The type of graph input `input`, each symbolic dimension sized as
  /// ImportOptions says.
  FailureOr<RankedTensorType>
  convertInputType(const onnx::ValueInfoProto &input);
  /// Checks the declared type of graph output `output` against `value`, the
  /// value pp computes for it, where the declaration gives a size: static,
  /// or named by `--dim`.
  LogicalResult checkOutputType(const onnx::ValueInfoProto &output,
                                Value value);
  /// Checks that every name of ImportOptions::dimSizes is a symbolic
  /// dimension of a graph input or output.
  LogicalResult checkDimNames(const onnx::GraphProto &graph);
  /// Refuses names of tensors and nodes that are not valid UTF-8: the
  /// package's manifest (JSON) carries them.
  LogicalResult checkUtf8Names(const onnx::GraphProto &graph);
  FailureOr<TensorValues> readTensor(const onnx::TensorProto &tensor,
                                     Location loc);
  LogicalResult importNode(const onnx::NodeProto &node, StringRef nodeName);
  FailureOr<Value> lookup(StringRef name, Location loc);
  /// The node's inputs, after checking their count against `rule`.
  FailureOr<SmallVector<Value>>
  lookupInputs(const onnx::NodeProto &node, Location loc, const NodeRule &rule);

  // Op importers.
  FailureOr<NodeOutputs> importGemm(const onnx::NodeProto &node, Location loc,
                                    ValueRange inputs);
  FailureOr<NodeOutputs> importMatMul(const onnx::NodeProto &node, Location loc,
                                      ValueRange inputs);
  FailureOr<NodeOutputs> importCast(const onnx::NodeProto &node, Location loc,
                                    ValueRange inputs);
  FailureOr<NodeOutputs> importGather(const onnx::NodeProto &node,
                                      Location loc, ValueRange inputs);
  FailureOr<NodeOutputs> importConstant(const onnx::NodeProto &node,
                                        Location loc, ValueRange inputs);
  FailureOr<NodeOutputs> importFlatten(const onnx::NodeProto &node,
                                       Location loc, ValueRange inputs);
  template <typename OpTy>
  FailureOr<NodeOutputs> importElementwise(const onnx::NodeProto &node,
                                           Location loc, ValueRange inputs);
  FailureOr<NodeOutputs> importIdentity(const onnx::NodeProto &node,
                                        Location loc, ValueRange inputs);
  FailureOr<NodeOutputs> importSoftmax(const onnx::NodeProto &node,
                                       Location loc, ValueRange inputs);
  FailureOr<NodeOutputs> importSplit(const onnx::NodeProto &node, Location loc,
                                     ValueRange inputs);

  /// Creates an OpTy after checking that its result types infer (the
  /// inference explains a failure), so that bad models never abort.
  template <typename OpTy>
  FailureOr<Operation *>
  createCheckedOp(Location loc, ValueRange operands,
                  typename OpTy::Properties properties = {});
  /// createCheckedOp for an op with one result; returns that result.
  template <typename OpTy>
  FailureOr<Value> createChecked(Location loc, ValueRange operands,
                                 typename OpTy::Properties properties = {});

  /// A rank-0 constant of `elementType` (a float type) holding `value`.
  Value scalarConstant(Location loc, double value, Type elementType);

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
      {"Cast", {&G::importCast, 1, 1}},
      {"Constant", {&G::importConstant, 0, 0}},
      {"Div", {&G::importElementwise<nn::DivOp>, 2, 2}},
      {"Exp", {&G::importElementwise<nn::ExpOp>, 1, 1}},
      {"Flatten", {&G::importFlatten, 1, 1}},
      {"Gather", {&G::importGather, 2, 2}},
      {"Gemm", {&G::importGemm, 2, 3}},
      {"Identity", {&G::importIdentity, 1, 1}},
      {"MatMul", {&G::importMatMul, 2, 2}},
      {"Mul", {&G::importElementwise<nn::MulOp>, 2, 2}},
      {"Relu", {&G::importElementwise<nn::ReluOp>, 1, 1}},
      {"Sigmoid", {&G::importElementwise<nn::SigmoidOp>, 1, 1}},
      {"Softmax", {&G::importSoftmax, 1, 1}},
      {"Split", {&G::importSplit, 1, 2, /*variadicOutputs=*/true}},
      {"Sub", {&G::importElementwise<nn::SubOp>, 2, 2}},
      {"Tanh", {&G::importElementwise<nn::TanhOp>, 1, 1}},
      {"Where", {&G::importElementwise<nn::WhereOp>, 3, 3}},
  };
  return rules;
}

FailureOr<Type> GraphImporter::elementTypeOf(int32_t dataType, StringRef what,
                                             Location loc) {
  if (Type type = convertElementType(dataType, builder))
    return type;
  return emitError(loc) << what << " has ONNX element type "
                        << onnxTypeName(dataType) << "; pp supports "
                        << kSupportedElementTypes;
}

/// The size of dimension `index` of a graph input or output as `options`
/// give it: static, named by --dim, or (`batchAtZero`) the batch size at
/// position 0. nullopt when none of these applies.
static std::optional<int64_t>
dimSize(const onnx::TensorShapeProto::Dimension &dim, int64_t index,
        const ImportOptions &options, bool batchAtZero) {
  if (dim.has_dim_value() && dim.dim_value() > 0)
    return dim.dim_value();
  if (dim.has_dim_param()) {
    auto it = options.dimSizes.find(dim.dim_param());
    if (it != options.dimSizes.end())
      return it->second;
  }
  if (batchAtZero && index == 0 && options.batchSize > 0)
    return options.batchSize;
  return std::nullopt;
}

FailureOr<RankedTensorType>
GraphImporter::convertInputType(const onnx::ValueInfoProto &input) {
  std::string what = "graph input '" + input.name() + "'";
  if (!input.type().has_tensor_type())
    return emitError(fileLoc) << what << " is not a tensor";
  const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
  FailureOr<Type> elementType =
      elementTypeOf(tensor.elem_type(), what, fileLoc);
  if (failed(elementType))
    return failure();
  if (!tensor.has_shape())
    return emitError(fileLoc) << what
                              << " has no shape; pp needs static "
                                 "shapes (run ONNX shape inference)";
  SmallVector<int64_t> shape;
  for (const auto &[index, dim] : llvm::enumerate(tensor.shape().dim())) {
    if (std::optional<int64_t> size =
            dimSize(dim, index, options, /*batchAtZero=*/true)) {
      shape.push_back(*size);
      continue;
    }
    InFlightDiagnostic diag = emitError(fileLoc)
                              << what << " dimension " << index << " is ";
    if (dim.has_dim_param())
      diag << "symbolic ('" << dim.dim_param() << "'); ";
    else
      diag << "unknown (no size, no name); ";
    if (index == 0)
      return diag << "give the batch size with --batch-size=B"
                  << (dim.has_dim_param()
                          ? " or --dim " + dim.dim_param() + "=B"
                          : std::string())
                  << " (pp-opt), or --microbatch-size=B (pp-run)";
    if (dim.has_dim_param())
      return diag << "give its size with --dim " << dim.dim_param() << "=N";
    return diag << "pp compiles static shapes: give it a size, or a name "
                   "(dim_param) to size with --dim NAME=N, in the model";
  }
  return RankedTensorType::get(shape, *elementType);
}

LogicalResult GraphImporter::checkOutputType(const onnx::ValueInfoProto &output,
                                             Value value) {
  if (!output.type().has_tensor_type())
    return success(); // ONNX lets outputs leave their type to inference.
  std::string what = "graph output '" + output.name() + "'";
  const onnx::TypeProto::Tensor &tensor = output.type().tensor_type();
  auto computed = cast<RankedTensorType>(value.getType());
  auto mismatch = [&]() {
    return emitError(fileLoc) << what << " is declared as ";
  };
  if (tensor.elem_type() != onnx::TensorProto::UNDEFINED) {
    FailureOr<Type> elementType =
        elementTypeOf(tensor.elem_type(), what, fileLoc);
    if (failed(elementType))
      return failure();
    if (*elementType != computed.getElementType())
      return mismatch() << onnxTypeName(tensor.elem_type())
                        << " but the model computes " << computed;
  }
  if (!tensor.has_shape())
    return success();
  const auto &dims = tensor.shape().dim();
  if (dims.size() != computed.getRank())
    return mismatch() << "rank " << dims.size() << " but the model computes "
                      << computed;
  // Only sizes the declaration fixes are checked: exporters name the output
  // dimensions they cannot size (a flattened batch, say) arbitrarily.
  for (const auto &[index, dim] : llvm::enumerate(dims)) {
    std::optional<int64_t> size =
        dimSize(dim, index, options, /*batchAtZero=*/false);
    if (size && *size != computed.getDimSize(index))
      return mismatch() << "having size " << *size << " in dimension " << index
                        << " but the model computes " << computed;
  }
  return success();
}

LogicalResult GraphImporter::checkUtf8Names(const onnx::GraphProto &graph) {
  auto check = [&](const std::string &name,
                   const std::string &what) -> LogicalResult {
    size_t offset = 0;
    if (llvm::json::isUTF8(name, &offset))
      return success();
    std::string escaped;
    llvm::raw_string_ostream os(escaped);
    llvm::printEscapedString(name, os);
    return emitError(fileLoc)
           << what << " '" << escaped << "' is not valid UTF-8 (at byte "
           << offset << "); pp needs UTF-8 names: rename it in the model";
  };
  for (const onnx::ValueInfoProto &input : graph.input())
    if (failed(check(input.name(), "graph input")))
      return failure();
  for (const onnx::TensorProto &init : graph.initializer())
    if (failed(check(init.name(), "initializer")))
      return failure();
  for (const onnx::ValueInfoProto &output : graph.output())
    if (failed(check(output.name(), "graph output")))
      return failure();
  for (const auto &[index, node] : llvm::enumerate(graph.node())) {
    std::string where =
        "node " + std::to_string(index) + " (" + node.op_type() + ")";
    if (failed(check(node.name(), "the name of " + where)))
      return failure();
    for (const auto &[i, name] : llvm::enumerate(node.input()))
      if (failed(check(name, "input " + std::to_string(i) + " of " + where)))
        return failure();
    for (const auto &[i, name] : llvm::enumerate(node.output()))
      if (failed(check(name, "output " + std::to_string(i) + " of " + where)))
        return failure();
  }
  return success();
}

LogicalResult GraphImporter::checkDimNames(const onnx::GraphProto &graph) {
  std::set<std::string> names;
  for (const auto *infos : {&graph.input(), &graph.output()})
    for (const onnx::ValueInfoProto &info : *infos)
      for (const auto &dim : info.type().tensor_type().shape().dim())
        if (dim.has_dim_param())
          names.insert(dim.dim_param());
  for (const auto &[name, size] : options.dimSizes) {
    if (names.count(name))
      continue;
    InFlightDiagnostic diag = emitError(fileLoc)
                              << "--dim " << name << "=" << size
                              << ": the model has no symbolic dimension '"
                              << name << "'; ";
    if (names.empty())
      return diag << "its graph inputs and outputs have none";
    return diag << "those of its graph inputs and outputs are: "
                << llvm::join(names, ", ");
  }
  return success();
}

/// The `count` values of `tensor` as the bytes of T, from its raw bytes or
/// its typed `field`; nullopt when it holds another number of values.
template <typename T, typename Field>
static std::optional<std::vector<char>>
readBytes(const onnx::TensorProto &tensor, const Field &field, int64_t count) {
  size_t size = static_cast<size_t>(count) * sizeof(T);
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != size)
      return std::nullopt;
    return std::vector<char>(raw.begin(), raw.end());
  }
  if (field.size() != count)
    return std::nullopt;
  std::vector<char> bytes(size);
  for (int64_t i = 0; i < count; ++i) {
    T value = static_cast<T>(field.Get(i));
    std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
  }
  return bytes;
}

/// The values of initializer `tensor` as a blob of `alignment`: its raw
/// bytes themselves, taken from the model without a copy, or else (typed
/// fields, or raw bytes not so aligned) `bytes`, as readTensor made them.
static AsmResourceBlob takeBytes(onnx::TensorProto &tensor,
                                 std::vector<char> bytes, size_t alignment) {
  if (tensor.has_raw_data() &&
      reinterpret_cast<uintptr_t>(tensor.raw_data().data()) % alignment == 0) {
    bytes = {};
    std::string *raw = tensor.release_raw_data();
    return AsmResourceBlob(
        ArrayRef<char>(raw->data(), raw->size()), alignment,
        [raw](void *, size_t, size_t) { delete raw; }, /*dataIsMutable=*/true);
  }
  // An empty tensor's bytes have no data pointer for memcpy to read.
  if (bytes.empty())
    return HeapAsmResourceBlob::allocate(0, alignment);
  return HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignment);
}

FailureOr<TensorValues>
GraphImporter::readTensor(const onnx::TensorProto &tensor, Location loc) {
  std::string what = "tensor '" + tensor.name() + "'";
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError(loc) << what
                          << " keeps its data in an external file; save the "
                             "model with the weights inside it";
  FailureOr<Type> elementType = elementTypeOf(tensor.data_type(), what, loc);
  if (failed(elementType))
    return failure();
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  auto type = RankedTensorType::get(shape, *elementType);
  int64_t count = type.getNumElements();
  // ONNX keeps 16-bit floats and bools in int32_data, one value each.
  std::optional<std::vector<char>> bytes;
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    bytes = readBytes<float>(tensor, tensor.float_data(), count);
    break;
  case onnx::TensorProto::DOUBLE:
    bytes = readBytes<double>(tensor, tensor.double_data(), count);
    break;
  case onnx::TensorProto::INT64:
    bytes = readBytes<int64_t>(tensor, tensor.int64_data(), count);
    break;
  case onnx::TensorProto::INT32:
    bytes = readBytes<int32_t>(tensor, tensor.int32_data(), count);
    break;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    bytes = readBytes<uint16_t>(tensor, tensor.int32_data(), count);
    break;
  case onnx::TensorProto::BOOL:
    bytes = readBytes<uint8_t>(tensor, tensor.int32_data(), count);
    break;
  }
  if (!bytes)
    return emitError(loc) << what << " does not hold the " << count
                          << " values its shape needs; the model file is "
                             "damaged";
  return TensorValues{type, std::move(*bytes)};
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
  int outputs = node.output_size();
  if (count < rule.minInputs || count > rule.maxInputs ||
      (rule.variadicOutputs ? outputs < 1 : outputs != 1)) {
    InFlightDiagnostic diag = emitError(loc)
                              << node.op_type() << " takes " << rule.minInputs;
    if (rule.maxInputs != rule.minInputs)
      diag << " to " << rule.maxInputs;
    return diag << " inputs and "
                << (rule.variadicOutputs ? "one or more outputs" : "one output")
                << ", found " << count << " and " << outputs;
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

Value GraphImporter::scalarConstant(Location loc, double value,
                                    Type elementType) {
  auto type = RankedTensorType::get({}, elementType);
  auto constant = arith::ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(type, builder.getFloatAttr(elementType, value)));
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
FailureOr<Operation *>
GraphImporter::createCheckedOp(Location loc, ValueRange operands,
                               typename OpTy::Properties properties) {
  SmallVector<Type> types;
  if (failed(OpTy::inferReturnTypes(context, loc, operands, nullptr,
                                    OpaqueProperties(&properties), {}, types)))
    return failure();
  OperationState state(loc, OpTy::getOperationName());
  state.addOperands(operands);
  state.addTypes(types);
  state.useProperties(properties);
  return builder.create(state);
}

template <typename OpTy>
FailureOr<Value>
GraphImporter::createChecked(Location loc, ValueRange operands,
                             typename OpTy::Properties properties) {
  FailureOr<Operation *> op =
      createCheckedOp<OpTy>(loc, operands, std::move(properties));
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

/// The outputs of a node with the one output `value`.
static FailureOr<GraphImporter::NodeOutputs> single(FailureOr<Value> value) {
  if (failed(value))
    return failure();
  return GraphImporter::NodeOutputs{*value};
}

/// `axis` counted from the front (ONNX lets it count from the back when
/// negative), or an error at `loc` naming `op` when `type` has no such axis.
static FailureOr<int64_t> normalizedAxis(Location loc, StringRef op,
                                         int64_t axis, RankedTensorType type) {
  int64_t rank = type.getRank();
  if (axis < -rank || axis >= rank)
    return emitError(loc) << op << " axis " << axis << " is out of range for "
                          << type << " (rank " << rank << ")";
  return axis < 0 ? axis + rank : axis;
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

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importGemm(const onnx::NodeProto &node, Location loc,
                          ValueRange inputs) {
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
  Type elementType = getElementTypeOrSelf(*result);
  float alpha = floatAttribute(node, "alpha", 1.0f);
  if (alpha != 1.0f)
    result = Value(nn::MulOp::create(builder, loc, *result,
                                     scalarConstant(loc, alpha, elementType)));
  if (inputs.size() < 3)
    return single(result);
  Value bias = inputs[2];
  float beta = floatAttribute(node, "beta", 1.0f);
  if (beta != 1.0f)
    bias = nn::MulOp::create(builder, loc, bias,
                             scalarConstant(loc, beta, elementType));
  return single(createChecked<nn::AddOp>(loc, {*result, bias}));
}

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importMatMul(const onnx::NodeProto &node, Location loc,
                            ValueRange inputs) {
  for (Value operand : inputs)
    if (cast<RankedTensorType>(operand.getType()).getRank() < 2)
      return emitError(loc)
             << "MatMul with a rank-1 operand (" << operand.getType()
             << ") is not supported yet; reshape it to rank 2";
  return single(createChecked<nn::MatmulOp>(
      loc, inputs, matmulProperties(builder, false, false)));
}

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importCast(const onnx::NodeProto &node, Location loc,
                          ValueRange inputs) {
  // The ONNX checker has made sure that `to` is there.
  int64_t to = intAttribute(node, "to", onnx::TensorProto::UNDEFINED);
  FailureOr<Type> elementType =
      elementTypeOf(static_cast<int32_t>(to), "Cast's 'to'", loc);
  if (failed(elementType))
    return failure();
  auto type = cast<RankedTensorType>(inputs[0].getType());
  if (type.getElementType() == *elementType)
    return NodeOutputs{inputs[0]}; // A cast to the same type is the identity.
  return NodeOutputs{nn::CastOp::create(builder, loc, type.clone(*elementType),
                                        inputs[0])
                         .getResult()};
}

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importGather(const onnx::NodeProto &node, Location loc,
                            ValueRange inputs) {
  int64_t axis = intAttribute(node, "axis", 0);
  if (failed(normalizedAxis(loc, "Gather", axis,
                            cast<RankedTensorType>(inputs[0].getType()))))
    return failure();
  Type indexType = getElementTypeOrSelf(inputs[1]);
  if (!indexType.isInteger(64) && !indexType.isInteger(32))
    return emitError(loc) << "Gather indices '" << node.input(1)
                          << "' must be INT64 or INT32, found "
                          << inputs[1].getType();
  nn::GatherOp::Properties properties;
  properties.axis = builder.getI64IntegerAttr(axis);
  return single(createChecked<nn::GatherOp>(loc, inputs, properties));
}

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importConstant(const onnx::NodeProto &node, Location loc,
                              ValueRange) {
  DenseElementsAttr value;
  if (const onnx::AttributeProto *tensor = findAttribute(node, "value")) {
    FailureOr<TensorValues> converted = readTensor(tensor->t(), loc);
    if (failed(converted))
      return failure();
    value = toElementsAttr(*converted);
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
  return NodeOutputs{arith::ConstantOp::create(builder, loc, value)};
}

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importFlatten(const onnx::NodeProto &node, Location loc,
                             ValueRange inputs) {
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
  return NodeOutputs{nn::ReshapeOp::create(builder, loc, inputs[0],
                                           ArrayRef<int64_t>{outer, inner})};
}

template <typename OpTy>
FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importElementwise(const onnx::NodeProto &, Location loc,
                                 ValueRange inputs) {
  return single(createChecked<OpTy>(loc, inputs));
}

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importIdentity(const onnx::NodeProto &, Location,
                              ValueRange inputs) {
  return NodeOutputs{inputs[0]};
}

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importSoftmax(const onnx::NodeProto &node, Location loc,
                             ValueRange inputs) {
  // Opset 13 made Softmax a single-axis op (it used to flatten from `axis`).
  int64_t axis = intAttribute(node, "axis", -1);
  if (failed(normalizedAxis(loc, "Softmax", axis,
                            cast<RankedTensorType>(inputs[0].getType()))))
    return failure();
  nn::SoftmaxOp::Properties properties;
  properties.axis = builder.getI64IntegerAttr(axis);
  return single(createChecked<nn::SoftmaxOp>(loc, inputs, properties));
}

FailureOr<GraphImporter::NodeOutputs>
GraphImporter::importSplit(const onnx::NodeProto &node, Location loc,
                           ValueRange inputs) {
  auto type = cast<RankedTensorType>(inputs[0].getType());
  int64_t axis = intAttribute(node, "axis", 0);
  FailureOr<int64_t> dim = normalizedAxis(loc, "Split", axis, type);
  if (failed(dim))
    return failure();
  int64_t pieces = node.output_size();
  SmallVector<int64_t> sizes;
  if (inputs.size() > 1) {
    DenseIntElementsAttr given;
    if (!matchPattern(inputs[1], m_Constant(&given)))
      return emitError(loc)
             << "Split sizes '" << node.input(1)
             << "' must be an initializer or the output of a Constant node: "
                "pp compiles static shapes";
    for (const APInt &size : given.getValues<APInt>())
      sizes.push_back(size.getSExtValue());
    if (static_cast<int64_t>(sizes.size()) != pieces)
      return emitError(loc) << "Split gives " << sizes.size() << " sizes for "
                            << pieces << " outputs";
  } else {
    int64_t size = type.getDimSize(*dim);
    if (size % pieces != 0)
      return emitError(loc)
             << "Split cannot cut dimension " << *dim << " of " << type
             << " into " << pieces
             << " equal parts; give the sizes as its second input";
    sizes.assign(pieces, size / pieces);
  }
  nn::SplitOp::Properties properties;
  properties.axis = builder.getI64IntegerAttr(axis);
  properties.sizes = builder.getDenseI64ArrayAttr(sizes);
  FailureOr<Operation *> split =
      createCheckedOp<nn::SplitOp>(loc, inputs[0], properties);
  if (failed(split))
    return failure();
  return NodeOutputs((*split)->getResults());
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
  FailureOr<NodeOutputs> outputs =
      (this->*rule->second.import)(node, loc, *inputs);
  if (failed(outputs))
    return failure();
  // Tag every op the node produced with its name.
  for (Operation &op : llvm::make_range(
           wasEmpty ? block->begin() : std::next(firstNew), block->end()))
    op.setAttr(kNodeAttrName, currentNode);
  for (auto [name, value] : llvm::zip_equal(node.output(), *outputs))
    if (!name.empty()) // An optional output the model does not use.
      values[name] = value;
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::import(onnx::ModelProto &model) {
  if (!model.has_graph())
    return emitError(fileLoc) << "the model has no graph", nullptr;
  onnx::GraphProto &graph = *model.mutable_graph();
  if (failed(checkUtf8Names(graph)) || failed(checkDimNames(graph)))
    return nullptr;

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());

  // Arguments: graph inputs (minus initializers listed as inputs, as old
  // exporters do), then floating-point initializers as parameters; the
  // other initializers become constants.
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &init : graph.initializer())
    initializerNames.insert(init.name());
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    FailureOr<RankedTensorType> type = convertInputType(input);
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argNames.push_back(input.name());
    argAttrs.push_back(getNameAndRoleAttrs(context, input.name(), kRoleInput));
  }
  SmallVector<std::pair<std::string, DenseElementsAttr>> constants;
  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    FailureOr<TensorValues> value = readTensor(init, fileLoc);
    if (failed(value))
      return nullptr;
    RankedTensorType type = value->type;
    if (!isa<FloatType>(type.getElementType())) {
      constants.emplace_back(init.name(), toElementsAttr(*value));
      continue;
    }
    AsmResourceBlob blob = takeBytes(init, std::move(value->bytes),
                                     type.getElementTypeBitWidth() / 8);
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
    if (failed(checkOutputType(output, it->second)))
      return nullptr;
    results.push_back(it->second);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        kNameAttrName, builder.getStringAttr(output.name()))));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  // Constants that no op uses, a Split's sizes say, were only read at
  // import: they are not part of the computation.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isa<arith::ConstantOp>(op) && op.use_empty())
      op.erase();
  function.setType(
      builder.getFunctionType(argTypes, TypeRange(ValueRange(results))));
  function.setAllResultAttrs(resultAttrs);
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

std::string addDimSize(StringRef option,
                       std::map<std::string, int64_t> &sizes) {
  auto [name, sizeText] = option.split('=');
  int64_t size = 0;
  if (name.empty() || !option.contains('=') || sizeText.getAsInteger(10, size))
    return ("--dim '" + option +
            "' is not NAME=SIZE with an integer SIZE (e.g. --dim seq=32)")
        .str();
  if (size <= 0)
    return ("--dim " + option + ": the size must be positive").str();
  auto [it, inserted] = sizes.emplace(name.str(), size);
  if (!inserted && it->second != size)
    return ("--dim gives '" + name + "' two sizes, " + Twine(it->second) +
            " and " + Twine(size))
        .str();
  return "";
}

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

/// Checks the parsed `model` and imports it (moving its weights into the
/// module's blobs).
static OwningOpRef<ModuleOp> importParsed(onnx::ModelProto &model,
                                          StringRef path, MLIRContext *context,
                                          const ImportOptions &options) {
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
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

/// The error of a binary model that does not parse.
static OwningOpRef<ModuleOp> unreadable(StringRef path, MLIRContext *context) {
  return emitError(FileLineColLoc::get(context, path, 0, 0))
             << "not a readable ONNX model: the file is empty, truncated or "
                "not an ONNX protobuf (ModelProto)",
         nullptr;
}

static void loadDialects(MLIRContext *context) {
  context->loadDialect<nn::NNDialect, PPDialect, arith::ArithDialect,
                       func::FuncDialect>();
}

OwningOpRef<ModuleOp> importOnnxModel(StringRef contents, StringRef path,
                                      MLIRContext *context,
                                      const ImportOptions &options) {
  loadDialects(context);
  onnx::ModelProto model;
  if (path.ends_with(".onnxtxt")) {
    std::string text = contents.str();
    std::optional<std::string> parseError;
    try {
      onnx::Status status = onnx::OnnxParser::Parse(model, text.c_str());
      if (!status.IsOK())
        parseError = status.ErrorMessage();
    } catch (const std::exception &error) {
      // The parser throws on some malformed numbers (std::stof on "{-}").
      parseError = std::string("the parser threw: ") + error.what();
    }
    if (parseError)
      return emitError(FileLineColLoc::get(context, path, 0, 0))
                 << "cannot parse the ONNX text syntax: " << *parseError,
             nullptr;
  } else if (contents.empty() ||
             !model.ParseFromArray(contents.data(),
                                   static_cast<int>(contents.size()))) {
    return unreadable(path, context);
  }
  return importParsed(model, path, context, options);
}

OwningOpRef<ModuleOp> importOnnxFile(int fd, StringRef path,
                                     MLIRContext *context,
                                     const ImportOptions &options) {
  if (path.ends_with(".onnxtxt")) {
    std::string text;
    char chunk[1 << 16];
    for (ssize_t got; (got = ::read(fd, chunk, sizeof(chunk))) > 0;)
      text.append(chunk, got);
    return importOnnxModel(text, path, context, options);
  }
  loadDialects(context);
  onnx::ModelProto model;
  google::protobuf::io::FileInputStream stream(fd);
  if (!model.ParseFromZeroCopyStream(&stream) || stream.ByteCount() == 0)
    return unreadable(path, context);
  return importParsed(model, path, context, options);
}

} // namespace pp::onnx_frontend
