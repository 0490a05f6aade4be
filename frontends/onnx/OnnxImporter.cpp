//===- OnnxImporter.cpp - ONNX models into the nn dialect -----------------===//
//
// Parsing, checking and the graph: its inputs, initializers, values and
// outputs, and the loop over its nodes, each checked (NodeChecks.cpp),
// folded when its inputs are constants (ConstantFolding.cpp) or converted
// (OnnxOps.cpp).
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/GraphImporter.h"

#include "frontends/onnx/ExternalData.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/parser.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unistd.h>

using namespace mlir;

namespace pp::onnx_frontend {

/// The version of the default ONNX opset the model imports, if pp imports
/// it (kMinOpset to kMaxOpset).
static FailureOr<int64_t> readOpset(const onnx::ModelProto &model,
                                    Location loc) {
  int64_t opset = 0;
  for (const onnx::OperatorSetIdProto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  if (opset == 0)
    return emitError(loc) << "the model imports no version of the default "
                             "ONNX opset; re-export it with opset "
                          << kMinOpset << " to " << kMaxOpset;
  if (opset < kMinOpset || opset > kMaxOpset)
    return emitError(loc)
           << "the model uses ONNX opset " << opset << "; pp imports opsets "
           << kMinOpset << " to " << kMaxOpset
           << " (re-export it, e.g. torch.onnx.export(..., opset_version=17))";
  return opset;
}

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

StringRef supportedElementTypes() {
  return "FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT64, INT32 and BOOL";
}

std::string onnxTypeName(int32_t dataType) {
  if (!onnx::TensorProto::DataType_IsValid(dataType))
    return "unknown (" + std::to_string(dataType) + ")";
  return onnx::TensorProto::DataType_Name(
      static_cast<onnx::TensorProto::DataType>(dataType));
}

DenseElementsAttr toElementsAttr(const TensorValues &values) {
  if (!values.type.getElementType().isInteger(1))
    return DenseElementsAttr::getFromRawBuffer(values.type, values.bytes());
  ArrayRef<char> bytes = values.bytes();
  SmallVector<bool> bools(bytes.begin(), bytes.end());
  return DenseElementsAttr::get(values.type, ArrayRef<bool>(bools));
}

const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                          StringRef name) {
  for (const onnx::AttributeProto &attribute : node.attribute())
    if (attribute.name() == name)
      return &attribute;
  return nullptr;
}

float floatAttribute(const onnx::NodeProto &node, StringRef name,
                     float fallback) {
  const onnx::AttributeProto *attribute = findAttribute(node, name);
  return attribute ? attribute->f() : fallback;
}

int64_t intAttribute(const onnx::NodeProto &node, StringRef name,
                     int64_t fallback) {
  const onnx::AttributeProto *attribute = findAttribute(node, name);
  return attribute ? attribute->i() : fallback;
}

std::string NodeContext::describe(StringRef what) const {
  return ("node '" + name + "' (" + node.op_type() + ", opset " + Twine(opset) +
          "): " + what)
      .str();
}

double shortestDecimal(float value) {
  // 9 significant digits always read back as the same float.
  for (int digits = 1; digits < 9; ++digits) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    double decimal = std::strtod(text, nullptr);
    if (static_cast<float>(decimal) == value)
      return decimal;
  }
  return value;
}

InFlightDiagnostic NodeContext::error() const {
  return emitError(loc) << describe("");
}

FailureOr<Type> GraphImporter::elementTypeOf(int32_t dataType, StringRef what,
                                             Location loc) {
  if (Type type = convertElementType(dataType, builder))
    return type;
  return emitError(loc) << what << " has ONNX element type "
                        << onnxTypeName(dataType) << "; pp supports "
                        << supportedElementTypes();
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
    if (dim.has_dim_value() && dim.dim_value() == 0)
      return emitError(fileLoc)
             << what << " dimension " << index
             << " has size 0; pp does not compile zero-size tensors";
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

/// Reads the `count` values of `tensor` as the bytes of T into `values`:
/// its raw bytes in place, or else its typed `field` converted; false when
/// it holds another number of values.
template <typename T, typename Field>
static bool readBytes(const onnx::TensorProto &tensor, const Field &field,
                      int64_t count, TensorValues &values) {
  size_t size = static_cast<size_t>(count) * sizeof(T);
  if (tensor.has_raw_data()) {
    values.raw = &tensor.raw_data();
    return values.raw->size() == size;
  }
  if (field.size() != count)
    return false;
  values.converted.resize(size);
  for (int64_t i = 0; i < count; ++i) {
    T value = static_cast<T>(field.Get(i));
    std::memcpy(values.converted.data() + i * sizeof(T), &value, sizeof(T));
  }
  return true;
}

/// The values of initializer `tensor`, as readTensor read them, as a blob of
/// `alignment`: its raw bytes themselves, taken from the model without a
/// copy, or else (typed fields, or raw bytes not so aligned) a copy.
static AsmResourceBlob takeBytes(onnx::TensorProto &tensor,
                                 const TensorValues &values, size_t alignment) {
  if (values.raw &&
      reinterpret_cast<uintptr_t>(values.raw->data()) % alignment == 0) {
    std::string *raw = tensor.release_raw_data();
    return AsmResourceBlob(
        ArrayRef<char>(raw->data(), raw->size()), alignment,
        [raw](void *, size_t, size_t) { delete raw; }, /*dataIsMutable=*/true);
  }
  // An empty tensor's bytes have no data pointer for memcpy to read.
  if (values.bytes().empty())
    return HeapAsmResourceBlob::allocate(0, alignment);
  return HeapAsmResourceBlob::allocateAndCopyWithAlign(values.bytes(),
                                                       alignment);
}

FailureOr<TensorValues> readTensor(const onnx::TensorProto &tensor,
                                   const std::string &what, Location loc,
                                   Builder &builder) {
  Type elementType = convertElementType(tensor.data_type(), builder);
  if (!elementType)
    return emitError(loc) << what << " has ONNX element type "
                          << onnxTypeName(tensor.data_type())
                          << "; pp supports " << supportedElementTypes();
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  auto type = RankedTensorType::get(shape, elementType);
  int64_t count = type.getNumElements();
  // ONNX keeps 16-bit floats and bools in int32_data, one value each.
  TensorValues values;
  values.type = type;
  bool whole = false;
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    whole = readBytes<float>(tensor, tensor.float_data(), count, values);
    break;
  case onnx::TensorProto::DOUBLE:
    whole = readBytes<double>(tensor, tensor.double_data(), count, values);
    break;
  case onnx::TensorProto::INT64:
    whole = readBytes<int64_t>(tensor, tensor.int64_data(), count, values);
    break;
  case onnx::TensorProto::INT32:
    whole = readBytes<int32_t>(tensor, tensor.int32_data(), count, values);
    break;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    whole = readBytes<uint16_t>(tensor, tensor.int32_data(), count, values);
    break;
  case onnx::TensorProto::BOOL:
    whole = readBytes<uint8_t>(tensor, tensor.int32_data(), count, values);
    break;
  }
  if (!whole)
    return emitError(loc) << what << " does not hold the " << count
                          << " values its shape needs; the model file is "
                             "damaged";
  return values;
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

FailureOr<Value> GraphImporter::lookup(const NodeContext &ctx, int index) {
  StringRef name = ctx.inputName(index);
  // A sequence is no value: SequenceAt finds it in `sequences`.
  if (sequences.count(name)) {
    if (ctx.node.op_type() == "SequenceAt" && index == 0)
      return Value();
    return ctx.error() << "input " << index << " ('" << name
                       << "') is a sequence; pp reads sequences only "
                          "through SequenceAt";
  }
  if (ctx.node.op_type() == "SequenceAt" && index == 0)
    return ctx.error() << "input 0 ('" << name
                       << "') is no sequence (SplitToSequence's output)";
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto reason = unavailable.find(name);
  if (reason != unavailable.end())
    return ctx.error() << "input " << index << " ('" << name
                       << "') is unavailable: " << reason->second;
  return ctx.error() << "input " << index << " ('" << name
                     << "') is neither a graph input, an initializer nor "
                        "the output of an earlier node";
}

FailureOr<SmallVector<Value>>
GraphImporter::lookupInputs(const NodeContext &ctx, int required) {
  int count = ctx.node.input_size();
  while (count > 0 && ctx.node.input(count - 1).empty())
    --count;
  SmallVector<Value> inputs;
  for (int i = 0; i < count; ++i) {
    if (ctx.inputName(i).empty()) {
      if (i < required)
        return ctx.error() << "input " << i << " is missing (its name is "
                           << "empty)";
      inputs.push_back(nullptr); // An optional input left out.
      continue;
    }
    FailureOr<Value> input = lookup(ctx, i);
    if (failed(input))
      return failure();
    inputs.push_back(*input);
  }
  return inputs;
}

/// The graph input or parameter that `value` is computed from, as
/// "the input 'x'" (for messages; "" when it is found in none).
static std::string sourceOf(Value value) {
  SmallVector<Value> work{value};
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!work.empty()) {
    Value next = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(next)) {
      auto function = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      auto name = function.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        kNameAttrName);
      auto role = function.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        kRoleAttrName);
      if (name && role)
        return ("the " + role.getValue() + " '" + name.getValue() + "'").str();
      continue;
    }
    if (seen.insert(next.getDefiningOp()).second)
      llvm::append_range(work, next.getDefiningOp()->getOperands());
  }
  return "";
}

InFlightDiagnostic GraphImporter::notConstant(const NodeContext &ctx, int index,
                                              StringRef what) {
  Value value = values.lookup(ctx.inputName(index));
  InFlightDiagnostic diag = ctx.error()
                            << "input " << index << " ('"
                            << ctx.inputName(index) << "', " << what << ")";
  // A shape assembled by Concat names the piece that does not fold.
  if (auto concat = value.getDefiningOp<nn::ConcatOp>();
      concat && concat.getType().getRank() == 1) {
    int64_t offset = 0;
    for (Value piece : concat.getInputs()) {
      if (!matchPattern(piece, m_Constant())) {
        diag << " element " << offset;
        value = piece;
        break;
      }
      offset += cast<RankedTensorType>(piece.getType()).getDimSize(0);
    }
  }
  diag << " does not fold to a constant at import";
  std::string source = sourceOf(value);
  if (!source.empty())
    diag << ": it " << (isa<BlockArgument>(value) ? "is " : "depends on ")
         << source;
  diag << "; pp needs it at compile time (static shapes), so it must come "
          "from Constant nodes, integer initializers and the shapes of "
          "tensors (or float initializers that do not train)";
  return diag;
}

FailureOr<SmallVector<int64_t>>
GraphImporter::constantInts(const NodeContext &ctx, ValueRange inputs,
                            int index, StringRef what) {
  DenseIntElementsAttr given;
  if (!matchPattern(inputs[index], m_Constant(&given)))
    return notConstant(ctx, index, what);
  SmallVector<int64_t> ints;
  for (const APInt &value : given.getValues<APInt>())
    ints.push_back(value.getSExtValue());
  return ints;
}

/// The message of a control-flow op: pp compiles dataflow graphs.
static bool isControlFlow(StringRef opType) {
  return opType == "If" || opType == "Loop" || opType == "Scan";
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        StringRef nodeName) {
  Location loc = NameLoc::get(builder.getStringAttr(nodeName), fileLoc);
  NodeContext ctx{node, nodeName, loc, opset};
  bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
  if (defaultDomain && isControlFlow(node.op_type()))
    return ctx.error() << "control flow is not supported: pp compiles graphs "
                          "without subgraphs; export the model with the "
                          "branch or loop resolved (torch.onnx.export traces "
                          "a module; avoid torch.jit.script for its control "
                          "flow)";
  const auto &rules = nodeRules();
  auto rule = rules.find(node.op_type());
  if (!defaultDomain || rule == rules.end()) {
    InFlightDiagnostic diag = emitError(loc) << "unsupported ONNX op '";
    if (!defaultDomain)
      diag << node.domain() << ".";
    return diag << node.op_type() << "' (node '" << nodeName << "', opset "
                << opset << "); supported ops: " << supportedOnnxOps();
  }
  if (failed(checkNode(ctx, rule->second)))
    return failure();
  currentNode = builder.getStringAttr(nodeName);
  Block *block = builder.getInsertionBlock();
  auto firstNew = std::prev(block->end());
  bool wasEmpty = block->empty();
  FailureOr<SmallVector<Value>> inputs =
      lookupInputs(ctx, rule->second.minInputs);
  if (failed(inputs))
    return failure();
  FailureOr<std::optional<SmallVector<DenseElementsAttr>>> folded =
      foldNode(ctx, *inputs);
  if (failed(folded))
    return failure();
  NodeOutputs outputs;
  if (*folded) {
    for (DenseElementsAttr value : **folded)
      outputs.push_back(arith::ConstantOp::create(builder, loc, value));
  } else if (rule->second.import) {
    FailureOr<NodeOutputs> converted =
        (this->*rule->second.import)(ctx, *inputs);
    if (failed(converted))
      return failure();
    outputs = std::move(*converted);
  } else {
    for (auto [index, input] : llvm::enumerate(*inputs))
      if (input && !matchPattern(input, m_Constant()))
        return notConstant(ctx, index, "an input")
               << " (" << rule->second.foldOnlyReason << ")";
  }
  // Tag every op the node produced with its name.
  for (Operation &op : llvm::make_range(
           wasEmpty ? block->begin() : std::next(firstNew), block->end()))
    op.setAttr(kNodeAttrName, currentNode);
  for (auto [name, value] : llvm::zip(node.output(), outputs))
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
  if (options.tieEqualWeights && options.untieSharedWeights)
    return emitError(fileLoc)
               << "--tie-equal-weights and --untie-shared-weights contradict "
                  "each other: the first ties equal initializers, the second "
                  "unties every shared one; use one of them",
           nullptr;
  PreparedGraph prepared = prepareGraph(graph, options);
  const llvm::StringSet<> &trained = prepared.plan.trained;
  for (const TransposedWeight &folded : prepared.plan.foldedWeights)
    emitWarning(fileLoc)
        << "initializer '" << folded.stored << "' is what the exporter's "
        << "optimizer folded from the parameter '" << folded.parameter
        << "' (an embedding's rows at constant positions, say): it trains "
           "as '"
        << folded.stored << "', and '" << folded.parameter
        << "' is not in the model; export with optimize=False to train the "
           "parameter itself";
  if (!prepared.plan.trainedScalars.empty())
    emitWarning(fileLoc)
        << "trains " << prepared.plan.trainedScalars.size()
        << " one-element initializer"
        << (prepared.plan.trainedScalars.size() == 1 ? "" : "s") << " ('"
        << llvm::join(prepared.plan.trainedScalars, "', '")
        << "'): learned scalars train like any weight; hold one that is a "
           "constant (an epsilon, an exponent, a scale) with --freeze";
  if (!options.tieEqualWeights)
    for (const EqualInitializer &tie : prepared.equal)
      emitWarning(fileLoc)
          << "initializer '" << tie.copy << "' holds "
          << (tie.transposed ? "the transpose of" : "a copy of") << " '"
          << tie.original
          << "' bit for bit (torch.onnx.export's constant folding turns a "
             "tied LM head's transposed embedding into such a copy), so the "
             "two train as separate parameters; import with "
             "--tie-equal-weights to tie them";
  if (prepared.untied > 0 && !options.untieSharedWeights)
    emitWarning(fileLoc)
        << "untied " << prepared.untied << " floating-point initializer"
        << (prepared.untied == 1 ? "" : "s")
        << " that several nodes read and whose elements are all equal, "
           "giving every reading node its own copy: torch.onnx.export merges "
           "initializers with equal values (a fresh model's LayerNorm "
           "weights, zero biases) into one";
  if (SharedInitializers shared = findSharedInitializers(graph, trained);
      shared.count > 0)
    emitWarning(fileLoc)
        << shared.count << " floating-point initializer"
        << (shared.count == 1 ? " is" : "s are") << " read by several nodes ('"
        << shared.example << "' by " << shared.mostReaders
        << "), each trained as one parameter its readers share: their "
           "elements differ, as a weight tied on purpose (tied embeddings) "
           "does; to give every node its own copy all the same, import with "
           "--untie-shared-weights";

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());

  // Arguments: graph inputs (minus initializers listed as inputs, as old
  // exporters do), then the initializers that train as parameters; the
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
  SmallVector<NamedAttribute> trainedRecord, heldRecord;
  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    FailureOr<TensorValues> value =
        readTensor(init, "tensor '" + init.name() + "'", fileLoc, builder);
    if (failed(value))
      return nullptr;
    RankedTensorType type = value->type;
    NamedAttribute record = builder.getNamedAttr(
        init.name(), builder.getI64IntegerAttr(type.getNumElements()));
    if (!trained.contains(init.name())) {
      if (isa<FloatType>(type.getElementType()))
        heldRecord.push_back(record);
      constants.emplace_back(init.name(), toElementsAttr(*value));
      continue;
    }
    trainedRecord.push_back(record);
    AsmResourceBlob blob =
        takeBytes(init, *value, type.getElementTypeBitWidth() / 8);
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

  SmallVector<NamedAttribute> record = {
      builder.getNamedAttr("trained", builder.getDictionaryAttr(trainedRecord)),
      builder.getNamedAttr("held", builder.getDictionaryAttr(heldRecord))};
  SmallVector<NamedAttribute> foldedRecord;
  for (const TransposedWeight &folded : prepared.plan.foldedWeights)
    foldedRecord.push_back(builder.getNamedAttr(
        folded.stored, builder.getStringAttr(folded.parameter)));
  if (!foldedRecord.empty())
    record.push_back(builder.getNamedAttr(
        "folded", builder.getDictionaryAttr(foldedRecord)));
  (*module)->setAttr(kImportRecordAttrName, builder.getDictionaryAttr(record));
  SmallVector<Type> resultTypes;
  auto function = func::FuncOp::create(builder, fileLoc, "main",
                                       builder.getFunctionType(argTypes, {}));
  function.setAllArgAttrs(argAttrs);
  function->setAttr(kOnnxOpsetAttrName, builder.getI64IntegerAttr(opset));
  Block *body = function.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  for (auto [name, arg] : llvm::zip(argNames, body->getArguments()))
    values[name] = arg;
  for (auto &[name, value] : constants) {
    auto constant = arith::ConstantOp::create(builder, fileLoc, value);
    constant->setAttr(kNodeAttrName, builder.getStringAttr(name));
    values[name] = constant;
  }

  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &name : node.input())
      consumedNames.insert(name);
  for (const onnx::ValueInfoProto &output : graph.output())
    consumedNames.insert(output.name());

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
    auto reason = unavailable.find(output.name());
    if (it == values.end() && reason != unavailable.end())
      return emitError(fileLoc) << "graph output '" << output.name()
                                << "' is unavailable: " << reason->second,
             nullptr;
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
  // import, and a transpose that every reader folded into its product is
  // not part of the computation either.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isa<arith::ConstantOp, nn::TransposeOp>(op) && op.use_empty())
      op.erase();
  function.setType(
      builder.getFunctionType(argTypes, TypeRange(ValueRange(results))));
  function.setAllResultAttrs(resultAttrs);
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

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
  for (const auto &entry : nodeRules()) {
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
  if (std::string problem = loadExternalData(model, path); !problem.empty())
    return emitError(fileLoc) << problem, nullptr;
  // libonnx's checker knows the opsets up to kMaxCheckerOpset; pp's own
  // node checks (NodeChecks.cpp) guard every opset. Newer exporters stamp
  // newer IR versions (9, 10) on models that use nothing beyond this
  // checker's IR: the opset decides whether pp knows the ops, so check the
  // graph at the checker's IR version.
  if (*opset <= kMaxCheckerOpset) {
    if (model.ir_version() > onnx::IR_VERSION)
      model.set_ir_version(onnx::IR_VERSION);
    try {
      onnx::checker::check_model(model);
    } catch (const std::exception &error) {
      return emitError(fileLoc)
                 << "the ONNX checker rejects the model: " << error.what(),
             nullptr;
    }
  }
  GraphImporter importer(context, path, *opset, options);
  return importer.import(model);
}

/// Why a binary model does not parse.
static constexpr llvm::StringLiteral kUnreadable =
    "not a readable ONNX model: the file is empty, truncated or not an ONNX "
    "protobuf (ModelProto)";

/// The error `problem` about the model at `path`.
static OwningOpRef<ModuleOp> modelError(StringRef path, MLIRContext *context,
                                        const Twine &problem) {
  return emitError(FileLineColLoc::get(context, path, 0, 0)) << problem,
         nullptr;
}

static void loadDialects(MLIRContext *context) {
  context->loadDialect<nn::NNDialect, PPDialect, arith::ArithDialect,
                       func::FuncDialect>();
}

std::string parseOnnxModel(StringRef contents, StringRef path,
                           onnx::ModelProto &model) {
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
    return parseError ? "cannot parse the ONNX text syntax: " + *parseError
                      : "";
  }
  if (contents.empty() ||
      !model.ParseFromArray(contents.data(), static_cast<int>(contents.size())))
    return kUnreadable.str();
  return "";
}

OwningOpRef<ModuleOp> importOnnxModel(StringRef contents, StringRef path,
                                      MLIRContext *context,
                                      const ImportOptions &options) {
  loadDialects(context);
  onnx::ModelProto model;
  if (std::string problem = parseOnnxModel(contents, path, model);
      !problem.empty())
    return modelError(path, context, problem);
  return importParsed(model, path, context, options);
}

OwningOpRef<ModuleOp> importOnnxFile(int fd, StringRef path,
                                     MLIRContext *context,
                                     const ImportOptions &options,
                                     int64_t size) {
  google::protobuf::io::FileInputStream file(fd);
  // Made only with a limit: a negative one would back the file up when
  // destroyed.
  std::optional<google::protobuf::io::LimitingInputStream> limited;
  if (size >= 0)
    limited.emplace(&file, size);
  google::protobuf::io::ZeroCopyInputStream &stream =
      limited
          ? static_cast<google::protobuf::io::ZeroCopyInputStream &>(*limited)
          : file;
  if (path.ends_with(".onnxtxt")) {
    std::string text;
    const void *chunk = nullptr;
    for (int got = 0; stream.Next(&chunk, &got);)
      text.append(static_cast<const char *>(chunk), got);
    if (int error = file.GetErrno())
      return modelError(path, context,
                        std::string("cannot read it: ") + std::strerror(error));
    return importOnnxModel(text, path, context, options);
  }
  loadDialects(context);
  onnx::ModelProto model;
  if (!model.ParseFromZeroCopyStream(&stream) || stream.ByteCount() == 0)
    return modelError(path, context,
                      file.GetErrno() ? std::string("cannot read it: ") +
                                            std::strerror(file.GetErrno())
                                      : kUnreadable.str());
  return importParsed(model, path, context, options);
}

} // namespace pp::onnx_frontend
