//===- ExportedProgramImporter.cpp - torch.export into the nn dialect -----===//
//
// The torch.export importer, part of the LibTorch plugin (see
// TorchExportFrontend.cpp, which loads it). It reads the archive with
// LibTorch's zip reader, rebuilds the ExportedProgram (models/NAME.json,
// torch/_export/serde/schema.py's format) as a torch::jit::Module whose
// forward graph holds the program's ATen ops, and hands that module to the
// TorchScript importer (ModuleImporter.h): one set of op rules for both
// formats (docs/torch-export.md).
//
// The zip's CRC-32s are checked first (ArchiveChecks.h). A bad archive
// raises an ArchiveError that says what is wrong, where and
// how to fix it; the entry point turns it into a diagnostic. LibTorch and
// nlohmann-json report their own failures as exceptions too.
//
//===----------------------------------------------------------------------===//

#include "frontends/torchexport/TorchExportImporter.h"
#include "frontends/torchscript/ArchiveChecks.h"
#include "frontends/torchscript/ModuleImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Regex.h"

#include <caffe2/serialize/inline_container.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/version.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

using namespace mlir;
using json = nlohmann::json;

namespace pp::torchexport_frontend {
namespace {

/// A source position of the exported program: the frame of a node's stack
/// trace that called the op.
struct SourcePosition {
  std::string file;
  unsigned line = 0;
};

/// What is wrong with the archive (the message says what, where and the
/// fix), at the position of the node it concerns when there is one.
class ArchiveError : public std::runtime_error {
public:
  explicit ArchiveError(const std::string &message,
                        std::optional<SourcePosition> position = {})
      : std::runtime_error(message), position(std::move(position)) {}
  std::optional<SourcePosition> position;
};

/// The LibTorch whose ATen ops the import builds on.
constexpr const char *kLibTorch = "LibTorch " TORCH_VERSION;

/// The fix for an archive whose files do not fit together.
constexpr const char *kResave =
    "re-save the program with torch.export.save (the archive is truncated "
    "or corrupt)";

/// The LibTorch element type of serialized ScalarType `code`
/// (torch/_export/serde/schema.py numbers them its own way).
at::ScalarType scalarType(int64_t code, const std::string &what) {
  switch (code) {
  case 1: return at::kByte;
  case 2: return at::kChar;
  case 3: return at::kShort;
  case 4: return at::kInt;
  case 5: return at::kLong;
  case 6: return at::kHalf;
  case 7: return at::kFloat;
  case 8: return at::kDouble;
  case 12: return at::kBool;
  case 13: return at::kBFloat16;
  default:
    throw ArchiveError(what + " has dtype code " + std::to_string(code) +
                       ", which pp does not import (it imports uint8, int8, "
                       "int16, int32, int64, float16, float32, float64, "
                       "bool and bfloat16)");
  }
}

/// The LibTorch layout of serialized Layout `code`.
at::Layout layout(int64_t code, const std::string &what) {
  if (code != 7)
    throw ArchiveError(what + " has layout code " + std::to_string(code) +
                       "; pp imports strided (dense) tensors only");
  return at::kStrided;
}

/// The LibTorch memory format of serialized MemoryFormat `code`.
at::MemoryFormat memoryFormat(int64_t code, const std::string &what) {
  switch (code) {
  case 1: return at::MemoryFormat::Contiguous;
  case 2: return at::MemoryFormat::ChannelsLast;
  case 3: return at::MemoryFormat::ChannelsLast3d;
  case 4: return at::MemoryFormat::Preserve;
  default:
    throw ArchiveError(what + " has memory format code " +
                       std::to_string(code) + ", which pp does not know");
  }
}

/// The `--input-shape` element type name of `type` (TorchScriptImporter.h).
std::string elementTypeName(at::ScalarType type, const std::string &what) {
  switch (type) {
  case at::kFloat: return "f32";
  case at::kDouble: return "f64";
  case at::kHalf: return "f16";
  case at::kBFloat16: return "bf16";
  case at::kLong: return "i64";
  case at::kInt: return "i32";
  case at::kBool: return "i1";
  default:
    throw ArchiveError(what + " has dtype " + c10::toString(type) +
                       "; pp's inputs are float32, float64, float16, "
                       "bfloat16, int64, int32 or bool tensors");
  }
}

/// The integers of serialized SymInts `sizes` that are all plain integers
/// (`{"as_int": 4}`), or an error naming `what`.
std::vector<int64_t> plainInts(const json &sizes, const std::string &what) {
  std::vector<int64_t> result;
  for (const json &size : sizes) {
    if (!size.contains("as_int"))
      throw ArchiveError(what + " has a symbolic size (" + size.dump() +
                         "); pp imports stored tensors of static shapes");
    result.push_back(size["as_int"].get<int64_t>());
  }
  return result;
}

/// The one field of serialized union `value` (`{"as_tensor": ...}`): its
/// kind and content.
std::pair<std::string, const json &> unionField(const json &value,
                                                const std::string &what) {
  if (!value.is_object() || value.size() != 1)
    throw ArchiveError(what + " is " + value.dump() +
                       ", not one of the schema's unions: " + kResave);
  return {value.begin().key(), value.begin().value()};
}

/// The number serialized float `value` holds: a JSON number, or one of the
/// strings the serializer writes for those JSON lacks.
double floatOf(const json &value, const std::string &what) {
  if (value.is_number())
    return value.get<double>();
  static const std::map<std::string, double> special = {
      {"Infinity", INFINITY}, {"-Infinity", -INFINITY}, {"NaN", NAN}};
  auto it = value.is_string() ? special.find(value.get<std::string>())
                              : special.end();
  if (it == special.end())
    throw ArchiveError(what + " is " + value.dump() + ", not a float: " +
                       kResave);
  return it->second;
}

/// The innermost frame of `stackTrace` (a Python traceback's frames, `File
/// "F", line L, in ...`) outside PyTorch itself: the model's code that
/// called the op. The innermost frame when all are PyTorch's.
std::optional<SourcePosition> callerOf(const std::string &stackTrace) {
  static const llvm::Regex frame("File \"([^\"]+)\", line ([0-9]+)");
  std::optional<SourcePosition> innermost, caller;
  llvm::StringRef rest(stackTrace);
  llvm::SmallVector<llvm::StringRef, 3> groups;
  while (frame.match(rest, &groups)) {
    SourcePosition position{groups[1].str(), 0};
    groups[2].getAsInteger(10, position.line);
    innermost = position;
    if (!groups[1].contains("/torch/"))
      caller = position;
    rest = rest.substr(groups[0].end() - rest.begin());
  }
  return caller ? caller : innermost;
}

/// The qualified name of the module that ran a node, from its
/// `nn_module_stack` metadata (`KEY,PATH,TYPE` entries separated by `;`,
/// outermost first): the innermost PATH.
std::string modulePathOf(const std::string &moduleStack) {
  llvm::StringRef innermost = llvm::StringRef(moduleStack).rsplit(';').second;
  if (innermost.empty())
    innermost = moduleStack;
  llvm::SmallVector<llvm::StringRef, 3> fields;
  innermost.split(fields, ',');
  if (fields.size() < 3 || fields[1].starts_with("_empty_nn_module_stack"))
    return "";
  return fields[1].str();
}

/// Rebuilds one ExportedProgram of a torch.export archive as a
/// torch::jit::Module for the TorchScript importer.
class ProgramBuilder {
public:
  ProgramBuilder(const std::string &path, const ImportOptions &options)
      : reader(path), options(options) {}

  /// The module, and in `inputTypes` the type of each user input.
  torch::jit::Module build(std::map<std::string, std::string> &inputTypes);

private:
  /// The contents of record `name` (relative to the archive's folder).
  std::string readText(const std::string &name);
  json readJson(const std::string &name);
  /// The tensor that entry `entry` of the weights or constants config in
  /// folder `folder` describes (a view of a raw storage file), for `what`.
  at::Tensor readTensor(const std::string &folder, const json &entry,
                        const std::string &what);
  /// The stored tensor of buffer or constant `name`: the weights config's,
  /// else the constants config's.
  at::Tensor storedTensor(const std::string &name, const std::string &what);
  /// The `--input-shape` type of user input `name`.
  std::string inputType(const std::string &name);
  /// The size that symbolic size `expression` of `what`, dimension `dim`,
  /// takes.
  int64_t symbolicSize(const std::string &expression, size_t dim,
                       const std::string &what);
  /// The jit value of serialized argument `argument` for schema argument
  /// `formal`.
  torch::jit::Value *argumentValue(const json &argument,
                                   const c10::Argument &formal,
                                   const std::string &where);
  torch::jit::Value *namedValue(const std::string &name,
                                const std::string &where);
  /// Adds the ops of serialized node `node` to the graph.
  void addNode(const json &node);
  /// Adds scaled_dot_product_attention node `node` (an op LibTorch 1.13
  /// lacks) as the matmuls and softmax it computes.
  void addAttention(const json &node, const std::string &where,
                    const std::optional<SourcePosition> &position);
  /// Inserts a node of `schema` on `operands`, typed by the schema's
  /// returns and located at `position`.
  torch::jit::Node *insertOperator(const c10::FunctionSchema &schema,
                                   at::ArrayRef<torch::jit::Value *> operands,
                                   const std::optional<SourcePosition> &position);
  /// The output of a new node of LibTorch's `name`.`overload`.
  torch::jit::Value *insertOp(const std::string &name,
                              const std::string &overload,
                              at::ArrayRef<torch::jit::Value *> operands,
                              const std::optional<SourcePosition> &position);
  /// The LibTorch operator of exported op `target`
  /// (`torch.ops.aten.add.Tensor`), `_operator.mul` and the like included.
  std::shared_ptr<torch::jit::Operator>
  operatorOf(const std::string &target, const std::string &where,
             const std::optional<SourcePosition> &position);

  caffe2::serialize::PyTorchStreamReader reader;
  const ImportOptions &options;
  std::string modelName;
  json program, weights, constants;
  std::shared_ptr<torch::jit::Graph> graph;
  torch::jit::Value *self = nullptr;
  /// The jit value of each named value of the program.
  std::map<std::string, torch::jit::Value *> values;
  /// The qualified name of each stored parameter by its storage and view,
  /// for ties.
  std::map<std::string, std::string> parameterOfStorage;
  /// The symbolic sizes a user input has, by name.
  llvm::StringSet<> symbols;
  /// The scope of each module path.
  llvm::StringMap<torch::jit::ScopePtr> scopes;
};

std::string ProgramBuilder::readText(const std::string &name) {
  if (!reader.hasRecord(name))
    throw ArchiveError("the archive has no '" + name + "': " + kResave);
  auto [data, size] = reader.getRecord(name);
  return std::string(static_cast<const char *>(data.get()), size);
}

json ProgramBuilder::readJson(const std::string &name) {
  std::string text = readText(name);
  json result = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded())
    throw ArchiveError("'" + name + "' in the archive is not JSON: " +
                       kResave);
  return result;
}

at::Tensor ProgramBuilder::readTensor(const std::string &folder,
                                      const json &entry,
                                      const std::string &what) {
  if (entry.value("use_pickle", false))
    throw ArchiveError(what + " is pickled in the archive; pp reads raw "
                              "storages: save the program with a torch "
                              "whose torch.export.save writes them");
  const json &meta = entry.at("tensor_meta");
  at::ScalarType dtype = scalarType(meta.at("dtype").get<int64_t>(), what);
  layout(meta.value("layout", 7), what);
  std::vector<int64_t> sizes = plainInts(meta.at("sizes"), what);
  std::vector<int64_t> strides = plainInts(meta.at("strides"), what);
  std::vector<int64_t> offset =
      plainInts(json::array({meta.at("storage_offset")}), what);
  std::string file = folder + entry.at("path_name").get<std::string>();
  if (sizes.size() != strides.size())
    throw ArchiveError(what + " has " + std::to_string(sizes.size()) +
                       " sizes and " + std::to_string(strides.size()) +
                       " strides: " + kResave);
  // The elements the view reaches: up to offset + sum((size - 1) * stride).
  int64_t last = offset[0], numel = 1;
  for (auto [size, stride] : llvm::zip_equal(sizes, strides)) {
    int64_t reach = 0;
    if (size < 0 || stride < 0 || offset[0] < 0)
      throw ArchiveError(what + " has a negative size, stride or offset: " +
                         kResave);
    if (llvm::MulOverflow(numel, size, numel) ||
        (size > 0 && (llvm::MulOverflow(size - 1, stride, reach) ||
                      llvm::AddOverflow(last, reach, last))))
      throw ArchiveError(what + " has sizes " +
                         c10::str(c10::IntArrayRef(sizes)) +
                         " and strides " +
                         c10::str(c10::IntArrayRef(strides)) +
                         " whose extent overflows: " + kResave);
  }
  if (!reader.hasRecord(file))
    throw ArchiveError("the archive has no '" + file + "', the storage of " +
                       what + ": " + kResave);
  auto [data, bytes] = reader.getRecord(file);
  int64_t elementSize = c10::elementSize(dtype);
  int64_t needed = 0;
  if (numel != 0 && llvm::MulOverflow(last + 1, elementSize, needed))
    throw ArchiveError(what + "'s extent overflows: " + std::string(kResave));
  if (static_cast<int64_t>(bytes) < needed)
    throw ArchiveError("'" + file + "' holds " + std::to_string(bytes) +
                       " bytes, but " + what + " (" + c10::toString(dtype) +
                       ", sizes " + c10::str(c10::IntArrayRef(sizes)) +
                       ", strides " + c10::str(c10::IntArrayRef(strides)) +
                       ", offset " + std::to_string(offset[0]) + ") needs " +
                       std::to_string(needed) + ": " + kResave);
  // The tensor keeps the bytes the reader read (no copy of the weights).
  auto owner = std::make_shared<at::DataPtr>(std::move(data));
  at::Tensor storage = at::from_blob(
      owner->get(), {static_cast<int64_t>(bytes) / elementSize},
      [owner](void *) mutable { owner.reset(); },
      at::TensorOptions().dtype(dtype));
  return storage.as_strided(sizes, strides, offset[0]).contiguous();
}

at::Tensor ProgramBuilder::storedTensor(const std::string &name,
                                        const std::string &what) {
  for (auto [config, folder] :
       {std::pair(&weights, "weights"), std::pair(&constants, "constants")})
    if (config->contains(name))
      return readTensor(std::string("data/") + folder + "/", (*config)[name],
                        what);
  throw ArchiveError("the archive stores no tensor for " + what +
                     ": neither data/weights/" + modelName +
                     "_weights_config.json nor data/constants/" + modelName +
                     "_constants_config.json has an entry '" + name +
                     "'; " + kResave);
}

int64_t ProgramBuilder::symbolicSize(const std::string &expression,
                                     size_t dim, const std::string &what) {
  static const llvm::Regex symbol("^(Symbol\\(')?([A-Za-z_][A-Za-z0-9_]*)"
                                  "('[^)]*\\))?$");
  llvm::SmallVector<llvm::StringRef, 4> groups;
  if (!symbol.match(expression, &groups))
    throw ArchiveError(what + " has size '" + expression + "' at dimension " +
                       std::to_string(dim) +
                       "; pp sizes inputs whose symbolic sizes are symbols");
  std::string name = groups[2].str();
  symbols.insert(name);
  auto given = options.dimSizes.find(name);
  int64_t size = given != options.dimSizes.end() ? given->second
                 : dim == 0                      ? options.batchSize
                                                 : 0;
  if (size <= 0)
    throw ArchiveError(
        what + " has symbolic size '" + name + "' at dimension " +
        std::to_string(dim) + ": give it with --dim " + name + "=SIZE" +
        (dim == 0 ? " or the batch size (--batch-size=B for pp-opt, "
                    "--microbatch-size=B for pp-run)"
                  : ""));
  const json &range = program.value("range_constraints", json::object());
  if (range.contains(name)) {
    const json &bounds = range[name];
    bool low = bounds.contains("min_val") && bounds["min_val"].is_number() &&
               size < bounds["min_val"].get<int64_t>();
    bool high = bounds.contains("max_val") && bounds["max_val"].is_number() &&
                size > bounds["max_val"].get<int64_t>();
    if (low || high)
      throw ArchiveError("size " + std::to_string(size) + " of '" + name +
                         "' (" + what + ", dimension " + std::to_string(dim) +
                         ") is outside the range the program was exported "
                         "for, " +
                         bounds.dump() + ": give another with --dim " + name +
                         "=SIZE");
  }
  return size;
}

std::string ProgramBuilder::inputType(const std::string &name) {
  const json &tensors = program["graph_module"]["graph"]["tensor_values"];
  std::string what = "user input '" + name + "'";
  if (!tensors.contains(name))
    throw ArchiveError(what + " has no tensor metadata: " + kResave);
  const json &meta = tensors[name];
  std::string type;
  size_t dim = 0;
  for (const json &size : meta.at("sizes")) {
    int64_t value = size.contains("as_int")
                        ? size["as_int"].get<int64_t>()
                        : symbolicSize(size.at("as_expr")
                                           .at("expr_str")
                                           .get<std::string>(),
                                       dim, what);
    type += std::to_string(value) + "x";
    ++dim;
  }
  return type + elementTypeName(
                    scalarType(meta.at("dtype").get<int64_t>(), what), what);
}

torch::jit::Value *ProgramBuilder::namedValue(const std::string &name,
                                              const std::string &where) {
  auto it = values.find(name);
  if (it == values.end())
    throw ArchiveError(where + " reads '" + name +
                       "', which no earlier node or input defines: " +
                       kResave);
  return it->second;
}

torch::jit::Value *
ProgramBuilder::argumentValue(const json &argument,
                              const c10::Argument &formal,
                              const std::string &where) {
  auto constant = [&](c10::IValue value) {
    return graph->insertConstant(std::move(value));
  };
  std::string what = where + ", argument '" + formal.name() + "'";
  // A list of values that may be named (symbolic integers, tensors).
  auto list = [&](const json &elements, const c10::TypePtr &elementType) {
    std::vector<torch::jit::Value *> items;
    for (const json &element : elements) {
      if (element.contains("as_int"))
        items.push_back(constant(element["as_int"].get<int64_t>()));
      else if (element.contains("as_name"))
        items.push_back(namedValue(element["as_name"], where));
      else if (element.contains("as_none"))
        items.push_back(constant(c10::IValue()));
      else if (element.contains("as_tensor"))
        items.push_back(namedValue(element["as_tensor"]["name"], where));
      else if (element.contains("name"))
        items.push_back(namedValue(element["name"], where));
      else
        throw ArchiveError(what + " holds " + element.dump() +
                           ", which pp does not import");
    }
    return graph->insertNode(graph->createList(elementType, items))->output();
  };
  c10::TypePtr elementType;
  if (auto listType = formal.type()->cast<c10::ListType>())
    elementType = listType->getElementType();
  else if (auto optional = formal.type()->cast<c10::OptionalType>())
    if (auto inner = optional->getElementType()->cast<c10::ListType>())
      elementType = inner->getElementType();

  const auto &[kind, value] = unionField(argument, what);
  if (kind == "as_none")
    return constant(c10::IValue());
  if (kind == "as_tensor")
    return namedValue(value.at("name"), where);
  if (kind == "as_int")
    return constant(value.get<int64_t>());
  if (kind == "as_float")
    return constant(floatOf(value, what));
  if (kind == "as_bool")
    return constant(value.get<bool>());
  if (kind == "as_string")
    return constant(value.get<std::string>());
  if (kind == "as_ints")
    return constant(value.get<std::vector<int64_t>>());
  if (kind == "as_floats") {
    std::vector<double> floats;
    for (const json &element : value)
      floats.push_back(floatOf(element, what));
    return constant(floats);
  }
  if (kind == "as_bools") {
    c10::List<bool> bools;
    for (const json &element : value)
      bools.push_back(element.get<bool>());
    return constant(bools);
  }
  if (kind == "as_scalar_type")
    return constant(
        static_cast<int64_t>(scalarType(value.get<int64_t>(), what)));
  if (kind == "as_layout")
    return constant(static_cast<int64_t>(layout(value.get<int64_t>(), what)));
  if (kind == "as_memory_format")
    return constant(
        static_cast<int64_t>(memoryFormat(value.get<int64_t>(), what)));
  if (kind == "as_device")
    // pp computes on its own devices: the program's tensors are CPU
    // tensors as far as the model can tell.
    return constant(c10::Device(at::kCPU));
  if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool")
    return value.contains("as_name") ? namedValue(value["as_name"], where)
                                     : argumentValue(value, formal, where);
  if (kind == "as_tensors" || kind == "as_optional_tensors" ||
      kind == "as_sym_ints" || kind == "as_sym_floats" ||
      kind == "as_sym_bools")
    return list(value, elementType ? elementType : c10::TensorType::get());
  throw ArchiveError(what + " is a " + kind + ", which pp does not import");
}

/// LibTorch's operator `name`.`overload` ("" for the default), or null.
std::shared_ptr<torch::jit::Operator> findOperator(const std::string &name,
                                                   const std::string &overload) {
  for (const std::shared_ptr<torch::jit::Operator> &op :
       torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(name)))
    if (op->schema().overload_name() == overload)
      return op;
  return nullptr;
}

torch::jit::Node *
ProgramBuilder::insertOperator(const c10::FunctionSchema &schema,
                               at::ArrayRef<torch::jit::Value *> operands,
                               const std::optional<SourcePosition> &position) {
  torch::jit::Node *created = graph->insertNode(
      graph->create(c10::Symbol::fromQualString(schema.name()), operands,
                    schema.returns().size()));
  for (auto [output, formal] :
       llvm::zip_equal(created->outputs(), schema.returns()))
    output->setType(formal.type());
  if (position)
    created->setSourceRange(torch::jit::SourceRange(
        std::make_shared<torch::jit::Source>(std::string(" "), position->file,
                                             position->line),
        0, 1));
  return created;
}

torch::jit::Value *
ProgramBuilder::insertOp(const std::string &name, const std::string &overload,
                         at::ArrayRef<torch::jit::Value *> operands,
                         const std::optional<SourcePosition> &position) {
  std::shared_ptr<torch::jit::Operator> op = findOperator(name, overload);
  TORCH_CHECK(op, "LibTorch has no ", name, ".", overload);
  return insertOperator(op->schema(), operands, position)->output(0);
}

void ProgramBuilder::addAttention(const json &node, const std::string &where,
                                  const std::optional<SourcePosition> &position) {
  std::map<std::string, const json *> arguments;
  for (const json &input : node.at("inputs"))
    arguments[input.at("name")] = &input.at("arg");
  auto argument = [&](const std::string &name) -> const json * {
    auto it = arguments.find(name);
    return it == arguments.end() || it->second->contains("as_none")
               ? nullptr
               : it->second;
  };
  auto tensor = [&](const std::string &name) {
    return namedValue(argument(name)->at("as_tensor").at("name"), where);
  };
  auto refuse = [&](const std::string &what) {
    throw ArchiveError("scaled_dot_product_attention (" + where + ") with " +
                           what +
                           " is not imported; export with "
                           "attn_implementation=\"eager\"",
                       position);
  };
  if (const json *dropout = argument("dropout_p"))
    if (floatOf(dropout->at("as_float"), where) != 0.0)
      refuse("dropout");
  for (const char *flag : {"is_causal", "enable_gqa"})
    if (const json *given = argument(flag))
      if (given->at("as_bool").get<bool>())
        refuse(std::string(flag) + "=True");
  auto constant = [&](c10::IValue value) {
    return graph->insertConstant(std::move(value));
  };
  // softmax(q @ k^T * scale + mask) @ v, scale 1/sqrt(E) by default.
  torch::jit::Value *query = tensor("query");
  torch::jit::Value *keys = insertOp("aten::transpose", "int",
                                     {tensor("key"), constant(int64_t(-2)),
                                      constant(int64_t(-1))},
                                     position);
  torch::jit::Value *scores =
      insertOp("aten::matmul", "", {query, keys}, position);
  torch::jit::Value *scale =
      argument("scale")
          ? constant(floatOf(argument("scale")->at("as_float"), where))
          : insertOp("aten::div", "float",
                     {constant(1.0),
                      insertOp("aten::sqrt", "int",
                               {insertOp("aten::size", "int",
                                         {query, constant(int64_t(-1))},
                                         position)},
                               position)},
                     position);
  scores = insertOp("aten::mul", "Scalar", {scores, scale}, position);
  if (argument("attn_mask")) {
    torch::jit::Value *mask = tensor("attn_mask");
    const json &tensors = program["graph_module"]["graph"]["tensor_values"];
    std::string maskName = argument("attn_mask")->at("as_tensor").at("name");
    bool isBool = tensors.contains(maskName) &&
                  tensors[maskName].value("dtype", 0) == 12;
    scores =
        isBool ? insertOp("aten::masked_fill", "Scalar",
                          {scores,
                           insertOp("aten::logical_not", "", {mask}, position),
                           constant(-INFINITY)},
                          position)
               : insertOp("aten::add", "Tensor", {scores, mask, constant(1.0)},
                          position);
  }
  torch::jit::Value *weights =
      insertOp("aten::softmax", "int",
               {scores, constant(int64_t(-1)), constant(c10::IValue())},
               position);
  values[node.at("outputs").at(0).at("as_tensor").at("name")] =
      insertOp("aten::matmul", "", {weights, tensor("value")}, position);
}

std::shared_ptr<torch::jit::Operator>
ProgramBuilder::operatorOf(const std::string &target, const std::string &where,
                           const std::optional<SourcePosition> &position) {
  // `torch.ops.aten.NAME.OVERLOAD`; Python's operators on symbolic sizes
  // (`_operator.mul`) are ATen's scalar overloads.
  llvm::StringRef rest(target);
  std::string name, overload;
  if (rest.consume_front("torch.ops.aten.")) {
    auto [op, suffix] = rest.rsplit('.');
    name = "aten::" + op.str();
    overload = suffix == "default" ? "" : suffix.str();
    // Spellings of the export IR whose TorchScript ops pp imports.
    static const std::map<std::string, std::pair<std::string, std::string>>
        renamed = {{"aten::_unsafe_view", {"aten::view", ""}},
                   {"aten::_to_copy", {"aten::to", "dtype_layout"}},
                   {"aten::sym_size", {"aten::size", "int"}}};
    if (auto it = renamed.find(name); it != renamed.end())
      std::tie(name, overload) = it->second;
  } else if (rest.consume_front("_operator.")) {
    static const std::map<std::string, std::string> operators = {
        {"add", "add"},           {"sub", "sub"}, {"mul", "mul"},
        {"floordiv", "floordiv"}, {"mod", "remainder"},
        {"truediv", "div"},       {"neg", "neg"}, {"eq", "eq"},
        {"ne", "ne"},             {"lt", "lt"},   {"le", "le"},
        {"gt", "gt"},             {"ge", "ge"}};
    auto it = operators.find(rest.str());
    if (it != operators.end()) {
      name = "aten::" + it->second;
      overload = "int";
    }
  }
  if (!name.empty())
    if (std::shared_ptr<torch::jit::Operator> op =
            findOperator(name, overload))
      return op;
  throw ArchiveError("unsupported torch.export op '" + target + "' (" +
                         where + "): " + kLibTorch +
                         ", whose ATen ops pp imports, has no " +
                         (name.empty() ? target : name) +
                         (overload.empty() ? "" : "." + overload),
                     position);
}

void ProgramBuilder::addNode(const json &node) {
  std::string target = node.at("target").get<std::string>();
  std::string nodeName = node.value("name", target);
  const json &metadata = node.value("metadata", json::object());
  std::optional<SourcePosition> position =
      callerOf(metadata.value("stack_trace", ""));
  std::string where = "node '" + nodeName + "'";
  if (position)
    where += ", " + position->file + ":" + std::to_string(position->line);
  const json &outputs = node.value("outputs", json::array());
  // Runtime checks of sizes and metadata: pp's shapes are static.
  if (outputs.empty() && (llvm::StringRef(target).contains("._assert") ||
                          llvm::StringRef(target).contains("sym_constrain")))
    return;
  // Views that only rename a value.
  if (target == "torch.ops.aten.alias.default" ||
      target == "torch.ops.aten.detach.default" ||
      target == "torch.ops.aten.lift_fresh_copy.default") {
    values[outputs.at(0).at("as_tensor").at("name")] = namedValue(
        node.at("inputs").at(0).at("arg").at("as_tensor").at("name"), where);
    return;
  }

  std::string module = modulePathOf(metadata.value("nn_module_stack", ""));
  torch::jit::ScopePtr &scope = scopes[module];
  if (!scope)
    scope = module.empty() ? c10::make_intrusive<torch::jit::Scope>()
                           : c10::make_intrusive<torch::jit::Scope>()->push(
                                 c10::Symbol::scope(module));
  torch::jit::WithCurrentScope withScope(*graph, scope);
  if (target == "torch.ops.aten.scaled_dot_product_attention.default")
    return addAttention(node, where, position);
  std::shared_ptr<torch::jit::Operator> op =
      operatorOf(target, where, position);
  const c10::FunctionSchema &schema = op->schema();

  // The arguments in the schema's order: the serialized ones by name
  // (`_operator` nodes have positional ones only), defaults for the rest.
  const json &inputs = node.value("inputs", json::array());
  std::vector<torch::jit::Value *> operands;
  size_t used = 0;
  for (const auto &[index, formal] : llvm::enumerate(schema.arguments())) {
    const json *given = nullptr;
    for (const json &input : inputs)
      if (input.value("name", "") == formal.name())
        given = &input;
    if (!given && target.rfind("_operator.", 0) == 0 && index < inputs.size())
      given = &inputs[index];
    if (given) {
      operands.push_back(argumentValue(given->at("arg"), formal, where));
      ++used;
    } else if (formal.default_value()) {
      operands.push_back(graph->insertConstant(*formal.default_value()));
    } else {
      throw ArchiveError(
          where + ": " + target + " gives no argument '" + formal.name() +
              "' of LibTorch's " + c10::toString(schema) + ": " + kResave,
          position);
    }
  }
  if (used != inputs.size())
    throw ArchiveError(where + ": " + target + " has arguments that " +
                           std::string(kLibTorch) + "'s " +
                           c10::toString(schema) +
                           " lacks; pp imports it as that schema has it",
                       position);
  torch::jit::Node *created = insertOperator(schema, operands, position);

  // Outputs: one per return; a list return (split) binds its elements.
  if (outputs.size() != created->outputs().size())
    throw ArchiveError(where + ": " + target + " has " +
                           std::to_string(outputs.size()) + " outputs, " +
                           c10::toString(schema) + " " +
                           std::to_string(created->outputs().size()) + ": " +
                           kResave,
                       position);
  for (auto [output, value] : llvm::zip_equal(outputs, created->outputs())) {
    const auto &[kind, content] = unionField(output, where + "'s output");
    if (kind == "as_tensor") {
      values[content.at("name")] = value;
    } else if (kind == "as_sym_int" || kind == "as_sym_float" ||
               kind == "as_sym_bool") {
      values[content.at("as_name")] = value;
    } else if (kind == "as_tensors") {
      torch::jit::Node *unpack = graph->insertNode(
          graph->createListUnpack(value, content.size()));
      for (auto [element, item] : llvm::zip_equal(content, unpack->outputs()))
        values[element.at("name")] = item;
    } else if (kind != "as_none") {
      throw ArchiveError(where + ": " + target + " has an output " + kind +
                             ", which pp does not import",
                         position);
    }
  }
}

torch::jit::Module
ProgramBuilder::build(std::map<std::string, std::string> &inputTypes) {
  if (reader.hasRecord("byteorder") && readText("byteorder") != "little")
    throw ArchiveError("the archive's tensors are big-endian; pp reads "
                       "little-endian ones: save it on a little-endian "
                       "machine");
  if (readText("archive_format") != "pt2")
    throw ArchiveError("'archive_format' is not 'pt2': not a torch.export "
                       "archive (torch.export.save writes them)");
  for (const std::string &record : reader.getAllRecords()) {
    llvm::StringRef name(record);
    if (name.consume_front("models/") && name.consume_back(".json")) {
      if (!modelName.empty())
        throw ArchiveError("the archive holds several programs ('" +
                           modelName + "', '" + name.str() +
                           "'); pp imports archives of one");
      modelName = name.str();
    }
  }
  if (modelName.empty())
    throw ArchiveError("the archive has no models/NAME.json, the exported "
                       "program: " +
                       std::string(kResave));
  program = readJson("models/" + modelName + ".json");
  weights = readJson("data/weights/" + modelName + "_weights_config.json")
                .at("config");
  std::string constantsConfig =
      "data/constants/" + modelName + "_constants_config.json";
  constants = reader.hasRecord(constantsConfig)
                  ? readJson(constantsConfig).at("config")
                  : json::object();

  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module module(c10::QualifiedName("__torch__.ExportedProgram"),
                            unit, /*shouldMangle=*/true);
  graph = std::make_shared<torch::jit::Graph>();
  self = graph->addInput("self");
  self->setType(module.type());

  // Inputs, in the signature's order: parameters (one per storage and
  // view), buffers and constants as module attributes, user inputs as
  // forward's arguments.
  const json &graphJson = program.at("graph_module").at("graph");
  const json &signature = program.at("graph_module").at("signature");
  for (const json &spec : signature.at("input_specs")) {
    const auto &[kind, content] = unionField(spec, "an input spec");
    if (kind == "user_input") {
      const json &argument = content.at("arg");
      if (!argument.contains("as_tensor"))
        throw ArchiveError("a user input of the program is " +
                           argument.dump() +
                           "; pp imports programs whose inputs are tensors");
      std::string name = argument["as_tensor"].at("name");
      inputTypes[name] = inputType(name);
      torch::jit::Value *input = graph->addInput(name);
      input->setType(c10::TensorType::get());
      values[name] = input;
      continue;
    }
    if (kind == "parameter") {
      std::string name = content.at("parameter_name");
      std::string what = "parameter '" + name + "'";
      if (!weights.contains(name))
        throw ArchiveError("data/weights/" + modelName +
                           "_weights_config.json has no entry for " + what +
                           ": " + kResave);
      const json &entry = weights[name];
      std::string storage = entry.value("path_name", "") + " " +
                            entry.at("tensor_meta").dump();
      auto [tied, inserted] = parameterOfStorage.emplace(storage, name);
      if (inserted)
        module.register_parameter(
            name, readTensor("data/weights/", entry, what),
            /*is_buffer=*/false);
      values[content.at("arg").at("name")] =
          graph->insertGetAttr(self, tied->second);
      continue;
    }
    std::string name;
    if (kind == "buffer")
      name = content.at("buffer_name");
    else if (kind == "tensor_constant")
      name = content.at("tensor_constant_name");
    else
      throw ArchiveError("the program has a " + kind +
                         " input, which pp does not import (it imports "
                         "parameters, buffers, tensor constants and tensor "
                         "user inputs)");
    module.register_buffer(name, storedTensor(name, kind + " '" + name + "'"));
    values[content.at("arg").at("name")] = graph->insertGetAttr(self, name);
  }
  for (const std::string &name : llvm::make_first_range(options.dimSizes))
    if (!symbols.contains(name))
      throw ArchiveError("--dim " + name +
                         ": no user input of the program has a symbolic "
                         "size '" +
                         name + "'");

  for (const json &node : graphJson.at("nodes"))
    addNode(node);

  // Results: the user outputs (buffer mutations leave pp's constant
  // buffers as they are).
  std::vector<torch::jit::Value *> results;
  if (signature.at("output_specs").size() != graphJson.at("outputs").size())
    throw ArchiveError("the program's signature has " +
                       std::to_string(signature["output_specs"].size()) +
                       " outputs and its graph " +
                       std::to_string(graphJson["outputs"].size()) + ": " +
                       kResave);
  for (const auto &[spec, output] :
       llvm::zip_equal(signature.at("output_specs"), graphJson.at("outputs"))) {
    if (!spec.contains("user_output"))
      continue;
    if (!output.contains("as_tensor"))
      throw ArchiveError("a user output of the program is " + output.dump() +
                         "; pp imports programs whose outputs are tensors");
    results.push_back(namedValue(output["as_tensor"].at("name"), "forward"));
  }
  if (results.empty())
    throw ArchiveError("the program has no user outputs; pp imports "
                       "programs that return tensors");
  graph->registerOutput(
      results.size() == 1
          ? results[0]
          : graph->insertNode(graph->createTuple(results))->output());
  torch::jit::Function *forward = unit->create_function(
      c10::QualifiedName(*module.type()->name(), "forward"), graph);
  module.type()->addMethod(forward);
  return module;
}

/// The import, behind the plugin's C entry point.
OwningOpRef<ModuleOp> importArchive(StringRef path, MLIRContext *context,
                                    const ImportOptions &options) {
  Location fileLoc = FileLineColLoc::get(context, path, 0, 0);
  // LibTorch's zip reader checks no CRC-32s.
  std::string damaged = torchscript_frontend::checkZipEntries(
      path, "torch.export archive",
      "save the program again with torch.export.save, or copy it again");
  if (!damaged.empty())
    return emitError(fileLoc) << damaged, nullptr;
  torchscript_frontend::ImportOptions moduleOptions;
  torch::jit::Module module;
  try {
    ProgramBuilder builder(path.str(), options);
    module = builder.build(moduleOptions.inputTypes);
  } catch (const ArchiveError &error) {
    Location loc =
        error.position
            ? Location(FileLineColLoc::get(context, error.position->file,
                                           error.position->line, 0))
            : fileLoc;
    return emitError(loc) << error.what(), nullptr;
  } catch (const json::exception &error) {
    return emitError(fileLoc)
               << "the exported program is not in the format pp reads "
                  "(torch/_export/serde/schema.py's): "
               << error.what() << "; " << kResave,
           nullptr;
  } catch (const std::exception &error) {
    std::string message = error.what();
    return emitError(fileLoc)
               << "not a readable torch.export archive (torch.export.save's "
                  "format): "
               << StringRef(message).split('\n').first,
           nullptr;
  }
  return torchscript_frontend::importModule(
      module, module.get_method("forward").function().getSchema(), path,
      context, moduleOptions);
}

} // namespace
} // namespace pp::torchexport_frontend

extern "C" mlir::Operation *
ppImportTorchExport(const char *path, size_t pathSize,
                    mlir::MLIRContext *context,
                    const pp::torchexport_frontend::ImportOptions *options) {
  return pp::torchexport_frontend::importArchive(StringRef(path, pathSize),
                                                 context, *options)
      .release();
}
