//===- FusedLoops.cpp - the generated loop of an nn.fusion ----------------===//

#include "passes/codegen/FusedLoops.h"
#include "passes/codegen/CppLiterals.h"
#include "passes/codegen/RuntimeDtype.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace pp;

namespace {

/// The C++ type of one element of `type`: i1 elements are bytes, bf16 and
/// f16 ones the runtime's 16-bit floats (FloatElements.h).
StringRef elementType(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isInteger(1))
    return "uint8_t";
  if (element.isBF16())
    return "pp::runtime::BFloat16";
  if (element.isF16())
    return "pp::runtime::Half";
  return "float";
}

/// True for the 16-bit float types, which the loop reads as floats and
/// writes rounded once (the kernels' rule, FloatElements.h).
bool isNarrowFloat(Type type) {
  Type element = getElementTypeOrSelf(type);
  return element.isBF16() || element.isF16();
}

/// The index into an input of `shape` of the element at multi-index
/// (i0, i1, ...) of the fusion's `target` shape, which it broadcasts to:
/// `at` (the row-major index) for an input of the fusion's shape.
std::string inputIndex(ArrayRef<int64_t> shape, ArrayRef<int64_t> target) {
  if (shape == target)
    return "at";
  SmallVector<std::string> terms;
  int64_t stride = 1;
  size_t offset = target.size() - shape.size();
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1)
      terms.push_back("i" + std::to_string(k + offset) + " * " +
                      std::to_string(stride));
    stride *= shape[k];
  }
  return terms.empty() ? "0" : llvm::join(llvm::reverse(terms), " + ");
}

/// The literal of an f32 input that is a splat of a finite constant, which
/// the loop then folds in (pow by a constant 3 becomes a product and
/// vectorizes); nullopt for any other input, which the loop reads. An
/// infinity or NaN has no literal that CUDA device code takes.
std::optional<std::string> splatLiteral(Value input) {
  auto constant = input.getDefiningOp<arith::ConstantOp>();
  auto dense =
      constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !dense.isSplat() || !dense.getElementType().isF32())
    return std::nullopt;
  APFloat value = dense.getSplatValue<APFloat>();
  if (!value.isFinite())
    return std::nullopt;
  return floatingLiteral(value.convertToDouble(), /*single=*/true);
}

/// Writes the fusion's element `at` (multi-index i0, i1, ...): reads the
/// inputs, applies every op's formula, stores the results.
LogicalResult writeElement(nn::FusionOp fusion, AttributeArguments attributes,
                           raw_ostream &os, StringRef indent) {
  Block &body = fusion.getBody().front();
  ArrayRef<int64_t> shape = fusion.getFusionType().getShape();
  llvm::DenseMap<Value, std::string> names;
  for (BlockArgument arg : body.getArguments()) {
    std::string name = "x" + std::to_string(arg.getArgNumber());
    if (std::optional<std::string> literal =
            splatLiteral(fusion.getInputs()[arg.getArgNumber()])) {
      os << indent << "const float " << name << " = " << *literal << ";\n";
      names[arg] = name;
      continue;
    }
    std::string element =
        "in" + std::to_string(arg.getArgNumber()) + '[' +
        inputIndex(cast<RankedTensorType>(arg.getType()).getShape(), shape) +
        ']';
    if (isNarrowFloat(arg.getType()))
      os << indent << "const float " << name
         << " = pp::runtime::loadFloat(" << element << ");\n";
    else
      os << indent << "const " << elementType(arg.getType()) << ' ' << name
         << " = " << element << ";\n";
    names[arg] = name;
  }
  unsigned next = 0;
  for (Operation &op : body.without_terminator()) {
    SmallVector<std::string> arguments;
    for (Value operand : op.getOperands())
      arguments.push_back(names.lookup(operand));
    if (failed(attributes(&op, arguments)))
      return failure();
    std::string name = "v" + std::to_string(next++);
    std::string formula = "pp::runtime::elementwise::" +
                          op.getName().stripDialect().str() + '(' +
                          llvm::join(arguments, ", ") + ')';
    // Each op's result is rounded to its type, as its own kernel rounds
    // it: a fusion changes no bits, wherever a partition cuts it.
    Type result = op.getResult(0).getType();
    if (isNarrowFloat(result))
      formula = "pp::runtime::loadFloat(pp::runtime::storeFloat<" +
                elementType(result).str() + ">(" + formula + "))";
    os << indent << "const float " << name << " = " << formula << ";\n";
    names[op.getResult(0)] = name;
  }
  for (auto [index, value] :
       llvm::enumerate(body.getTerminator()->getOperands())) {
    os << indent << "out" << index << "[at] = ";
    if (isNarrowFloat(value.getType()))
      os << "pp::runtime::storeFloat<" << elementType(value.getType()) << ">("
         << names.lookup(value) << ");\n";
    else
      os << names.lookup(value) << ";\n";
  }
  return success();
}

/// The element pointers of the inputs and results, as a parameter list
/// (`const float *in0, ..., float *out0, ...`) or as arguments.
std::string pointers(nn::FusionOp fusion, bool declare) {
  SmallVector<std::string> parts;
  for (auto [index, input] : llvm::enumerate(fusion.getInputs()))
    parts.push_back((declare
                         ? "const " + elementType(input.getType()).str() + " *"
                         : std::string()) +
                    "in" + std::to_string(index));
  for (auto [index, result] : llvm::enumerate(fusion.getResults()))
    parts.push_back(
        (declare ? elementType(result.getType()).str() + " *" : std::string()) +
        "out" + std::to_string(index));
  return llvm::join(parts, ", ");
}

/// Writes the indices i0, i1, ... of the row-major position `flat` in
/// `dims` as constants (nothing for no dimensions).
void writeIndices(raw_ostream &os, StringRef indent, StringRef flat,
                  ArrayRef<int64_t> dims) {
  if (dims.empty())
    return;
  os << indent << "int64_t rest = " << flat << ";\n";
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d > 0; --d)
    os << indent << "[[maybe_unused]] const int64_t i" << d << " = rest % "
       << dims[d] << ";\n"
       << indent << "rest /= " << dims[d] << ";\n";
  os << indent << "[[maybe_unused]] const int64_t i0 = rest;\n";
}

/// Releases the results made so far (`count` of them) and nulls them.
void writeReleaseResults(raw_ostream &os, StringRef indent, StringRef count) {
  os << indent << "for (int k = 0; k < " << count << "; ++k) {\n"
     << indent << "  pp_frame_release(frame, results[k]);\n"
     << indent << "  results[k] = nullptr;\n"
     << indent << "}\n";
}

} // namespace

FailureOr<std::string> pp::writeFusedLoop(nn::FusionOp fusion, StringRef name,
                                          StringRef target,
                                          AttributeArguments attributes) {
  bool cuda = target == "cuda";
  // Every result has the fusion's element type (each op's float operands
  // and result share one).
  std::optional<RuntimeDtype> dtype =
      getRuntimeDtype(fusion.getFusionType().getElementType());
  if (!dtype)
    return fusion.emitOpError("computes ")
           << fusion.getFusionType()
           << ", whose element type the runtime has no dtype for";
  ArrayRef<int64_t> shape = fusion.getFusionType().getShape();
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t elements = fusion.getFusionType().getNumElements();
  unsigned numInputs = fusion.getInputs().size();
  unsigned numResults = fusion.getNumResults();
  std::string code;
  llvm::raw_string_ostream os(code);
  os << "// nn.fusion of";
  for (Operation &op : fusion.getBody().front().without_terminator())
    os << ' ' << op.getName().stripDialect();
  os << " over " << fusion.getFusionType() << ".\n";

  if (cuda) {
    os << "static __global__ void " << name << "_kernel("
       << pointers(fusion, true) << ") {\n"
       << "  const int64_t at = blockIdx.x * static_cast<int64_t>(blockDim.x) "
          "+ threadIdx.x;\n"
       << "  if (at >= " << elements << ")\n    return;\n";
    // Inputs of the fusion's shape read at `at`, others by index.
    writeIndices(os, "  ", "at", shape);
    if (failed(writeElement(fusion, attributes, os, "  ")))
      return failure();
    os << "}\n\n";
  }

  // The host loop over rows [begin, end) of the last dimension, compiled
  // for each x86-64 level as the kernels' loops: the outer indices from the
  // row, the last one in the loop that vectorizes.
  int64_t rowLength = rank ? shape.back() : 1;
  if (!cuda) {
    os << "PP_CPU_CLONES static void " << name << "_rows("
       << pointers(fusion, true) << ", int64_t begin, int64_t end) {\n"
       << "  for (int64_t row = begin; row < end; ++row) {\n";
    std::string indent = "    ";
    if (rank > 0) {
      writeIndices(os, indent, "row", shape.drop_back());
      os << indent << "for (int64_t i" << rank - 1 << " = 0; i" << rank - 1
         << " < " << rowLength << "; ++i" << rank - 1 << ")\n";
      indent += "  ";
    }
    os << indent << "{\n"
       << indent << "  const int64_t at = "
       << (rank ? "row * " + std::to_string(rowLength) + " + i" +
                      std::to_string(rank - 1)
                : std::string("row"))
       << ";\n";
    if (failed(writeElement(fusion, attributes, os, indent + "  ")))
      return failure();
    os << indent << "}\n  }\n}\n\n";
  }

  os << "static void " << name
     << "(pp_frame *frame, pp_tensor **inputs, pp_tensor **results) {\n";
  if (rank > 0)
    os << "  static const int64_t shape[] = {"
       << llvm::join(llvm::map_range(
                         shape, [](int64_t d) { return std::to_string(d); }),
                     ", ")
       << "};\n";
  else
    os << "  const int64_t *shape = nullptr;\n";
  os << "  for (int r = 0; r < " << numResults << "; ++r)\n"
     << "    results[r] = nullptr;\n"
     << "  for (int i = 0; i < " << numInputs << "; ++i)\n"
     << "    if (!inputs[i])\n"
     << "      return; // An earlier call failed and said why.\n"
     << "  for (int r = 0; r < " << numResults << "; ++r) {\n"
     << "    results[r] = pp_" << target << "_empty(frame, " << dtype->enumerator
     << ", " << rank << ", shape);\n"
     << "    if (!results[r]) {\n";
  writeReleaseResults(os, "      ", "r");
  os << "      return;\n    }\n  }\n";
  for (auto [index, input] : llvm::enumerate(fusion.getInputs()))
    os << "  const " << elementType(input.getType()) << " *in" << index
       << " = static_cast<const " << elementType(input.getType())
       << " *>(pp_tensor_data(inputs[" << index << "]));\n";
  for (auto [index, result] : llvm::enumerate(fusion.getResults()))
    os << "  " << elementType(result.getType()) << " *out" << index
       << " = static_cast<" << elementType(result.getType())
       << " *>(pp_tensor_data(results[" << index << "]));\n";

  if (cuda) {
    if (elements == 0) { // Nothing to launch.
      os << "}\n";
      return code;
    }
    os << "  " << name << "_kernel<<<" << (elements + 255) / 256
       << ", 256, 0, static_cast<cudaStream_t>(pp_frame_queue_handle(frame))"
          ">>>("
       << pointers(fusion, false) << ");\n"
       << "  if (!pp_cuda_launched(frame, \"" << name << "\")) {\n";
    writeReleaseResults(os, "    ", std::to_string(numResults));
    os << "  }\n}\n";
    return code;
  }

  // Rows in chunks on the runtime's thread pool (the chunks a function of
  // the shape only: the same bits at any thread count).
  os << "  auto rows = [&](int64_t begin, int64_t end) {\n    " << name
     << "_rows(" << pointers(fusion, false) << ", begin, end);\n  };\n"
     << "  pp_cpu_parallel_for(" << (elements ? elements / rowLength : 0)
     << ", " << rowLength
     << ", [](void *context, int64_t begin, int64_t end) {\n"
        "    (*static_cast<decltype(rows) *>(context))(begin, end);\n"
        "  }, &rows);\n}\n";
  return code;
}
