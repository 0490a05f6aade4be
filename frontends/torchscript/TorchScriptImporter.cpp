//===- TorchScriptImporter.cpp - TorchScript into the nn dialect ----------===//
//
// The importer proper, built as a plugin that links LibTorch (see
// TorchScriptFrontend.cpp, which loads it). It uses the nn and pp dialects
// of the tool that loads it, whose symbols the tools export.
//
//===----------------------------------------------------------------------===//

#include "frontends/torchscript/ArchiveChecks.h"
#include "frontends/torchscript/ModuleImporter.h"
#include "frontends/torchscript/TorchScriptImporter.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/script.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>

using namespace mlir;

namespace pp::torchscript_frontend {
std::string supportedTorchScriptOps();
namespace {

/// The budget of constant evaluation at import: most iterations of all the
/// prim::Loops one import unrolls (nested loops' included), and most
/// elements of one tensor evaluated at import.
constexpr int64_t kMaxFoldedIterations = 1 << 16;
constexpr int64_t kMaxEvaluatedElements = int64_t(1) << 28;

/// True when the importer can read `tensor`'s values: a CPU tensor (a
/// tensor on the meta device has a shape and an element type, no values).
bool holdsValues(const at::Tensor &tensor) { return tensor.device().is_cpu(); }

/// What a TorchScript value is during the import: a tensor the program
/// computes, a value known at import (a number, a string, a list of them, a
/// constant tensor, a module...), or a list or tuple holding tensors the
/// program computes. Lists are shared, as in TorchScript, so that
/// `aten::append` changes every use.
struct Item {
  Value tensor;
  c10::IValue constant;
  std::shared_ptr<std::vector<Item>> elements;
  /// For an output of an op pp cannot import: that op. The error is
  /// reported where the output is used (an unused one costs nothing).
  torch::jit::Node *unsupported = nullptr;

  static Item ofTensor(Value value) { return Item{value, {}, nullptr}; }
  static Item ofConstant(c10::IValue value) {
    return Item{nullptr, std::move(value), nullptr};
  }
  static Item ofList(std::vector<Item> items) {
    return Item{nullptr, {},
                std::make_shared<std::vector<Item>>(std::move(items))};
  }
  bool isTensor() const { return static_cast<bool>(tensor); }
  bool isList() const { return static_cast<bool>(elements); }
  bool isConstant() const {
    return !isTensor() && !isList() && !unsupported;
  }
  /// A number known at import: an int, float or bool, or a tensor of one
  /// element of them (PyTorch promotes rank-0 tensors like numbers).
  bool isScalar() const {
    if (!isConstant())
      return false;
    if (constant.isTensor())
      return constant.toTensor().dim() == 0 && holdsValues(constant.toTensor());
    return constant.isInt() || constant.isDouble() || constant.isBool();
  }
};

/// The MLIR element type of a LibTorch scalar type, or null when pp does
/// not import it.
Type convertScalarType(at::ScalarType type, Builder &builder) {
  switch (type) {
  case at::kFloat:
    return builder.getF32Type();
  case at::kDouble:
    return builder.getF64Type();
  case at::kHalf:
    return builder.getF16Type();
  case at::kBFloat16:
    return builder.getBF16Type();
  case at::kLong:
    return builder.getI64Type();
  case at::kInt:
    return builder.getI32Type();
  case at::kBool:
    return builder.getI1Type();
  default:
    return nullptr;
  }
}
constexpr llvm::StringLiteral kSupportedDtypes =
    "float32, float64, float16, bfloat16, int64, int32 and bool";

/// The LibTorch scalar type of an MLIR element type convertScalarType makes.
at::ScalarType scalarTypeOf(Type type) {
  if (type.isF32())
    return at::kFloat;
  if (type.isF64())
    return at::kDouble;
  if (type.isF16())
    return at::kHalf;
  if (type.isBF16())
    return at::kBFloat16;
  if (type.isInteger(64))
    return at::kLong;
  if (type.isInteger(32))
    return at::kInt;
  return at::kBool;
}

/// The element type `?x8xi64` names (its last `x`-separated part).
Type parseElementType(StringRef name, Builder &builder) {
  return llvm::StringSwitch<Type>(name)
      .Case("f32", builder.getF32Type())
      .Case("f64", builder.getF64Type())
      .Case("f16", builder.getF16Type())
      .Case("bf16", builder.getBF16Type())
      .Case("i64", builder.getI64Type())
      .Case("i32", builder.getI32Type())
      .Case("i1", builder.getI1Type())
      .Default(nullptr);
}

/// `file:line` of `node` in the module's code, or "unknown position".
std::string positionOf(torch::jit::Node *node) {
  auto source = node->sourceRange().file_line_col();
  if (!source)
    return "unknown position";
  return std::get<0>(*source) + ":" + std::to_string(std::get<1>(*source));
}

/// Turns the forward method of one frozen TorchScript module into
/// `func.func @main`.
class GraphImporter {
public:
  GraphImporter(MLIRContext *context, StringRef path,
                const ImportOptions &options)
      : context(context), builder(context),
        fileLoc(FileLineColLoc::get(context, path, 0, 0)), options(options) {}

  OwningOpRef<ModuleOp> import(torch::jit::Module &module,
                               const c10::FunctionSchema &schema);

  /// How one TorchScript op kind imports.
  using Rule = std::function<FailureOr<SmallVector<Item>>(
      GraphImporter &, torch::jit::Node *, Location, ArrayRef<Item>)>;
  /// The rule of each op kind that becomes nn ops.
  static const std::map<std::string, Rule, std::less<>> &rules();

  // Helpers of the rules.
  /// `item` as a tensor value of the program: a computed tensor, or a
  /// constant (a tensor, or a number of element type `numberType`).
  FailureOr<Value> asTensor(const Item &item, Location loc,
                            Type numberType = {});
  /// The integer `item` holds, or an error naming `what`.
  FailureOr<int64_t> asInt(const Item &item, Location loc, StringRef what);
  FailureOr<double> asDouble(const Item &item, Location loc, StringRef what);
  FailureOr<bool> asBool(const Item &item, Location loc, StringRef what);
  /// The integers of a list `item` (an int is a list of one).
  FailureOr<SmallVector<int64_t>> asInts(const Item &item, Location loc,
                                         StringRef what);
  /// The items of a list `item`.
  FailureOr<SmallVector<Item>> asItems(const Item &item, Location loc,
                                       StringRef what);
  /// `axis` counted from the front, or an error when rank `rank` has none.
  FailureOr<int64_t> normalizedAxis(int64_t axis, int64_t rank, Location loc);
  /// The operands of an elementwise op, promoted to one element type as
  /// PyTorch does (floats over integers, tensors over numbers).
  FailureOr<SmallVector<Value>> promote(ArrayRef<Item> items, Location loc);
  /// `value` cast to `elementType` when it has another one.
  Value castTo(Value value, Type elementType, Location loc);
  /// A rank-0 constant of `elementType` holding `number`.
  Value scalarConstant(double number, Type elementType, Location loc);
  /// Creates an OpTy after checking that its result types infer (the
  /// inference explains a failure), so that bad models never abort.
  template <typename OpTy>
  FailureOr<Operation *> createOp(Location loc, ValueRange operands,
                                  typename OpTy::Properties properties = {});
  template <typename OpTy>
  FailureOr<Value> create(Location loc, ValueRange operands,
                          typename OpTy::Properties properties = {});

  OpBuilder &getBuilder() { return builder; }
  /// The value at import of `value` when it is a parameter's argument, else
  /// an undefined tensor.
  at::Tensor parameterValue(Value value) const {
    return parameterValues.lookup(value);
  }
  /// The name of the node being imported (`pp.node`).
  StringRef nodeName() const { return currentNode.getValue(); }

private:
  /// Imports every node of `block`, whose inputs are `inputs`, and returns
  /// the items of its outputs.
  FailureOr<SmallVector<Item>> importBlock(torch::jit::Block *block,
                                           ArrayRef<Item> inputs);
  LogicalResult importNode(torch::jit::Node *node);
  FailureOr<SmallVector<Item>> importIf(torch::jit::Node *node, Location loc);
  /// Imports the body of the method or function a call node calls, in
  /// place: a method's ops are named after its module's path.
  FailureOr<SmallVector<Item>> importCall(torch::jit::Node *node,
                                          Location loc,
                                          ArrayRef<Item> inputs);
  FailureOr<SmallVector<Item>> importLoop(torch::jit::Node *node,
                                          Location loc);
  FailureOr<SmallVector<Item>> importGetAttr(torch::jit::Node *node,
                                             Location loc);
  /// The LibTorch value of `item` (known at import), of TorchScript type
  /// `type` (which types the elements of a list).
  c10::IValue toIValue(const Item &item, const c10::TypePtr &type);
  /// Runs the node's LibTorch operation on `inputs` (known at import).
  FailureOr<SmallVector<Item>> evaluate(torch::jit::Node *node, Location loc,
                                        ArrayRef<c10::IValue> inputs);
  /// A LibTorch tensor on `device` with the shape, element type and
  /// gradient requirement of computed tensor `value`, and no meaningful
  /// values: what questions about a tensor's metadata (on the meta device,
  /// which allocates nothing) and factories that take only its shape and
  /// element type (on the CPU, so that their results hold values) are
  /// evaluated on.
  at::Tensor standIn(Value value, at::Device device);
  /// The location of `node`: its name within its source position.
  Location locationOf(torch::jit::Node *node, StringRef name);
  /// The error for `node`, an op pp does not import, at `loc`.
  InFlightDiagnostic unsupportedOp(torch::jit::Node *node, Location loc);
  /// A unique name for `node`, from its first output's name.
  std::string uniqueName(torch::jit::Node *node);
  /// The constant of a tensor known at import.
  FailureOr<Value> materialize(const at::Tensor &tensor, Location loc);
  /// The argument holding parameter `path` (created on first use).
  FailureOr<Value> parameter(const std::string &path, const at::Tensor &value,
                             Location loc);
  FailureOr<RankedTensorType> inputType(const std::string &name);

  MLIRContext *context;
  OpBuilder builder;
  Location fileLoc;
  const ImportOptions &options;
  Block *body = nullptr;
  llvm::DenseMap<torch::jit::Value *, Item> items;
  /// The qualified name of each module object forward reaches.
  llvm::DenseMap<c10::ivalue::Object *, std::string> modulePaths;
  /// The qualified name of the module whose method is being imported.
  std::string modulePath;
  llvm::StringMap<Value> parameters;
  llvm::DenseMap<Value, at::Tensor> parameterValues;
  /// The floating-point tensors forward reads, by qualified name, with
  /// their element counts: the parameters (which train) and the buffers
  /// (held constant); kImportRecordAttrName.
  std::map<std::string, int64_t> trainedRecord, heldRecord;
  SmallVector<Attribute> argAttrs;
  llvm::StringSet<> usedNames;
  /// The last suffix uniqueName gave each base name, so that naming stays
  /// linear in the nodes of unrolled loops.
  llvm::StringMap<unsigned> lastSuffix;
  /// The prim::Loop iterations unrolled so far (kMaxFoldedIterations).
  int64_t foldedIterations = 0;
  /// The name each imported node got (the last, for unrolled loops).
  llvm::DenseMap<torch::jit::Node *, std::string> nodeNames;
  StringAttr currentNode;
};

template <typename OpTy>
FailureOr<Operation *>
GraphImporter::createOp(Location loc, ValueRange operands,
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
FailureOr<Value> GraphImporter::create(Location loc, ValueRange operands,
                                       typename OpTy::Properties properties) {
  FailureOr<Operation *> op = createOp<OpTy>(loc, operands, properties);
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

Value GraphImporter::scalarConstant(double number, Type elementType,
                                    Location loc) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element;
  if (isa<FloatType>(elementType))
    element = builder.getFloatAttr(elementType, number);
  else
    element = builder.getIntegerAttr(elementType, static_cast<int64_t>(number));
  return arith::ConstantOp::create(builder, loc,
                                   DenseElementsAttr::get(type, element));
}

Value GraphImporter::castTo(Value value, Type elementType, Location loc) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  return nn::CastOp::create(builder, loc, type.clone(elementType), value);
}

FailureOr<Value> GraphImporter::materialize(const at::Tensor &tensor,
                                            Location loc) {
  Type elementType = convertScalarType(tensor.scalar_type(), builder);
  if (!elementType)
    return emitError(loc) << "a constant tensor has dtype "
                          << c10::toString(tensor.scalar_type())
                          << "; pp supports " << kSupportedDtypes;
  if (!holdsValues(tensor))
    return emitError(loc) << "a constant tensor is on device '"
                          << tensor.device().str()
                          << "', which holds no values pp can read; pp "
                             "imports constants computed on the CPU (create "
                             "it on an input's device, or on the default one)";
  at::Tensor dense = tensor.contiguous();
  auto type = RankedTensorType::get(
      SmallVector<int64_t>(dense.sizes().begin(), dense.sizes().end()),
      elementType);
  DenseElementsAttr value;
  if (elementType.isInteger(1)) {
    SmallVector<bool> bools;
    for (int64_t i = 0, e = dense.numel(); i < e; ++i)
      bools.push_back(dense.data_ptr<bool>()[i]);
    value = DenseElementsAttr::get(type, ArrayRef<bool>(bools));
  } else {
    value = DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(static_cast<const char *>(dense.data_ptr()),
                             dense.nbytes()));
  }
  return Value(arith::ConstantOp::create(builder, loc, value));
}

FailureOr<Value> GraphImporter::asTensor(const Item &item, Location loc,
                                         Type numberType) {
  if (item.isTensor())
    return item.tensor;
  if (item.isScalar() && numberType) {
    const c10::IValue &c = item.constant;
    double number = c.isTensor()   ? c.toTensor().item<double>()
                    : c.isDouble() ? c.toDouble()
                    : c.isInt()    ? static_cast<double>(c.toInt())
                                   : static_cast<double>(c.toBool());
    return scalarConstant(number, numberType, loc);
  }
  if (item.isConstant() && item.constant.isTensor())
    return materialize(item.constant.toTensor(), loc);
  return emitError(loc) << "expected a tensor, found "
                        << (item.isList() ? std::string("a list")
                                          : item.constant.tagKind());
}

FailureOr<int64_t> GraphImporter::asInt(const Item &item, Location loc,
                                        StringRef what) {
  if (item.isConstant()) {
    if (item.constant.isInt())
      return item.constant.toInt();
    if (item.constant.isBool())
      return static_cast<int64_t>(item.constant.toBool());
    if (item.constant.isTensor() && item.constant.toTensor().numel() == 1 &&
        !item.constant.toTensor().is_floating_point() &&
        holdsValues(item.constant.toTensor()))
      return item.constant.toTensor().item<int64_t>();
  }
  return emitError(loc) << what
                        << " must be an integer known at import (pp compiles "
                           "static shapes)";
}

FailureOr<double> GraphImporter::asDouble(const Item &item, Location loc,
                                          StringRef what) {
  if (item.isConstant()) {
    if (item.constant.isDouble())
      return item.constant.toDouble();
    if (item.constant.isInt())
      return static_cast<double>(item.constant.toInt());
    if (item.constant.isTensor() && item.constant.toTensor().numel() == 1 &&
        holdsValues(item.constant.toTensor()))
      return item.constant.toTensor().item<double>();
  }
  return emitError(loc) << what << " must be a number known at import";
}

FailureOr<bool> GraphImporter::asBool(const Item &item, Location loc,
                                      StringRef what) {
  if (item.isConstant() && item.constant.isBool())
    return item.constant.toBool();
  return emitError(loc) << what << " must be a bool known at import";
}

FailureOr<SmallVector<int64_t>>
GraphImporter::asInts(const Item &item, Location loc, StringRef what) {
  SmallVector<int64_t> ints;
  if (item.isConstant() && item.constant.isIntList()) {
    for (int64_t value : item.constant.toIntVector())
      ints.push_back(value);
    return ints;
  }
  if (item.isConstant() && item.constant.isInt())
    return SmallVector<int64_t>{item.constant.toInt()};
  FailureOr<SmallVector<Item>> elements = asItems(item, loc, what);
  if (failed(elements))
    return failure();
  for (const Item &element : *elements) {
    FailureOr<int64_t> value = asInt(element, loc, what);
    if (failed(value))
      return failure();
    ints.push_back(*value);
  }
  return ints;
}

FailureOr<SmallVector<Item>>
GraphImporter::asItems(const Item &item, Location loc, StringRef what) {
  if (item.isList())
    return SmallVector<Item>(item.elements->begin(), item.elements->end());
  SmallVector<Item> elements;
  if (item.isConstant() && item.constant.isList()) {
    for (const c10::IValue &element : item.constant.toListRef())
      elements.push_back(Item::ofConstant(element));
    return elements;
  }
  if (item.isConstant() && item.constant.isTuple()) {
    for (const c10::IValue &element : item.constant.toTupleRef().elements())
      elements.push_back(Item::ofConstant(element));
    return elements;
  }
  return emitError(loc) << what << " must be a list";
}

FailureOr<int64_t> GraphImporter::normalizedAxis(int64_t axis, int64_t rank,
                                                 Location loc) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return emitError(loc) << "dimension " << axis
                          << " is out of range for rank " << rank;
  return axis < 0 ? axis + rank : axis;
}

FailureOr<SmallVector<Value>> GraphImporter::promote(ArrayRef<Item> items,
                                                     Location loc) {
  // The result type: the widest float of the tensors (non-scalar
  // operands), else f32 when a number is a float, else the tensors' type.
  Type result;
  bool floatNumber = false;
  for (const Item &item : items) {
    if (item.isScalar()) {
      floatNumber |= item.constant.isDouble() ||
                     (item.constant.isTensor() &&
                      item.constant.toTensor().is_floating_point());
      continue;
    }
    Type type;
    if (item.isTensor())
      type = getElementTypeOrSelf(item.tensor);
    else if (item.isConstant() && item.constant.isTensor())
      type = convertScalarType(item.constant.toTensor().scalar_type(), builder);
    if (!type)
      continue;
    if (!result || (isa<FloatType>(type) && !isa<FloatType>(result)) ||
        (isa<FloatType>(type) && isa<FloatType>(result) &&
         type.getIntOrFloatBitWidth() > result.getIntOrFloatBitWidth()))
      result = type;
  }
  if (!result)
    return emitError(loc) << "an elementwise op has no tensor operand";
  if (floatNumber && !isa<FloatType>(result))
    result = builder.getF32Type();
  SmallVector<Value> operands;
  for (const Item &item : items) {
    FailureOr<Value> operand = asTensor(item, loc, result);
    if (failed(operand))
      return failure();
    operands.push_back(castTo(*operand, result, loc));
  }
  return operands;
}

at::Tensor GraphImporter::standIn(Value value, at::Device device) {
  auto type = cast<RankedTensorType>(value.getType());
  at::Tensor tensor =
      at::empty(c10::IntArrayRef(type.getShape().data(), type.getRank()),
                at::TensorOptions()
                    .dtype(scalarTypeOf(type.getElementType()))
                    .device(device));
  auto arg = dyn_cast<BlockArgument>(value);
  if (arg && arg.getOwner() == body && tensor.is_floating_point()) {
    auto role = dyn_cast_or_null<StringAttr>(
        cast<DictionaryAttr>(argAttrs[arg.getArgNumber()]).get(kRoleAttrName));
    if (role && role.getValue() == kRoleParameter)
      tensor.requires_grad_(true);
  }
  return tensor;
}

Location GraphImporter::locationOf(torch::jit::Node *node, StringRef name) {
  Location source = fileLoc;
  if (auto position = node->sourceRange().file_line_col())
    source = FileLineColLoc::get(context, std::get<0>(*position),
                                 std::get<1>(*position),
                                 std::get<2>(*position));
  if (name.empty())
    return source;
  return NameLoc::get(builder.getStringAttr(name), source);
}

std::string GraphImporter::uniqueName(torch::jit::Node *node) {
  // The module the node's method belongs to (`blocks.0.attn.qkv`), then
  // the op (`linear`): names that split points can use.
  // A graph built with scopes (a torch.export program's) names the module
  // by the node's scope.
  std::string path = modulePath.empty() && !node->scope()->isBlank()
                         ? node->scope()->namesFromRoot(".")
                         : modulePath;
  std::string base = std::string(node->kind().toUnqualString());
  if (!path.empty())
    base = path + "/" + base;
  std::string name = base;
  unsigned &suffix = lastSuffix[base];
  while (usedNames.contains(name))
    name = base + "_" + std::to_string(++suffix);
  usedNames.insert(name);
  return name;
}

FailureOr<Value> GraphImporter::parameter(const std::string &path,
                                          const at::Tensor &value,
                                          Location loc) {
  auto it = parameters.find(path);
  if (it != parameters.end())
    return it->second;
  Type elementType = convertScalarType(value.scalar_type(), builder);
  if (!elementType || !isa<FloatType>(elementType))
    return emitError(loc) << "parameter '" << path << "' has dtype "
                          << c10::toString(value.scalar_type())
                          << "; pp trains float32, float64, float16 and "
                             "bfloat16 parameters";
  at::Tensor dense = value.detach().contiguous();
  auto type = RankedTensorType::get(
      SmallVector<int64_t>(dense.sizes().begin(), dense.sizes().end()),
      elementType);
  // The blob shares the tensor's storage (no copy of the weights): it holds
  // a reference to the tensor until the module no longer needs the bytes.
  auto *owner = new at::Tensor(dense);
  AsmResourceBlob blob(
      ArrayRef<char>(static_cast<const char *>(dense.data_ptr()),
                     dense.nbytes()),
      dense.element_size(), [owner](void *, size_t, size_t) { delete owner; },
      /*dataIsMutable=*/false);
  auto initialValue = DenseResourceElementsAttr::get(type, path, std::move(blob));
  Value argument = body->addArgument(type, fileLoc);
  argAttrs.push_back(builder.getDictionaryAttr(
      {builder.getNamedAttr(kNameAttrName, builder.getStringAttr(path)),
       builder.getNamedAttr(kRoleAttrName,
                            builder.getStringAttr(kRoleParameter)),
       builder.getNamedAttr(kInitAttrName, initialValue)}));
  parameters[path] = argument;
  parameterValues[argument] = dense;
  return argument;
}

FailureOr<RankedTensorType>
GraphImporter::inputType(const std::string &name) {
  auto it = options.inputTypes.find(name);
  if (it == options.inputTypes.end())
    return emitError(fileLoc)
           << "forward's argument '" << name
           << "' has no type: TorchScript records no shapes; give it with "
              "--input-shape "
           << name
           << "=TYPE, e.g. ?x8xi64 or ?x8x32xf32 (`?` is the batch size)";
  auto parts = splitInputType(it->second);
  Type elementType = parts ? parseElementType(parts->second, builder) : Type();
  if (!elementType)
    return emitError(fileLoc)
           << "--input-shape " << name << "=" << it->second
           << ": not DIMSxTYPE with TYPE one of f32, f64, f16, bf16, i64, "
              "i32, i1 (e.g. ?x8xi64)";
  SmallVector<int64_t> shape = parts->first;
  for (int64_t &size : shape)
    if (size < 0) {
      if (options.batchSize <= 0)
        return emitError(fileLoc)
               << "--input-shape " << name << "=" << it->second
               << " has a batch dimension `?`: give the batch size with "
                  "--batch-size=B (pp-opt) or --microbatch-size=B (pp-run)";
      size = options.batchSize;
    }
  return RankedTensorType::get(shape, elementType);
}

c10::IValue GraphImporter::toIValue(const Item &item,
                                   const c10::TypePtr &type) {
  if (!item.isList())
    return item.constant;
  if (auto tuple = type->cast<c10::TupleType>()) {
    std::vector<c10::IValue> elements;
    for (auto [element, elementType] :
         llvm::zip_equal(*item.elements, tuple->elements()))
      elements.push_back(toIValue(element, elementType));
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  auto list = type->cast<c10::ListType>();
  c10::TypePtr elementType =
      list ? list->getElementType() : c10::TypePtr(c10::AnyType::get());
  c10::impl::GenericList values(elementType);
  for (const Item &element : *item.elements)
    values.push_back(toIValue(element, elementType));
  return values;
}

/// The elements of the tensor `node` makes from `inputs` when it is a
/// factory whose arguments say (a `size` list, `arange`'s bounds, the
/// operand of a `*_like`), so that the budget applies before LibTorch
/// allocates; 0 otherwise.
double elementsToMake(torch::jit::Node *node, ArrayRef<c10::IValue> inputs) {
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema)
    return 0;
  double start = 0, end = 0, step = 1;
  for (auto [argument, input] : llvm::zip(schema->arguments(), inputs)) {
    const std::string &name = argument.name();
    if (name == "size" && input.isList()) {
      double elements = 1;
      for (const c10::IValue &size : input.toListRef())
        if (size.isInt())
          elements *= static_cast<double>(std::max<int64_t>(size.toInt(), 0));
      return elements;
    }
    if (name == "self" && input.isTensor() &&
        StringRef(node->kind().toUnqualString()).ends_with("_like"))
      return static_cast<double>(input.toTensor().numel());
    if ((name == "start" || name == "end" || name == "step") &&
        input.isScalar())
      (name == "start" ? start : name == "end" ? end : step) =
          input.toScalar().toDouble();
  }
  if (node->kind() == c10::aten::arange && step != 0)
    return std::max(std::ceil((end - start) / step), 0.0);
  return 0;
}

FailureOr<SmallVector<Item>>
GraphImporter::evaluate(torch::jit::Node *node, Location loc,
                        ArrayRef<c10::IValue> inputs) {
  auto overBudget = [&](double elements) {
    return emitError(loc)
           << "evaluating " << node->kind().toQualString() << " (node '"
           << nodeNames.lookup(node) << "', " << positionOf(node)
           << ") at import makes a tensor of " << llvm::formatv("{0:F0}", elements).str()
           << " elements, past pp's budget of " << kMaxEvaluatedElements
           << " elements for one tensor computed at import (it becomes a "
              "constant of the program): make it smaller, or compute it from "
              "the inputs";
  };
  if (double elements = elementsToMake(node, inputs);
      elements > kMaxEvaluatedElements)
    return overBudget(elements);
  torch::jit::Stack stack(inputs.begin(), inputs.end());
  // Operations with variadic schemas (aten::format) pop their input count
  // first, as TorchScript's interpreter pushes it.
  if (node->maybeSchema() && node->schema().is_vararg())
    stack.push_back(static_cast<int64_t>(inputs.size()));
  try {
    node->getOperation()(stack);
  } catch (const std::exception &error) {
    std::string message = error.what();
    return emitError(loc) << "evaluating " << node->kind().toQualString()
                          << " at import failed: "
                          << StringRef(message).split('\n').first;
  }
  SmallVector<Item> outputs;
  for (c10::IValue &value : stack) {
    if (value.isTensor() && value.toTensor().numel() > kMaxEvaluatedElements)
      return overBudget(static_cast<double>(value.toTensor().numel()));
    outputs.push_back(Item::ofConstant(std::move(value)));
  }
  return outputs;
}

FailureOr<SmallVector<Item>> GraphImporter::importGetAttr(torch::jit::Node *node,
                                                          Location loc) {
  const Item &owner = items[node->input(0)];
  if (!owner.isConstant() || !owner.constant.isObject())
    return emitError(loc) << "prim::GetAttr on something that is not a module";
  c10::intrusive_ptr<c10::ivalue::Object> object = owner.constant.toObject();
  const std::string &name = node->s(torch::jit::attr::name);
  std::string path = modulePaths.lookup(object.get());
  path = path.empty() ? name : path + "." + name;
  c10::optional<size_t> slot = object->type()->findAttributeSlot(name);
  if (!slot)
    return emitError(loc) << "module '" << modulePaths.lookup(object.get())
                          << "' has no attribute '" << name << "'";
  c10::IValue value = object->getSlot(*slot);
  if (value.isObject())
    modulePaths[value.toObject().get()] = path;
  if (object->type()->is_parameter(*slot) && value.isTensor()) {
    FailureOr<Value> argument = parameter(path, value.toTensor(), loc);
    if (failed(argument))
      return failure();
    trainedRecord[path] = value.toTensor().numel();
    return SmallVector<Item>{Item::ofTensor(*argument)};
  }
  if (value.isTensor() && value.toTensor().is_floating_point())
    heldRecord[path] = value.toTensor().numel();
  return SmallVector<Item>{Item::ofConstant(value)};
}

InFlightDiagnostic GraphImporter::unsupportedOp(torch::jit::Node *node,
                                               Location loc) {
  return emitError(loc) << "unsupported TorchScript op '"
                        << node->kind().toQualString() << "' (node '"
                        << nodeNames.lookup(node) << "', " << positionOf(node)
                        << "), which computes on the inputs' values; "
                           "supported ops: "
                        << supportedTorchScriptOps();
}

FailureOr<SmallVector<Item>>
GraphImporter::importCall(torch::jit::Node *node, Location loc,
                          ArrayRef<Item> inputs) {
  torch::jit::Function *callee = nullptr;
  SmallVector<Item> arguments(inputs);
  std::string path = modulePath;
  if (node->kind() == c10::prim::CallFunction) {
    callee = node->input(0)->type()->expectRef<c10::FunctionType>().function();
    arguments.erase(arguments.begin());
  } else {
    if (!inputs[0].isConstant() || !inputs[0].constant.isObject())
      return emitError(loc) << "prim::CallMethod on something that is not a "
                               "module";
    c10::intrusive_ptr<c10::ivalue::Object> object =
        inputs[0].constant.toObject();
    callee = &object->type()->getMethod(node->s(torch::jit::attr::name));
    path = modulePaths.lookup(object.get());
  }
  std::swap(path, modulePath);
  FailureOr<SmallVector<Item>> outputs = importBlock(
      torch::jit::toGraphFunction(*callee).graph()->block(), arguments);
  std::swap(path, modulePath);
  return outputs;
}

FailureOr<SmallVector<Item>> GraphImporter::importIf(torch::jit::Node *node,
                                                     Location loc) {
  const Item &condition = items[node->input(0)];
  if (!condition.isConstant() || !condition.constant.isBool())
    return emitError(loc) << "prim::If whose condition is not a bool known "
                             "at import";
  return importBlock(node->blocks()[condition.constant.toBool() ? 0 : 1], {});
}

FailureOr<SmallVector<Item>> GraphImporter::importLoop(torch::jit::Node *node,
                                                       Location loc) {
  FailureOr<int64_t> trips =
      asInt(items[node->input(0)], loc, "prim::Loop's trip count");
  if (failed(trips))
    return failure();
  SmallVector<Item> carried;
  for (torch::jit::Value *input : node->inputs().slice(2))
    carried.push_back(items[input]);
  Item condition = items[node->input(1)];
  for (int64_t iteration = 0;; ++iteration) {
    FailureOr<bool> goOn = asBool(
        condition, loc,
        "prim::Loop's condition (a loop that depends on the inputs' values "
        "cannot be unrolled into pp's static program)");
    if (failed(goOn))
      return failure();
    if (!*goOn || iteration >= *trips)
      return carried;
    if (++foldedIterations > kMaxFoldedIterations)
      return emitError(loc)
             << "prim::Loop (node '" << nodeNames.lookup(node) << "', "
             << positionOf(node) << ") takes pp past its budget of "
             << kMaxFoldedIterations
             << " loop iterations unrolled at import (all loops' together, "
                "nested ones' included): pp unrolls loops into its static "
                "program; loop fewer times, or compute with tensor ops";
    SmallVector<Item> inputs{Item::ofConstant(iteration)};
    inputs.append(carried.begin(), carried.end());
    FailureOr<SmallVector<Item>> outputs =
        importBlock(node->blocks()[0], inputs);
    if (failed(outputs))
      return failure();
    condition = (*outputs)[0];
    carried.assign(outputs->begin() + 1, outputs->end());
  }
}

FailureOr<SmallVector<Item>>
GraphImporter::importBlock(torch::jit::Block *block, ArrayRef<Item> inputs) {
  for (auto [value, item] : llvm::zip_equal(block->inputs(), inputs))
    items[value] = item;
  for (torch::jit::Node *node : block->nodes())
    if (failed(importNode(node)))
      return failure();
  SmallVector<Item> outputs;
  for (torch::jit::Value *output : block->outputs())
    outputs.push_back(items[output]);
  return outputs;
}

/// Questions about a tensor that its shape, element type, device and
/// gradient requirement answer, evaluated on stand-ins of computed tensors.
bool isMetadataQuery(torch::jit::NodeKind kind) {
  static const llvm::StringSet<> queries = {
      "aten::size",         "aten::dim",         "aten::len",
      "aten::numel",        "aten::is_floating_point",
      "aten::is_complex",   "aten::__is__",      "aten::__isnot__",
      "prim::dtype",        "prim::device",      "prim::layout",
      "prim::requires_grad", "prim::is_cuda",    "prim::is_nested",
      "prim::is_sparse",    "prim::is_mkldnn",   "prim::is_quantized",
      "prim::is_meta",      "prim::is_xpu",      "prim::is_vulkan",
      "prim::is_ipu",       "prim::is_mps",      "prim::is_sparse_csr",
      "prim::is_ort",       "prim::is_hpu",      "prim::is_lazy"};
  return queries.contains(kind.toQualString());
}

/// Factories whose values depend only on a tensor operand's shape and
/// element type (`zeros_like(x)`, `x.new_ones(sizes)`), never on its values:
/// evaluated at import on stand-ins of computed tensors.
bool isShapeFactory(torch::jit::NodeKind kind) {
  static const llvm::StringSet<> factories = {
      "aten::zeros_like", "aten::ones_like", "aten::full_like",
      "aten::new_zeros",  "aten::new_ones",  "aten::new_full"};
  return factories.contains(kind.toQualString());
}

/// True when `item` is known at import: a constant, or a list of them.
bool isKnown(const Item &item) {
  return item.isConstant() ||
         (item.isList() && llvm::all_of(*item.elements, [](const Item &e) {
            return e.isConstant();
          }));
}

/// True when `node` changes something besides its outputs (an in-place op,
/// prim::SetAttr, an op without outputs): pp cannot leave it out when
/// nothing uses its outputs.
bool hasSideEffects(torch::jit::Node *node) {
  if (node->outputs().empty() || node->kind() == c10::prim::SetAttr)
    return true;
  if (const c10::FunctionSchema *schema = node->maybeSchema())
    for (const c10::Argument &argument : schema->arguments())
      if (argument.alias_info() && argument.alias_info()->isWrite())
        return true;
  return false;
}

LogicalResult GraphImporter::importNode(torch::jit::Node *node) {
  torch::jit::NodeKind kind = node->kind();
  std::string name = uniqueName(node);
  nodeNames[node] = name;
  Location loc = locationOf(node, name);
  currentNode = builder.getStringAttr(name);
  Block::iterator firstNew = std::prev(body->end());
  bool wasEmpty = body->empty();

  FailureOr<SmallVector<Item>> outputs = failure();
  SmallVector<Item> inputs;
  for (torch::jit::Value *input : node->inputs())
    inputs.push_back(items[input]);
  bool known = llvm::all_of(inputs, isKnown);
  // The inputs' LibTorch values, computed tensors replaced by stand-ins on
  // `device`.
  auto constants = [&](at::Device device = at::kCPU) {
    SmallVector<c10::IValue> values;
    for (auto [value, item] : llvm::zip_equal(node->inputs(), inputs))
      values.push_back(item.isTensor()
                           ? c10::IValue(standIn(item.tensor, device))
                           : toIValue(item, value->type()));
    return values;
  };
  std::string kindName = kind.toQualString();

  for (const Item &input : inputs) {
    if (!input.unsupported)
      continue;
    if (kind == c10::prim::If || kind == c10::prim::Loop) {
      return emitError(loc)
             << kindName
             << " whose condition depends on the inputs' values (through "
             << input.unsupported->kind().toQualString() << " at "
             << positionOf(input.unsupported)
             << "): pp compiles one static program; conditions on sizes, "
                "module attributes and constants are folded at import";
    }
    if (rules().count(kindName) || hasSideEffects(node))
      return unsupportedOp(input.unsupported,
                           locationOf(input.unsupported,
                                      nodeNames.lookup(input.unsupported)));
    // Another op pp cannot compute either (aten::Bool of a comparison,
    // say): the error waits for a use that needs the value.
    for (torch::jit::Value *output : node->outputs())
      items[output] = input;
    return success();
  }

  if (kind == c10::prim::Constant) {
    std::optional<c10::IValue> value = torch::jit::toIValue(node->output());
    outputs = SmallVector<Item>{
        Item::ofConstant(value ? *value : c10::IValue())};
  } else if (kind == c10::prim::GetAttr) {
    outputs = importGetAttr(node, loc);
  } else if (kind == c10::prim::CallMethod ||
             kind == c10::prim::CallFunction) {
    outputs = importCall(node, loc, inputs);
  } else if (kind == c10::prim::If) {
    outputs = importIf(node, loc);
  } else if (kind == c10::prim::Loop) {
    outputs = importLoop(node, loc);
  } else if (kind == c10::prim::RaiseException) {
    std::string message =
        inputs.empty() || !inputs[0].isConstant() ||
                !inputs[0].constant.isString()
            ? std::string("(no message)")
            : inputs[0].constant.toStringRef();
    return emitError(loc) << "the model raises an exception for these input "
                             "shapes: "
                          << message;
  } else if (kind == c10::aten::warn || kind == c10::prim::Print) {
    outputs = SmallVector<Item>{};
  } else if (kind == c10::prim::ListConstruct ||
             kind == c10::prim::TupleConstruct) {
    outputs = SmallVector<Item>{
        Item::ofList(std::vector<Item>(inputs.begin(), inputs.end()))};
  } else if (kind == c10::prim::ListUnpack ||
             kind == c10::prim::TupleUnpack) {
    outputs = asItems(inputs[0], loc, kindName);
  } else if ((kind == c10::aten::__getitem__ ||
              kind == c10::prim::TupleIndex) &&
             inputs[0].isList()) {
    FailureOr<int64_t> index = asInt(inputs[1], loc, "a list index");
    if (failed(index))
      return failure();
    int64_t size = inputs[0].elements->size();
    if (*index < -size || *index >= size)
      return emitError(loc) << "list index " << *index
                            << " is out of range for " << size << " items";
    outputs = SmallVector<Item>{
        (*inputs[0].elements)[*index < 0 ? *index + size : *index]};
  } else if (kind == c10::aten::append && inputs[0].isList()) {
    inputs[0].elements->push_back(inputs[1]);
    outputs = SmallVector<Item>{inputs[0]};
  } else if (kind == c10::aten::len && inputs[0].isList()) {
    outputs = SmallVector<Item>{Item::ofConstant(
        static_cast<int64_t>(inputs[0].elements->size()))};
  } else if (known && !node->isNondeterministic() &&
             node->maybeOperator()) {
    outputs = evaluate(node, loc, constants());
  } else if ((isMetadataQuery(kind) || isShapeFactory(kind)) &&
             node->maybeOperator() &&
             llvm::all_of(inputs, [](const Item &item) {
               return item.isTensor() || isKnown(item);
             })) {
    bool query = isMetadataQuery(kind);
    outputs = evaluate(node, loc, constants(query ? at::kMeta : at::kCPU));
    // The program's tensors are CPU tensors as far as the model can tell, so
    // that what it creates on an input's device holds values pp can read.
    if (query && succeeded(outputs))
      for (Item &output : *outputs) {
        if (output.constant.isDevice())
          output.constant = c10::Device(at::kCPU);
        if (kindName == "prim::is_meta")
          output.constant = false;
      }
  } else {
    const auto &all = rules();
    auto rule = all.find(kindName);
    if (rule == all.end() && hasSideEffects(node))
      return unsupportedOp(node, loc);
    if (rule == all.end()) {
      Item unsupported;
      unsupported.unsupported = node;
      outputs = SmallVector<Item>(node->outputs().size(), unsupported);
    } else {
      outputs = rule->second(*this, node, loc, inputs);
    }
  }
  if (failed(outputs))
    return failure();
  if (outputs->size() != node->outputs().size())
    return emitError(loc) << kindName << " gave " << outputs->size()
                          << " values for its " << node->outputs().size()
                          << " outputs";
  // Ops of nested blocks (a folded prim::If's) keep their own node's name.
  for (Operation &op : llvm::make_range(
           wasEmpty ? body->begin() : std::next(firstNew), body->end()))
    if (!op.hasAttr(kNodeAttrName))
      op.setAttr(kNodeAttrName, builder.getStringAttr(name));
  for (auto [value, item] : llvm::zip_equal(node->outputs(), *outputs))
    items[value] = item;
  return success();
}

//===----------------------------------------------------------------------===//
// Op rules
//===----------------------------------------------------------------------===//

using Items = SmallVector<Item>;
using G = GraphImporter;

/// The outputs of a node with the one tensor output `value`.
FailureOr<Items> single(FailureOr<Value> value) {
  if (failed(value))
    return failure();
  return Items{Item::ofTensor(*value)};
}

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// A rule for the unary nn op OpTy.
template <typename OpTy>
FailureOr<Items> unary(G &g, torch::jit::Node *, Location loc,
                       ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  if (failed(x))
    return failure();
  return single(g.create<OpTy>(loc, *x));
}

/// A rule for the binary nn op OpTy; `alpha` scales the second operand
/// (aten::add, aten::sub) and `reversed` swaps the operands (aten::rsub).
template <typename OpTy, bool hasAlpha = false, bool reversed = false>
FailureOr<Items> binary(G &g, torch::jit::Node *node, Location loc,
                        ArrayRef<Item> in) {
  FailureOr<SmallVector<Value>> operands = g.promote(in.take_front(2), loc);
  if (failed(operands))
    return failure();
  Value lhs = (*operands)[0], rhs = (*operands)[1];
  if (hasAlpha && in.size() > 2) {
    FailureOr<double> alpha = g.asDouble(in[2], loc, "alpha");
    if (failed(alpha))
      return failure();
    if (*alpha != 1.0)
      rhs = nn::MulOp::create(g.getBuilder(), loc, rhs,
                              g.scalarConstant(*alpha,
                                               getElementTypeOrSelf(rhs), loc));
  }
  if (reversed)
    std::swap(lhs, rhs);
  return single(g.create<OpTy>(loc, {lhs, rhs}));
}

FailureOr<Items> divide(G &g, torch::jit::Node *node, Location loc,
                        ArrayRef<Item> in) {
  if (in.size() > 2 && !(in[2].isConstant() && in[2].constant.isNone()))
    return emitError(loc) << "aten::div with a rounding mode on computed "
                             "tensors is not supported";
  FailureOr<SmallVector<Value>> operands = g.promote(in.take_front(2), loc);
  if (failed(operands))
    return failure();
  // True division: integers divide as floats.
  Type type = getElementTypeOrSelf((*operands)[0]);
  if (!isa<FloatType>(type))
    type = g.getBuilder().getF32Type();
  return single(g.create<nn::DivOp>(
      loc, {g.castTo((*operands)[0], type, loc),
            g.castTo((*operands)[1], type, loc)}));
}

FailureOr<Items> silu(G &g, torch::jit::Node *, Location loc,
                      ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  if (failed(x))
    return failure();
  FailureOr<Value> sigmoid = g.create<nn::SigmoidOp>(loc, *x);
  if (failed(sigmoid))
    return failure();
  return single(g.create<nn::MulOp>(loc, {*x, *sigmoid}));
}

FailureOr<Items> gelu(G &g, torch::jit::Node *, Location loc,
                      ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  if (failed(x))
    return failure();
  std::string approximate = "none";
  if (in.size() > 1 && in[1].isConstant() && in[1].constant.isString())
    approximate = in[1].constant.toStringRef();
  nn::GeluOp::Properties properties;
  if (approximate == "tanh")
    properties.approximate = nn::GeluApproximationAttr::get(
        g.getBuilder().getContext(), nn::GeluApproximation::tanh);
  else if (approximate != "none")
    return emitError(loc) << "aten::gelu approximation '" << approximate
                          << "' is neither 'none' nor 'tanh'";
  return single(g.create<nn::GeluOp>(loc, *x, properties));
}

FailureOr<Items> where(G &g, torch::jit::Node *, Location loc,
                       ArrayRef<Item> in) {
  FailureOr<Value> condition = g.asTensor(in[0], loc);
  FailureOr<SmallVector<Value>> values = g.promote(in.drop_front(), loc);
  if (failed(condition) || failed(values))
    return failure();
  return single(g.create<nn::WhereOp>(
      loc, {*condition, (*values)[0], (*values)[1]}));
}

FailureOr<Items> maskedFill(G &g, torch::jit::Node *, Location loc,
                            ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<Value> mask = g.asTensor(in[1], loc);
  if (failed(x) || failed(mask))
    return failure();
  if (!getElementTypeOrSelf(*mask).isInteger(1))
    return emitError(loc) << "aten::masked_fill's mask must be bool, found "
                          << mask->getType();
  FailureOr<double> fill = g.asDouble(in[2], loc, "masked_fill's value");
  if (failed(fill))
    return failure();
  Value value = g.scalarConstant(*fill, getElementTypeOrSelf(*x), loc);
  return single(g.create<nn::WhereOp>(loc, {*mask, value, *x}));
}

/// aten::linear(input, weight, bias?): `input * weight^T (+ bias)`, the
/// matmul and add ONNX's exporter writes for it, so both frontends give
/// nn.Linear the same ops.
FailureOr<Items> linear(G &g, torch::jit::Node *, Location loc,
                        ArrayRef<Item> in) {
  FailureOr<Value> input = g.asTensor(in[0], loc);
  FailureOr<Value> weight = g.asTensor(in[1], loc);
  if (failed(input) || failed(weight))
    return failure();
  nn::MatmulOp::Properties transposeWeight;
  transposeWeight.transpose_rhs = g.getBuilder().getUnitAttr();
  FailureOr<Value> result =
      g.create<nn::MatmulOp>(loc, {*input, *weight}, transposeWeight);
  if (failed(result) || in.size() < 3 ||
      (in[2].isConstant() && in[2].constant.isNone()))
    return single(result);
  FailureOr<Value> bias = g.asTensor(in[2], loc);
  if (failed(bias))
    return failure();
  return single(g.create<nn::AddOp>(loc, {*result, *bias}));
}

/// aten::matmul and aten::bmm.
FailureOr<Value> matmul(G &g, const Item &lhsItem, const Item &rhsItem,
                        Location loc) {
  FailureOr<Value> lhs = g.asTensor(lhsItem, loc);
  FailureOr<Value> rhs = g.asTensor(rhsItem, loc);
  if (failed(lhs) || failed(rhs))
    return failure();
  for (Value operand : {*lhs, *rhs})
    if (typeOf(operand).getRank() < 2)
      return emitError(loc) << "a matrix product with a rank-1 operand ("
                            << operand.getType()
                            << ") is not supported; unsqueeze it to rank 2";
  return g.create<nn::MatmulOp>(loc, {*lhs, *rhs});
}

FailureOr<Items> matmulRule(G &g, torch::jit::Node *, Location loc,
                            ArrayRef<Item> in) {
  return single(matmul(g, in[0], in[1], loc));
}

/// aten::addmm and aten::baddbmm: beta * input + alpha * (a @ b).
FailureOr<Items> addMatmul(G &g, torch::jit::Node *, Location loc,
                           ArrayRef<Item> in) {
  FailureOr<Value> product = matmul(g, in[1], in[2], loc);
  FailureOr<Value> input = g.asTensor(in[0], loc);
  FailureOr<double> beta = g.asDouble(in[3], loc, "beta");
  FailureOr<double> alpha = g.asDouble(in[4], loc, "alpha");
  if (failed(product) || failed(input) || failed(beta) || failed(alpha))
    return failure();
  Type type = getElementTypeOrSelf(*product);
  OpBuilder &b = g.getBuilder();
  Value scaled = *product, bias = *input;
  if (*alpha != 1.0)
    scaled = nn::MulOp::create(b, loc, scaled,
                               g.scalarConstant(*alpha, type, loc));
  if (*beta == 0.0)
    return Items{Item::ofTensor(scaled)};
  if (*beta != 1.0)
    bias = nn::MulOp::create(b, loc, bias, g.scalarConstant(*beta, type, loc));
  return single(g.create<nn::AddOp>(loc, {bias, scaled}));
}

/// aten::embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse).
FailureOr<Items> embedding(G &g, torch::jit::Node *, Location loc,
                           ArrayRef<Item> in) {
  FailureOr<Value> weight = g.asTensor(in[0], loc);
  FailureOr<Value> indices = g.asTensor(in[1], loc);
  FailureOr<int64_t> padding = g.asInt(in[2], loc, "padding_idx");
  if (failed(weight) || failed(indices) || failed(padding))
    return failure();
  // The padding row gets no gradient in PyTorch. nn.Embedding makes it
  // zero, and then it stays zero under any optimizer (no gradient, no
  // moments, nothing to decay): the weight times a constant mask that is 0
  // on that row is the same, its gradient too.
  if (*padding >= 0) {
    RankedTensorType type = typeOf(*weight);
    int64_t rows = type.getRank() == 2 ? type.getDimSize(0) : 0;
    at::Tensor initial = g.parameterValue(*weight);
    if (*padding >= rows || !initial.defined() ||
        initial.select(0, *padding).count_nonzero().item<int64_t>() != 0)
      return emitError(loc)
             << "aten::embedding with padding_idx " << *padding
             << " needs a parameter table of at least " << *padding + 1
             << " rows whose padding row is zero, as nn.Embedding makes it "
                "(pp keeps the row at zero, which gives it no gradient, as "
                "PyTorch does); zero the row or drop padding_idx";
    Type elementType = type.getElementType();
    SmallVector<Attribute> keep(
        rows, g.getBuilder().getFloatAttr(elementType, 1.0));
    keep[*padding] = g.getBuilder().getFloatAttr(elementType, 0.0);
    Value mask = arith::ConstantOp::create(
        g.getBuilder(), loc,
        DenseElementsAttr::get(RankedTensorType::get({rows, 1}, elementType),
                               keep));
    weight = g.create<nn::MulOp>(loc, {*weight, mask});
    if (failed(weight))
      return failure();
  }
  nn::GatherOp::Properties properties;
  properties.axis = g.getBuilder().getI64IntegerAttr(0);
  return single(g.create<nn::GatherOp>(loc, {*weight, *indices}, properties));
}

/// aten::layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn).
FailureOr<Items> layerNorm(G &g, torch::jit::Node *, Location loc,
                           ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<SmallVector<int64_t>> shape =
      g.asInts(in[1], loc, "normalized_shape");
  FailureOr<double> epsilon = g.asDouble(in[4], loc, "eps");
  if (failed(x) || failed(shape) || failed(epsilon))
    return failure();
  Value affine[2];
  for (int i = 0; i < 2; ++i) {
    if (in[2 + i].isConstant() && in[2 + i].constant.isNone())
      continue;
    FailureOr<Value> value = g.asTensor(in[2 + i], loc);
    if (failed(value))
      return failure();
    affine[i] = *value;
  }
  int64_t axis = typeOf(*x).getRank() - static_cast<int64_t>(shape->size());
  if (axis < 0)
    return emitError(loc) << "aten::layer_norm normalizes " << shape->size()
                          << " dimensions of " << x->getType();
  OpBuilder &b = g.getBuilder();
  return Items{Item::ofTensor(nn::LayerNormOp::create(
      b, loc, x->getType(), *x, affine[0], affine[1],
      b.getI64IntegerAttr(axis), b.getF64FloatAttr(*epsilon)))};
}

/// `x` computed in the dtype argument `dtype` of `node` (a reduction's or
/// a softmax's `dtype=`): cast to that float type first, as PyTorch does;
/// `x` unchanged when `dtype` is None.
FailureOr<Value> inDtype(G &g, torch::jit::Node *node, Value x,
                         const Item &dtype, Location loc) {
  if (dtype.isConstant() && dtype.constant.isNone())
    return x;
  Type type;
  if (dtype.isConstant() && dtype.constant.isInt())
    type = convertScalarType(
        static_cast<at::ScalarType>(dtype.constant.toInt()), g.getBuilder());
  if (!type || !isa<FloatType>(type))
    return emitError(loc) << node->kind().toQualString()
                          << "'s dtype must be a float dtype known at import "
                             "(float32, float64, float16 or bfloat16)";
  return g.castTo(x, type, loc);
}

/// aten::softmax and aten::log_softmax(input, dim, dtype?).
template <typename OpTy>
FailureOr<Items> softmax(G &g, torch::jit::Node *node, Location loc,
                         ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<int64_t> dim = g.asInt(in[1], loc, "the softmax dimension");
  if (failed(x) || failed(dim))
    return failure();
  if (in.size() > 2)
    x = inDtype(g, node, *x, in[2], loc);
  if (failed(x))
    return failure();
  typename OpTy::Properties properties;
  properties.axis = g.getBuilder().getI64IntegerAttr(*dim);
  return single(g.create<OpTy>(loc, *x, properties));
}

/// aten::mean and aten::sum, over all dimensions (input, dtype?) or over
/// some (input, dims?, keepdim, dtype?).
template <typename OpTy>
FailureOr<Items> reduce(G &g, torch::jit::Node *node, Location loc,
                        ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  bool keepDims = false;
  const Item &dtype = in.back();
  if (in.size() >= 4) {
    if (!(in[1].isConstant() && in[1].constant.isNone())) {
      FailureOr<SmallVector<int64_t>> dims = g.asInts(in[1], loc, "dims");
      if (failed(dims))
        return failure();
      if (!dims->empty())
        axes = *dims;
    }
    FailureOr<bool> keep = g.asBool(in[2], loc, "keepdim");
    if (failed(keep))
      return failure();
    keepDims = *keep;
  }
  x = inDtype(g, node, *x, dtype, loc);
  if (failed(x))
    return failure();
  for (int64_t &axis : axes) {
    FailureOr<int64_t> normalized = g.normalizedAxis(axis, rank, loc);
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  typename OpTy::Properties properties;
  properties.axes = g.getBuilder().getDenseI64ArrayAttr(axes);
  if (keepDims)
    properties.keep_dims = g.getBuilder().getUnitAttr();
  return single(g.create<OpTy>(loc, *x, properties));
}

FailureOr<Value> reshape(G &g, Value x, ArrayRef<int64_t> shape,
                         Location loc) {
  if (typeOf(x).getShape() == shape)
    return x;
  nn::ReshapeOp::Properties properties;
  properties.shape = g.getBuilder().getDenseI64ArrayAttr(shape);
  return g.create<nn::ReshapeOp>(loc, x, properties);
}

/// aten::view and aten::reshape(input, shape), one size possibly -1.
FailureOr<Items> view(G &g, torch::jit::Node *, Location loc,
                      ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<SmallVector<int64_t>> shape = g.asInts(in[1], loc, "the shape");
  if (failed(x) || failed(shape))
    return failure();
  int64_t known = 1, inferred = -1;
  for (auto [index, size] : llvm::enumerate(*shape)) {
    if (size == -1 && inferred < 0)
      inferred = index;
    else if (size < 0)
      return emitError(loc) << "shape [" << llvm::join(llvm::map_range(*shape, [](int64_t s) { return std::to_string(s); }), ", ")
                            << "] has a negative size other than one -1";
    else
      known *= size;
  }
  int64_t count = typeOf(*x).getNumElements();
  if (inferred >= 0) {
    if (known == 0 || count % known != 0)
      return emitError(loc) << "cannot view " << x->getType()
                            << " with a -1 size";
    (*shape)[inferred] = count / known;
  }
  return single(reshape(g, *x, *shape, loc));
}

/// aten::flatten(input, start_dim, end_dim).
FailureOr<Items> flatten(G &g, torch::jit::Node *, Location loc,
                         ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<int64_t> start = g.asInt(in[1], loc, "start_dim");
  FailureOr<int64_t> end = g.asInt(in[2], loc, "end_dim");
  if (failed(x) || failed(start) || failed(end))
    return failure();
  ArrayRef<int64_t> sizes = typeOf(*x).getShape();
  int64_t rank = sizes.size();
  if (rank == 0)
    return single(reshape(g, *x, {1}, loc));
  FailureOr<int64_t> first = g.normalizedAxis(*start, rank, loc);
  FailureOr<int64_t> last = g.normalizedAxis(*end, rank, loc);
  if (failed(first) || failed(last))
    return failure();
  SmallVector<int64_t> shape(sizes.take_front(*first));
  int64_t product = 1;
  for (int64_t d = *first; d <= *last; ++d)
    product *= sizes[d];
  shape.push_back(product);
  llvm::append_range(shape, sizes.drop_front(*last + 1));
  return single(reshape(g, *x, shape, loc));
}

FailureOr<Value> transpose(G &g, Value x, ArrayRef<int64_t> permutation,
                           Location loc) {
  if (llvm::equal(permutation, llvm::seq<int64_t>(0, permutation.size())))
    return x;
  nn::TransposeOp::Properties properties;
  properties.permutation = g.getBuilder().getDenseI64ArrayAttr(permutation);
  return g.create<nn::TransposeOp>(loc, x, properties);
}

/// aten::transpose(input, dim0, dim1) and aten::t(input).
FailureOr<Items> transposeRule(G &g, torch::jit::Node *, Location loc,
                               ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  SmallVector<int64_t> permutation =
      llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (in.size() == 1) { // aten::t
    if (rank == 2)
      std::swap(permutation[0], permutation[1]);
    else if (rank > 2)
      return emitError(loc) << "aten::t of " << x->getType()
                            << ": it takes rank 2 or less";
    return single(transpose(g, *x, permutation, loc));
  }
  FailureOr<int64_t> d0 = g.asInt(in[1], loc, "dim0");
  FailureOr<int64_t> d1 = g.asInt(in[2], loc, "dim1");
  if (failed(d0) || failed(d1))
    return failure();
  FailureOr<int64_t> a = g.normalizedAxis(*d0, rank, loc);
  FailureOr<int64_t> b = g.normalizedAxis(*d1, rank, loc);
  if (failed(a) || failed(b))
    return failure();
  std::swap(permutation[*a], permutation[*b]);
  return single(transpose(g, *x, permutation, loc));
}

/// aten::permute(input, dims).
FailureOr<Items> permute(G &g, torch::jit::Node *, Location loc,
                         ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<SmallVector<int64_t>> dims = g.asInts(in[1], loc, "dims");
  if (failed(x) || failed(dims))
    return failure();
  for (int64_t &dim : *dims) {
    FailureOr<int64_t> axis =
        g.normalizedAxis(dim, typeOf(*x).getRank(), loc);
    if (failed(axis))
      return failure();
    dim = *axis;
  }
  return single(transpose(g, *x, *dims, loc));
}

/// Ops that only copy or re-lay out memory (aten::contiguous, aten::clone)
/// or refine a type (prim::unchecked_cast of an Optional[Tensor]).
FailureOr<Items> identity(G &g, torch::jit::Node *, Location loc,
                          ArrayRef<Item> in) {
  return single(g.asTensor(in[0], loc));
}

/// aten::unsqueeze(input, dim).
FailureOr<Items> unsqueeze(G &g, torch::jit::Node *, Location loc,
                           ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<int64_t> dim = g.asInt(in[1], loc, "dim");
  if (failed(x) || failed(dim))
    return failure();
  SmallVector<int64_t> shape(typeOf(*x).getShape());
  FailureOr<int64_t> axis = g.normalizedAxis(*dim, shape.size() + 1, loc);
  if (failed(axis))
    return failure();
  shape.insert(shape.begin() + *axis, 1);
  return single(reshape(g, *x, shape, loc));
}

/// aten::squeeze(input) and aten::squeeze(input, dim).
FailureOr<Items> squeeze(G &g, torch::jit::Node *, Location loc,
                         ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> sizes = typeOf(*x).getShape();
  std::optional<int64_t> only;
  if (in.size() > 1) {
    FailureOr<int64_t> dim = g.asInt(in[1], loc, "dim");
    if (failed(dim))
      return failure();
    FailureOr<int64_t> axis = g.normalizedAxis(*dim, sizes.size(), loc);
    if (failed(axis))
      return failure();
    only = *axis;
  }
  SmallVector<int64_t> shape;
  for (auto [d, size] : llvm::enumerate(sizes))
    if (size != 1 || (only && *only != static_cast<int64_t>(d)))
      shape.push_back(size);
  return single(reshape(g, *x, shape, loc));
}

/// aten::expand(input, sizes, implicit): -1 keeps a size.
FailureOr<Items> expand(G &g, torch::jit::Node *, Location loc,
                        ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<SmallVector<int64_t>> sizes = g.asInts(in[1], loc, "sizes");
  if (failed(x) || failed(sizes))
    return failure();
  ArrayRef<int64_t> current = typeOf(*x).getShape();
  int64_t offset = static_cast<int64_t>(sizes->size()) - current.size();
  for (auto [d, size] : llvm::enumerate(*sizes))
    if (size == -1 && static_cast<int64_t>(d) >= offset)
      size = current[d - offset];
  if (typeOf(*x).getShape() == ArrayRef<int64_t>(*sizes))
    return Items{Item::ofTensor(*x)};
  nn::BroadcastToOp::Properties properties;
  properties.shape = g.getBuilder().getDenseI64ArrayAttr(*sizes);
  return single(g.create<nn::BroadcastToOp>(loc, *x, properties));
}

/// The pieces of `x` of the given sizes along `dim`.
FailureOr<Items> splitInto(G &g, Value x, int64_t dim,
                           ArrayRef<int64_t> sizes, Location loc) {
  nn::SplitOp::Properties properties;
  properties.axis = g.getBuilder().getI64IntegerAttr(dim);
  properties.sizes = g.getBuilder().getDenseI64ArrayAttr(sizes);
  FailureOr<Operation *> split = g.createOp<nn::SplitOp>(loc, x, properties);
  if (failed(split))
    return failure();
  std::vector<Item> pieces;
  for (Value piece : (*split)->getResults())
    pieces.push_back(Item::ofTensor(piece));
  return Items{Item::ofList(std::move(pieces))};
}

/// aten::split(input, size or sizes, dim), aten::split_with_sizes and
/// aten::chunk(input, chunks, dim).
template <bool chunk>
FailureOr<Items> split(G &g, torch::jit::Node *, Location loc,
                       ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<int64_t> dim = g.asInt(in[2], loc, "dim");
  if (failed(x) || failed(dim))
    return failure();
  FailureOr<int64_t> axis = g.normalizedAxis(*dim, typeOf(*x).getRank(), loc);
  if (failed(axis))
    return failure();
  int64_t total = typeOf(*x).getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (!chunk && !(in[1].isConstant() && in[1].constant.isInt())) {
    FailureOr<SmallVector<int64_t>> given = g.asInts(in[1], loc, "sizes");
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    FailureOr<int64_t> number = g.asInt(in[1], loc, "the split size");
    if (failed(number))
      return failure();
    if (*number <= 0)
      return emitError(loc) << "split size or chunk count " << *number
                            << " must be positive";
    int64_t size = chunk ? (total + *number - 1) / *number : *number;
    for (int64_t start = 0; start < total; start += size)
      sizes.push_back(std::min(size, total - start));
    if (sizes.empty())
      sizes.push_back(0);
  }
  return splitInto(g, *x, *axis, sizes, loc);
}

/// aten::cat(tensors, dim).
FailureOr<Items> concat(G &g, torch::jit::Node *, Location loc,
                        ArrayRef<Item> in) {
  FailureOr<SmallVector<Item>> tensors = g.asItems(in[0], loc, "cat's tensors");
  FailureOr<int64_t> dim = g.asInt(in[1], loc, "dim");
  if (failed(tensors) || failed(dim))
    return failure();
  SmallVector<Value> operands;
  for (const Item &item : *tensors) {
    FailureOr<Value> operand = g.asTensor(item, loc);
    if (failed(operand))
      return failure();
    operands.push_back(*operand);
  }
  if (operands.size() == 1)
    return Items{Item::ofTensor(operands[0])};
  nn::ConcatOp::Properties properties;
  properties.axis = g.getBuilder().getI64IntegerAttr(*dim);
  return single(g.create<nn::ConcatOp>(loc, operands, properties));
}

/// An nn.slice of `x` keeping [start, end) by `step` along `axis`.
FailureOr<Value> sliceAlong(G &g, Value x, int64_t axis, int64_t start,
                            int64_t end, int64_t step, Location loc) {
  ArrayRef<int64_t> sizes = typeOf(x).getShape();
  SmallVector<int64_t> starts(sizes.size(), 0), limits(sizes),
      strides(sizes.size(), 1);
  starts[axis] = start;
  limits[axis] = std::max(start, end);
  strides[axis] = step;
  if (start == 0 && end == sizes[axis] && step == 1)
    return x;
  nn::SliceOp::Properties properties;
  OpBuilder &b = g.getBuilder();
  properties.starts = b.getDenseI64ArrayAttr(starts);
  properties.limits = b.getDenseI64ArrayAttr(limits);
  properties.strides = b.getDenseI64ArrayAttr(strides);
  return g.create<nn::SliceOp>(loc, x, properties);
}

/// `index` of a dimension of `size` as Python clamps slice bounds.
int64_t clampIndex(int64_t index, int64_t size) {
  if (index < 0)
    index += size;
  return std::clamp<int64_t>(index, 0, size);
}

/// aten::slice(input, dim, start?, end?, step).
FailureOr<Items> slice(G &g, torch::jit::Node *, Location loc,
                       ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<int64_t> dim = g.asInt(in[1], loc, "dim");
  FailureOr<int64_t> step = g.asInt(in[4], loc, "step");
  if (failed(x) || failed(dim) || failed(step))
    return failure();
  FailureOr<int64_t> axis = g.normalizedAxis(*dim, typeOf(*x).getRank(), loc);
  if (failed(axis))
    return failure();
  int64_t size = typeOf(*x).getDimSize(*axis);
  int64_t bounds[2] = {0, size};
  for (int i = 0; i < 2; ++i) {
    if (in[2 + i].isConstant() && in[2 + i].constant.isNone())
      continue;
    FailureOr<int64_t> bound = g.asInt(in[2 + i], loc, "a slice bound");
    if (failed(bound))
      return failure();
    bounds[i] = clampIndex(*bound, size);
  }
  if (*step < 1)
    return emitError(loc) << "slice step " << *step << " must be positive";
  return single(sliceAlong(g, *x, *axis, bounds[0], bounds[1], *step, loc));
}

/// aten::select(input, dim, index).
FailureOr<Items> select(G &g, torch::jit::Node *, Location loc,
                        ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<int64_t> dim = g.asInt(in[1], loc, "dim");
  FailureOr<int64_t> index = g.asInt(in[2], loc, "index");
  if (failed(x) || failed(dim) || failed(index))
    return failure();
  FailureOr<int64_t> axis = g.normalizedAxis(*dim, typeOf(*x).getRank(), loc);
  if (failed(axis))
    return failure();
  int64_t size = typeOf(*x).getDimSize(*axis);
  if (*index < -size || *index >= size)
    return emitError(loc) << "index " << *index << " is out of range for size "
                          << size;
  int64_t start = *index < 0 ? *index + size : *index;
  FailureOr<Value> piece = sliceAlong(g, *x, *axis, start, start + 1, 1, loc);
  if (failed(piece))
    return failure();
  SmallVector<int64_t> shape(typeOf(*x).getShape());
  shape.erase(shape.begin() + *axis);
  return single(reshape(g, *piece, shape, loc));
}

/// aten::triu and aten::tril(input, diagonal).
template <bool upper>
FailureOr<Items> trilu(G &g, torch::jit::Node *, Location loc,
                       ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<int64_t> diagonal = g.asInt(in[1], loc, "diagonal");
  if (failed(x) || failed(diagonal))
    return failure();
  nn::TriluOp::Properties properties;
  properties.diagonal = g.getBuilder().getI64IntegerAttr(*diagonal);
  if (upper)
    properties.upper = g.getBuilder().getUnitAttr();
  return single(g.create<nn::TriluOp>(loc, *x, properties));
}

/// aten::dropout(input, p, train): nn.dropout while training, else the
/// identity.
FailureOr<Items> dropout(G &g, torch::jit::Node *, Location loc,
                         ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  FailureOr<double> ratio = g.asDouble(in[1], loc, "the dropout ratio");
  FailureOr<bool> train = g.asBool(in[2], loc, "dropout's train flag");
  if (failed(x) || failed(ratio) || failed(train))
    return failure();
  if (!*train || *ratio == 0.0)
    return Items{Item::ofTensor(*x)};
  nn::DropoutOp::Properties properties;
  OpBuilder &b = g.getBuilder();
  properties.ratio = b.getF64FloatAttr(*ratio);
  properties.key = b.getI64IntegerAttr(
      static_cast<int64_t>(nn::dropoutKey(g.nodeName())));
  return single(g.create<nn::DropoutOp>(loc, *x, properties));
}

/// aten::to (any overload: the dtype, or the type of another tensor) and
/// aten::type_as.
FailureOr<Items> convert(G &g, torch::jit::Node *node, Location loc,
                         ArrayRef<Item> in) {
  FailureOr<Value> x = g.asTensor(in[0], loc);
  if (failed(x))
    return failure();
  Type target;
  const c10::FunctionSchema &schema = node->schema();
  for (auto [argument, item] : llvm::zip(schema.arguments(), in)) {
    if (argument.name() == "dtype" && item.isConstant() &&
        item.constant.isInt())
      target = convertScalarType(
          static_cast<at::ScalarType>(item.constant.toInt()),
          g.getBuilder());
    if (argument.name() == "other") {
      FailureOr<Value> other = g.asTensor(item, loc);
      if (failed(other))
        return failure();
      target = getElementTypeOrSelf(*other);
    }
  }
  if (!target)
    return Items{Item::ofTensor(*x)}; // A move to a device.
  return Items{Item::ofTensor(g.castTo(*x, target, loc))};
}

} // namespace

const std::map<std::string, GraphImporter::Rule, std::less<>> &
GraphImporter::rules() {
  static const std::map<std::string, Rule, std::less<>> table = {
      {"aten::add", binary<nn::AddOp, true>},
      {"aten::addmm", addMatmul},
      {"aten::baddbmm", addMatmul},
      {"aten::bmm", matmulRule},
      {"aten::cat", concat},
      {"aten::chunk", split<true>},
      {"aten::clone", identity},
      {"aten::contiguous", identity},
      {"aten::div", divide},
      {"aten::dropout", dropout},
      {"aten::embedding", embedding},
      {"aten::erf", unary<nn::ErfOp>},
      {"aten::exp", unary<nn::ExpOp>},
      {"aten::expand", expand},
      {"aten::flatten", flatten},
      {"aten::gelu", gelu},
      {"aten::layer_norm", layerNorm},
      {"aten::linear", linear},
      {"aten::log", unary<nn::LogOp>},
      {"aten::log_softmax", softmax<nn::LogSoftmaxOp>},
      {"aten::masked_fill", maskedFill},
      {"aten::matmul", matmulRule},
      {"aten::maximum", binary<nn::MaximumOp>},
      {"aten::mean", reduce<nn::ReduceMeanOp>},
      {"aten::minimum", binary<nn::MinimumOp>},
      {"aten::mul", binary<nn::MulOp>},
      {"aten::neg", unary<nn::NegOp>},
      {"aten::permute", permute},
      {"aten::pow", binary<nn::PowOp>},
      {"aten::relu", unary<nn::ReluOp>},
      {"aten::reshape", view},
      {"aten::rsqrt", unary<nn::RsqrtOp>},
      {"aten::rsub", binary<nn::SubOp, true, true>},
      {"aten::select", select},
      {"aten::sigmoid", unary<nn::SigmoidOp>},
      {"aten::silu", silu},
      {"aten::slice", slice},
      {"aten::softmax", softmax<nn::SoftmaxOp>},
      {"aten::split", split<false>},
      {"aten::split_with_sizes", split<false>},
      {"aten::sqrt", unary<nn::SqrtOp>},
      {"aten::squeeze", squeeze},
      {"aten::sub", binary<nn::SubOp, true>},
      {"aten::sum", reduce<nn::ReduceSumOp>},
      {"aten::t", transposeRule},
      {"aten::tanh", unary<nn::TanhOp>},
      {"aten::to", convert},
      {"aten::transpose", transposeRule},
      {"aten::tril", trilu<false>},
      {"aten::triu", trilu<true>},
      {"aten::type_as", convert},
      {"aten::unsqueeze", unsqueeze},
      {"aten::view", view},
      {"aten::where", where},
      {"prim::unchecked_cast", identity},
  };
  return table;
}

namespace {

OwningOpRef<ModuleOp> GraphImporter::import(torch::jit::Module &module,
                                            const c10::FunctionSchema &schema) {
  std::shared_ptr<torch::jit::Graph> graph =
      module.get_method("forward").graph();

  OwningOpRef<ModuleOp> result = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(result->getBody());
  auto function = func::FuncOp::create(builder, fileLoc, "main",
                                       builder.getFunctionType({}, {}));
  body = function.addEntryBlock();
  builder.setInsertionPointToEnd(body);

  // Arguments: self, then forward's arguments; parameters are appended as
  // forward reads them.
  c10::IValue self = module._ivalue();
  modulePaths[self.toObject().get()] = "";
  SmallVector<Item> inputs{Item::ofConstant(self)};
  for (const c10::Argument &argument :
       llvm::ArrayRef(schema.arguments()).drop_front()) {
    // An argument the options do not type takes its default (None for an
    // Optional one): `mask=None` and flags fold at import.
    bool typed = options.inputTypes.count(argument.name());
    if (!typed && (argument.default_value() ||
                   argument.type()->cast<c10::OptionalType>())) {
      inputs.push_back(Item::ofConstant(
          argument.default_value() ? *argument.default_value()
                                   : c10::IValue()));
      continue;
    }
    bool tensor = argument.type()->cast<c10::TensorType>() ||
                  (argument.type()->cast<c10::OptionalType>() &&
                   argument.type()
                       ->expectRef<c10::OptionalType>()
                       .getElementType()
                       ->cast<c10::TensorType>());
    if (!tensor)
      return emitError(fileLoc)
                 << "forward's argument '" << argument.name() << "' is a "
                 << argument.type()->repr_str()
                 << " without a default; pp imports tensor arguments, and "
                    "others that keep their defaults",
             nullptr;
    FailureOr<RankedTensorType> type = inputType(argument.name());
    if (failed(type))
      return nullptr;
    inputs.push_back(Item::ofTensor(body->addArgument(*type, fileLoc)));
    argAttrs.push_back(
        getNameAndRoleAttrs(context, argument.name(), kRoleInput));
  }
  for (const auto &[name, type] : options.inputTypes)
    if (llvm::none_of(schema.arguments(), [&](const c10::Argument &argument) {
          return argument.name() == name;
        }))
      return emitError(fileLoc) << "--input-shape " << name
                                << ": forward has no argument '" << name
                                << "'",
             nullptr;

  if (failed(importBlock(graph->block(), inputs)))
    return nullptr;

  // Results: the tensors forward returns, flattening tuples and lists.
  SmallVector<Value> results;
  std::function<LogicalResult(const Item &)> collect =
      [&](const Item &item) -> LogicalResult {
    if (item.unsupported)
      return unsupportedOp(item.unsupported,
                           locationOf(item.unsupported,
                                      nodeNames.lookup(item.unsupported)));
    if (item.isList() ||
        (item.isConstant() &&
         (item.constant.isTuple() || item.constant.isList()))) {
      FailureOr<SmallVector<Item>> elements =
          asItems(item, fileLoc, "forward's result");
      if (failed(elements))
        return failure();
      for (const Item &element : *elements)
        if (failed(collect(element)))
          return failure();
      return success();
    }
    FailureOr<Value> value = asTensor(item, fileLoc);
    if (failed(value))
      return emitError(fileLoc) << "forward returns something other than "
                                   "tensors and tuples or lists of them";
    results.push_back(*value);
    return success();
  };
  for (torch::jit::Value *output : graph->outputs())
    if (failed(collect(items[output])))
      return nullptr;
  SmallVector<Attribute> resultAttrs;
  for (size_t i = 0; i < results.size(); ++i)
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        kNameAttrName, builder.getStringAttr("output_" + std::to_string(i)))));
  func::ReturnOp::create(builder, fileLoc, results);
  // Constants and ops whose values forward never uses (shape queries,
  // discarded branches of a list) are not part of the computation.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (op.use_empty() && !isa<func::ReturnOp>(op))
      op.erase();
  function.setType(builder.getFunctionType(body->getArgumentTypes(),
                                           TypeRange(ValueRange(results))));
  function.setAllArgAttrs(argAttrs);
  function.setAllResultAttrs(resultAttrs);
  auto record = [&](const std::map<std::string, int64_t> &tensors) {
    SmallVector<NamedAttribute> entries;
    for (const auto &[name, elements] : tensors)
      entries.push_back(
          builder.getNamedAttr(name, builder.getI64IntegerAttr(elements)));
    return builder.getDictionaryAttr(entries);
  };
  (*result)->setAttr(
      kImportRecordAttrName,
      builder.getDictionaryAttr(
          {builder.getNamedAttr("trained", record(trainedRecord)),
           builder.getNamedAttr("held", record(heldRecord))}));
  if (failed(verify(*result)))
    return nullptr;
  return result;
}

} // namespace

/// The TorchScript ops the importer turns into nn ops, sorted,
/// comma-separated (besides those it evaluates at import).
std::string supportedTorchScriptOps() {
  std::string list;
  for (const auto &entry : GraphImporter::rules()) {
    if (!list.empty())
      list += ", ";
    list += entry.first;
  }
  return list;
}

/// The import, behind the plugin's C entry point.
static OwningOpRef<ModuleOp> importFile(StringRef path, MLIRContext *context,
                                        const ImportOptions &options) {
  context->loadDialect<nn::NNDialect, PPDialect, arith::ArithDialect,
                       func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  std::string damaged = checkZipEntries(
      path, "TorchScript archive",
      "save the module again with torch.jit.save, or copy it again");
  if (!damaged.empty())
    return emitError(fileLoc) << damaged, nullptr;
  // The reader tells checkModuleTensors what the archive holds of each
  // tensor's storage.
  std::shared_ptr<RecordingReader> reader;
  torch::jit::Module module;
  std::optional<c10::FunctionSchema> schema;
  try {
    reader = std::make_shared<RecordingReader>(path.str());
    module = torch::jit::load(reader);
    if (!module.find_method("forward"))
      return emitError(fileLoc) << "the TorchScript module has no forward "
                                   "method",
             nullptr;
    schema = module.get_method("forward").function().getSchema();
  } catch (const std::exception &error) {
    std::string message = error.what();
    return emitError(fileLoc)
               << "not a loadable TorchScript module (torch.jit.save's "
                  "format): "
               << StringRef(message).split('\n').first,
           nullptr;
  }
  std::string outside = checkModuleTensors(module, *reader);
  if (!outside.empty())
    return emitError(fileLoc) << outside, nullptr;
  return importModule(module, *schema, path, context, options);
}

OwningOpRef<ModuleOp> importModule(torch::jit::Module &module,
                                   const c10::FunctionSchema &schema,
                                   StringRef path, MLIRContext *context,
                                   const ImportOptions &options) {
  context->loadDialect<nn::NNDialect, PPDialect, arith::ArithDialect,
                       func::FuncDialect>();
  GraphImporter importer(context, path, options);
  try {
    return importer.import(module, schema);
  } catch (const std::exception &error) {
    std::string message = error.what();
    return emitError(FileLineColLoc::get(context, path, 0, 0))
               << "LibTorch failed while importing: "
               << StringRef(message).split('\n').first,
           nullptr;
  }
}

} // namespace pp::torchscript_frontend

extern "C" mlir::Operation *
ppImportTorchScript(const char *path, size_t pathSize,
                    mlir::MLIRContext *context,
                    const pp::torchscript_frontend::ImportOptions *options) {
  return pp::torchscript_frontend::importFile(StringRef(path, pathSize),
                                              context, *options)
      .release();
}
