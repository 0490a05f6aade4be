//===- EmitPackage.cpp - pp-emit-package ----------------------------------===//
//
// Writes a pipeline package: generated sources, the manifest pp-run reads,
// the initial parameters, and the compiled stage libraries.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/MemoryPlan.h"
#include "passes/codegen/Passes.h"
#include "passes/codegen/RuntimeDtype.h"
#include "passes/codegen/StageLibrary.h"
#include "runtime/core/OutputFile.h"
#include "runtime/core/Sha256.h"
#include "runtime/package/Package.h"
#include "runtime/package/StageCompiler.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "dialects/pp/IR/PPOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <thread>

namespace pp {
#define GEN_PASS_DEF_EMITPACKAGE
#include "passes/codegen/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;
using json = nlohmann::ordered_json;

namespace {

/// The manifest's dtype and shape of a tensor type (whose dtype
/// EmitPackagePass::checkDtypes has checked).
json describeType(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return {{"dtype", getRuntimeDtype(tensor.getElementType())->manifestName.str()},
          {"shape", tensor.getShape()}};
}

json describeValue(StringRef name, StringRef role, Type type) {
  json value = {{"name", name.str()}, {"role", role.str()}};
  value.update(describeType(type));
  return value;
}

StringRef stringAttr(DictionaryAttr dict, StringRef name) {
  auto attr = dict ? dict.getAs<StringAttr>(name) : StringAttr();
  return attr ? attr.getValue() : StringRef();
}

/// The phase of a stage function.
StagePhase phaseOf(func::FuncOp function) {
  return function->getAttrOfType<StagePhaseAttr>(kPhaseAttrName).getValue();
}

/// The manifest's description of one stage function.
json describeFunction(func::FuncOp function) {
  json args = json::array(), results = json::array();
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    DictionaryAttr attrs = function.getArgAttrDict(i);
    args.push_back(describeValue(stringAttr(attrs, kNameAttrName),
                                 stringAttr(attrs, kRoleAttrName),
                                 function.getArgumentTypes()[i]));
  }
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    DictionaryAttr attrs = function.getResultAttrDict(i);
    json result = describeValue(stringAttr(attrs, kNameAttrName),
                                stringAttr(attrs, kRoleAttrName),
                                function.getResultTypes()[i]);
    if (auto part = attrs ? attrs.getAs<IntegerAttr>(kGradientPartAttrName)
                          : IntegerAttr())
      result["part"] = part.getInt();
    results.push_back(result);
  }
  json messages = json::array();
  function.walk([&](Operation *op) {
    json message;
    if (auto send = dyn_cast<SendOp>(op))
      message = {{"kind", "send"}, {"peer", send.getTo()}};
    else if (auto recv = dyn_cast<RecvOp>(op))
      message = {{"kind", "recv"}, {"peer", recv.getFrom()}};
    else
      return;
    json tensors = json::array();
    ArrayAttr names = op->getAttrOfType<ArrayAttr>("names");
    TypeRange types = isa<SendOp>(op) ? TypeRange(op->getOperandTypes())
                                      : TypeRange(op->getResultTypes());
    for (auto [name, type] : llvm::zip(names, types)) {
      json tensor = {{"name", cast<StringAttr>(name).str()}};
      tensor.update(describeType(type));
      tensors.push_back(tensor);
    }
    message["tensors"] = tensors;
    messages.push_back(message);
  });
  return {{"function", function.getSymName().str()},
          {"phase", stringifyStagePhase(phaseOf(function)).str()},
          {"args", args},
          {"results", results},
          {"messages", messages}};
}

/// The manifest's "memory_plan" of a function lowered with `plan`
/// (kMemoryPlanAttrName): {"arena_bytes", "allocations": [[bytes, offset],
/// ...]}.
json describeMemoryPlan(DictionaryAttr plan) {
  json allocations = json::array();
  ArrayRef<int64_t> entries =
      plan.getAs<DenseI64ArrayAttr>("allocations").asArrayRef();
  for (size_t i = 0; i + 1 < entries.size(); i += 2)
    allocations.push_back({entries[i], entries[i + 1]});
  return {{"arena_bytes", plan.getAs<IntegerAttr>("arena_bytes").getInt()},
          {"allocations", allocations}};
}

/// The whole size of axis `axis` of a table that `gather` holds one
/// device's piece of: the local size times the devices of its group.
int64_t shardedAxisSize(ShardedGatherOp gather) {
  auto data = cast<RankedTensorType>(gather.getData().getType());
  int64_t axis = static_cast<int64_t>(gather.getAxis());
  int64_t size = data.getDimSize(axis < 0 ? axis + data.getRank() : axis);
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(gather, gather.getMeshAttr());
  for (Attribute name : gather.getAxes())
    if (MeshAxisAttr meshAxis =
            mesh ? mesh.lookupAxis(cast<StringAttr>(name).getValue())
                 : MeshAxisAttr())
      size *= meshAxis.getSize();
  return size;
}

/// The bound the values of the integer input `input` must stay below: the
/// smallest size of an axis that an nn.gather (or a pp.sharded_gather, its
/// whole table) indexes with them (followed through reshapes and casts), or
/// nullopt when no gather does.
std::optional<int64_t> indexBoundOf(Value input) {
  std::optional<int64_t> bound;
  SmallVector<Value> values = {input};
  while (!values.empty()) {
    Value value = values.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto gather = dyn_cast<nn::GatherOp>(user)) {
        if (use.get() != gather.getIndices())
          continue;
        auto data = cast<RankedTensorType>(gather.getData().getType());
        int64_t axis = static_cast<int64_t>(gather.getAxis());
        int64_t size = data.getDimSize(axis < 0 ? axis + data.getRank() : axis);
        bound = std::min(bound.value_or(size), size);
      } else if (auto sharded = dyn_cast<ShardedGatherOp>(user)) {
        if (use.get() != sharded.getIndices())
          continue;
        int64_t size = shardedAxisSize(sharded);
        bound = std::min(bound.value_or(size), size);
      } else if (isa<nn::ReshapeOp, nn::CastOp>(user)) {
        values.push_back(user->getResult(0));
      }
    }
  }
  return bound;
}

/// The first string of `value` (a member name or a string value) that is
/// not valid UTF-8, and its path (`stages[0].functions[1].args[2].name`);
/// nullopt when every string is UTF-8, as JSON needs.
std::optional<std::pair<std::string, std::string>>
findInvalidUtf8(const json &value, const std::string &path) {
  if (value.is_string()) {
    const std::string &text = value.get_ref<const std::string &>();
    if (!llvm::json::isUTF8(text))
      return std::make_pair(path, text);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      if (auto found =
              findInvalidUtf8(value[i], path + "[" + std::to_string(i) + "]"))
        return found;
  } else if (value.is_object()) {
    for (const auto &member : value.items()) {
      std::string memberPath =
          path.empty() ? member.key() : path + "." + member.key();
      if (!llvm::json::isUTF8(member.key()))
        return std::make_pair(memberPath, member.key());
      if (auto found = findInvalidUtf8(member.value(), memberPath))
        return found;
    }
  }
  return std::nullopt;
}

/// The import record's (kImportRecordAttrName) entries of `kind` as a
/// manifest array: per entry {"name": NAME, `field`: its value as `value`
/// gives it}; nullopt when the record has none of that kind.
template <typename ValueOf>
std::optional<json> importRecordEntries(ModuleOp module, StringRef kind,
                                        const char *field, ValueOf value) {
  auto record = module->getAttrOfType<DictionaryAttr>(kImportRecordAttrName);
  auto entries = record ? record.getAs<DictionaryAttr>(kind) : nullptr;
  if (!entries)
    return std::nullopt;
  json array = json::array();
  for (NamedAttribute entry : entries)
    array.push_back(
        {{"name", entry.getName().str()}, {field, value(entry.getValue())}});
  return array;
}

/// The manifest's "held_constants": the floating-point tensors of the model
/// that the import held constant, each with its element count.
std::optional<json> heldConstants(ModuleOp module) {
  return importRecordEntries(module, "held", "elements", [](Attribute count) {
    return cast<IntegerAttr>(count).getInt();
  });
}

/// The manifest's "folded_parameters": trained tensors that an exporter
/// folded from a parameter the model no longer has, each with that
/// parameter's name.
std::optional<json> foldedParameters(ModuleOp module) {
  return importRecordEntries(module, "folded", "from", [](Attribute from) {
    return cast<StringAttr>(from).str();
  });
}

struct EmitPackagePass : public pp::impl::EmitPackageBase<EmitPackagePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(emit()))
      signalPassFailure();
  }

  /// An entry of `pp.stage_costs` as JSON: numbers, strings, and arrays
  /// and objects of them (a stage's boundary tensors).
  static json costToJson(Attribute value) {
    if (auto text = dyn_cast<StringAttr>(value))
      return text.str();
    if (auto number = dyn_cast<FloatAttr>(value))
      return number.getValueAsDouble();
    if (auto number = dyn_cast<IntegerAttr>(value))
      return number.getInt();
    json result = isa<ArrayAttr>(value) ? json::array() : json::object();
    if (auto array = dyn_cast<ArrayAttr>(value))
      for (Attribute element : array)
        result.push_back(costToJson(element));
    if (auto dict = dyn_cast<DictionaryAttr>(value))
      for (NamedAttribute field : dict)
        result[field.getName().str()] = costToJson(field.getValue());
    return result;
  }

  LogicalResult fail(const Twine &message) {
    return getOperation().emitError(message);
  }

  LogicalResult emit() {
    ModuleOp module = getOperation();
    files = json::object();
    if (dir.empty())
      return fail("pp-emit-package needs dir=DIRECTORY");
    auto stageCosts = module->getAttrOfType<ArrayAttr>(kStageCostsAttrName);
    auto loss = module->getAttrOfType<DictionaryAttr>(kLossAttrName);
    auto forwardOnly =
        module->getAttrOfType<DictionaryAttr>(kForwardOnlyAttrName);
    if (!stageCosts || (!loss && !forwardOnly))
      return fail("nothing to package: run --pp-compile (or pp-attach-loss "
                  "or pp-mark-outputs through pp-outline-stages) first");
    int64_t numStages = stageCosts.size();
    SmallString<256> absolute(dir);
    llvm::sys::fs::make_absolute(absolute);
    packageDir = absolute.str().str();
    if (std::error_code error = llvm::sys::fs::create_directories(packageDir))
      return fail("cannot create the package directory '" + dir +
                  "': " + error.message());

    auto mesh = module.lookupSymbol<MeshOp>(kPipelineMeshName);
    if (!mesh)
      return fail("nothing to package: the program has no pipeline mesh @" +
                  kPipelineMeshName.str());
    if (failed(checkDtypes(module)))
      return failure();

    json manifest;
    manifest["format"] = "pp-pipeline-package";
    manifest["version"] = runtime::kPackageFormatVersion;
    manifest["num_stages"] = numStages;
    json axes = json::array();
    for (auto axis : mesh.getAxes().getAsRange<MeshAxisAttr>())
      axes.push_back({{"name", axis.getName().str()},
                      {"size", axis.getSize()},
                      {"kind", stringifyAxisKind(axis.getKind()).str()}});
    manifest["mesh"] = {{"axes", axes}};
    if (mesh.getNumStages() != numStages)
      return fail("the mesh @" + kPipelineMeshName.str() + " places " +
                  Twine(mesh.getNumStages()) + " stages, but the program has " +
                  Twine(numStages) + " (pp.stage_costs)");
    json stageRanks = json::array();
    for (int64_t stage = 0; stage < numStages; ++stage)
      stageRanks.push_back(mesh.getStageRank(stage));
    manifest["stage_ranks"] = stageRanks;
    // Each stage's functions in the order their phases run.
    std::vector<SmallVector<func::FuncOp>> functionsOf(numStages);
    for (auto function : module.getOps<func::FuncOp>()) {
      auto stage = function->getAttrOfType<IntegerAttr>(kStageAttrName);
      if (!stage || !function->getAttrOfType<StagePhaseAttr>(kPhaseAttrName))
        continue;
      if (stage.getInt() < 0 || stage.getInt() >= numStages)
        return fail("function @" + function.getSymName() + " is on stage " +
                    Twine(stage.getInt()) + ", outside the " +
                    Twine(numStages) + " stages");
      functionsOf[stage.getInt()].push_back(function);
    }
    json stages = json::array();
    for (int64_t stage = 0; stage < numStages; ++stage) {
      SmallVector<func::FuncOp> &functions = functionsOf[stage];
      llvm::stable_sort(functions, [](func::FuncOp a, func::FuncOp b) {
        return phaseOf(a) < phaseOf(b);
      });
      if (functions.empty() || phaseOf(functions.front()) != StagePhase::forward)
        return fail("stage " + Twine(stage) + " has no forward function; run "
                    "pp-outline-stages first");
      json described = json::array();
      for (func::FuncOp function : functions)
        described.push_back(describeFunction(function));
      stages.push_back({{"stage", stage}, {"functions", described}});
    }

    // Parameters, inputs and labels, from the forward functions that take
    // them; parameter values go to parameters.bin in this order, written
    // from the module's blobs (no copy of the weights is assembled).
    json parameters = json::array(), inputs = json::array(), labels;
    SmallVector<StringRef> values;
    uint64_t offset = 0;
    llvm::StringSet<> seenInputs;
    // Each parameter's index in `parameters`.
    llvm::StringMap<size_t> heldAt;
    // Integer inputs that index a table: their bound on every stage.
    llvm::StringMap<int64_t> indexBounds;
    // Forward-only: each output's description and stage, by name.
    llvm::StringMap<json> outputsByName;
    for (int64_t stage = 0; stage < numStages; ++stage) {
      func::FuncOp function = functionsOf[stage].front();
      for (unsigned i = 0; i < function.getNumResults(); ++i) {
        DictionaryAttr attrs = function.getResultAttrDict(i);
        if (stringAttr(attrs, kRoleAttrName) != kRoleOutput)
          continue;
        StringRef name = stringAttr(attrs, kNameAttrName);
        json output = describeValue(name, kRoleOutput,
                                    function.getResultTypes()[i]);
        output.erase("role");
        output["stage"] = stage;
        outputsByName[name] = output;
      }
      for (unsigned i = 0; i < function.getNumArguments(); ++i) {
        DictionaryAttr attrs = function.getArgAttrDict(i);
        StringRef role = stringAttr(attrs, kRoleAttrName);
        StringRef name = stringAttr(attrs, kNameAttrName);
        Type type = function.getArgumentTypes()[i];
        if (role == kRoleInput) {
          if (std::optional<int64_t> bound =
                  indexBoundOf(function.getArgument(i))) {
            auto [it, added] = indexBounds.try_emplace(name, *bound);
            it->second = std::min(it->second, *bound);
          }
          if (!forwardOnly && seenInputs.insert(name).second)
            inputs.push_back(describeValue(name, role, type));
        }
        if (role == kRoleLabel)
          labels = describeValue(name, role, type);
        if (role != kRoleParameter && role != kRoleFrozen &&
            role != kRoleConstant)
          continue;
        // A tied parameter, taken by several stages, is listed once: its
        // first stage owns it, "stages" names every holder.
        if (auto held = heldAt.find(name); held != heldAt.end()) {
          json &entry = parameters[held->second];
          if (!entry.contains("stages"))
            entry["stages"] = json::array({entry["stage"]});
          entry["stages"].push_back(stage);
          continue;
        }
        heldAt[name] = parameters.size();
        json parameter = describeValue(name, role, type);
        if (auto sharding = attrs.getAs<ShardingAttr>(kShardingAttrName))
          if (failed(describeSharding(name, sharding,
                                      cast<RankedTensorType>(type), mesh,
                                      parameter)))
            return failure();
        parameter["stage"] = stage;
        auto init = attrs.getAs<DenseResourceElementsAttr>(kInitAttrName);
        if (init) {
          AsmResourceBlob *data = init.getRawHandle().getBlob();
          if (!data)
            return fail("the initial value of parameter '" + name +
                        "' is missing (was the IR printed with elided "
                        "resources?)");
          parameter["init"] = "file";
          parameter["offset"] = offset;
          parameter["bytes"] = data->getData().size();
          offset += data->getData().size();
          values.push_back(
              StringRef(data->getData().data(), data->getData().size()));
        } else {
          parameter["init"] = "seeded_by_name";
        }
        parameters.push_back(parameter);
      }
    }
    if (forwardOnly) {
      // The model's inputs in its order, those no stage takes included.
      for (auto input :
           forwardOnly.getAs<ArrayAttr>("inputs").getAsRange<DictionaryAttr>())
        inputs.push_back(describeValue(stringAttr(input, "name"), kRoleInput,
                                       input.getAs<TypeAttr>("type").getValue()));
      json outputs = json::array();
      for (auto name :
           forwardOnly.getAs<ArrayAttr>("outputs").getAsRange<StringAttr>()) {
        auto it = outputsByName.find(name.getValue());
        if (it == outputsByName.end())
          return fail("no stage returns the output '" + name.getValue() +
                      "'; run pp-outline-stages first");
        outputs.push_back(it->second);
      }
      const json *first = inputs.empty() ? nullptr : &inputs.front()["shape"];
      manifest["microbatch_size"] =
          first && !first->empty() ? (*first)[0].get<int64_t>() : 1;
      manifest["outputs"] = outputs;
    } else {
      if (labels.is_null())
        return fail("no stage takes the labels");
      manifest["microbatch_size"] =
          labels["shape"].empty() ? 1 : labels["shape"][0].get<int64_t>();
      manifest["loss"] = {
          {"kind", stringAttr(loss, "kind").str()},
          {"output", stringAttr(loss, "output").str()},
          {"ignore_index", loss.getAs<IntegerAttr>("ignore_index").getInt()}};
      if (auto classes = loss.getAs<IntegerAttr>("classes"))
        manifest["loss"]["classes"] = classes.getInt();
      manifest["labels"] = labels;
    }
    for (json &input : inputs) {
      auto bound = indexBounds.find(input["name"].get<std::string>());
      if (bound != indexBounds.end())
        input["index_bound"] = bound->second;
    }
    manifest["inputs"] = inputs;
    manifest["parameters"] = parameters;
    if (std::optional<json> held = heldConstants(module))
      manifest["held_constants"] = *held;
    if (std::optional<json> folded = foldedParameters(module))
      manifest["folded_parameters"] = *folded;
    manifest["stages"] = stages;
    json costs = json::array();
    for (Attribute cost : stageCosts)
      costs.push_back(costToJson(cost));
    manifest["stage_costs"] = costs;

    if (auto invalid = findInvalidUtf8(manifest, "")) {
      std::string escaped;
      llvm::raw_string_ostream os(escaped);
      llvm::printEscapedString(invalid->second, os);
      return fail("cannot write the manifest: " + invalid->first + " (\"" +
                  escaped +
                  "\") is not valid UTF-8, which JSON needs; rename it");
    }
    // The files first, then their sizes and digests in the manifest, which
    // pp-run checks each file against before it uses it.
    if (failed(writeFile("parameters.bin", values)))
      return failure();
    json libraries;
    // Both targets make the same calls, so the CPU lowering's plans are the
    // package's.
    llvm::StringMap<DictionaryAttr> plans;
    for (runtime::StageTarget target :
         {runtime::StageTarget::Cpu, runtime::StageTarget::Cuda}) {
      const runtime::StageTargetFiles &targetFiles =
          runtime::stageTargetFiles(target);
      if (failed(writeSource(targetFiles.name, targetFiles.source,
                             target == runtime::StageTarget::Cpu ? &plans
                                                                 : nullptr)))
        return failure();
      libraries[targetFiles.name] = {{"source", targetFiles.source}};
    }
    for (json &stage : manifest["stages"])
      for (json &function : stage["functions"])
        function["memory_plan"] = describeMemoryPlan(
            plans.lookup(function["function"].get<std::string>()));
    std::vector<runtime::StageTarget> compiled;
    if (compile)
      compiled.push_back(runtime::StageTarget::Cpu);
    if (compileCuda)
      compiled.push_back(runtime::StageTarget::Cuda);
    if (failed(compileLibraries(compiled)))
      return failure();
    for (runtime::StageTarget target : compiled) {
      const runtime::StageTargetFiles &targetFiles =
          runtime::stageTargetFiles(target);
      libraries[targetFiles.name]["library"] = targetFiles.library;
    }
    manifest["libraries"] = libraries;
    manifest["files"] = files;

    std::string text = manifest.dump(2) + "\n";
    return writeFile("manifest.json", {text});
  }

  /// Adds "global_shape" and "sharding" ({"axis", "dim", "blocks"}) to
  /// `parameter`, the manifest's entry of parameter `name`, whose stage
  /// functions take the shard of type `local` that `sharding` describes: the
  /// runtime slices one dimension of the whole tensor over one tensor axis.
  LogicalResult describeSharding(StringRef name, ShardingAttr sharding,
                                 RankedTensorType local, MeshOp mesh,
                                 json &parameter) {
    std::optional<std::pair<int64_t, MeshAxisAttr>> split;
    bool supported = !sharding.getPartial() || sharding.getPartial().empty();
    for (auto [dim, axes] : llvm::enumerate(sharding.getDims())) {
      auto names = cast<ArrayAttr>(axes);
      if (names.empty())
        continue;
      MeshAxisAttr axis =
          names.size() == 1
              ? mesh.lookupAxis(cast<StringAttr>(names[0]).getValue())
              : MeshAxisAttr();
      supported = supported && !split && axis &&
                  axis.getKind() == AxisKind::tensor;
      split = {static_cast<int64_t>(dim), axis};
    }
    std::string printed;
    llvm::raw_string_ostream os(printed);
    os << sharding;
    if (!supported || !split)
      return fail("parameter '" + name + "' is sharded as " + printed +
                  "; the runtime shards one dimension of a parameter over "
                  "one tensor axis of the mesh @" +
                  kPipelineMeshName + " (a replicated parameter has no " +
                  kShardingAttrName + ")");
    auto axisSize = [&](StringRef axis) -> int64_t {
      MeshAxisAttr found = mesh.lookupAxis(axis);
      return found ? found.getSize() : 0;
    };
    SmallVector<int64_t> global =
        sharding.getGlobalShape(local.getShape(), axisSize);
    std::string problem = sharding.problemWith(
        RankedTensorType::get(global, local.getElementType()), axisSize);
    if (!problem.empty())
      return fail("parameter '" + name + "': " + problem);
    auto [dim, axis] = *split;
    parameter["global_shape"] = std::vector<int64_t>(global.begin(), global.end());
    parameter["sharding"] = {{"axis", axis.getName().str()},
                             {"dim", dim},
                             {"blocks", sharding.getBlockCount(dim)}};
    return success();
  }

  /// Every tensor a stage function takes, returns, sends or receives is a
  /// ranked tensor with a runtime dtype.
  LogicalResult checkDtypes(ModuleOp module) {
    auto check = [](Operation *where, Type type) -> LogicalResult {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (tensor && getRuntimeDtype(tensor.getElementType()))
        return success();
      return where->emitError("passes ")
             << type << " to or from the runtime, which takes ranked tensors "
             << "of " << runtimeDtypeNames();
    };
    for (auto function : module.getOps<func::FuncOp>()) {
      for (Type type : llvm::concat<const Type>(function.getArgumentTypes(),
                                                function.getResultTypes()))
        if (failed(check(function, type)))
          return failure();
      WalkResult walk = function.walk([&](Operation *op) {
        TypeRange types = isa<SendOp>(op)   ? TypeRange(op->getOperandTypes())
                          : isa<RecvOp>(op) ? TypeRange(op->getResultTypes())
                                            : TypeRange();
        for (Type type : types)
          if (failed(check(op, type)))
            return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return failure();
    }
    return success();
  }

  std::string pathOf(StringRef name) {
    SmallString<256> path(packageDir);
    llvm::sys::path::append(path, name);
    return path.str().str();
  }

  /// Writes the concatenation of `pieces` to the package file `name`; all
  /// but the manifest are recorded in `files`, hashed as they are written
  /// (no second read of parameters.bin) with the runtime's SHA-256, the one
  /// pp-run checks them with.
  LogicalResult writeFile(StringRef name, ArrayRef<StringRef> pieces) {
    runtime::Sha256 digest;
    size_t bytes = 0;
    std::vector<runtime::FilePiece> filePieces;
    for (StringRef piece : pieces) {
      filePieces.push_back({piece.data(), piece.size()});
      digest.update(piece.data(), piece.size());
      bytes += piece.size();
    }
    try {
      runtime::writeOutputFile(pathOf(name), filePieces, "the package file");
    } catch (const std::runtime_error &failure) {
      return fail(failure.what());
    }
    if (name != "manifest.json")
      record(name, bytes, digest.hex());
    return success();
  }

  /// Records the size and SHA-256 (hex digits) of the package file `name`
  /// in `files`.
  void record(StringRef name, size_t bytes, std::string sha256) {
    files[name.str()] = {{"bytes", bytes}, {"sha256", std::move(sha256)}};
  }

  /// Records a file another program wrote (a compiled library), read in
  /// pieces.
  LogicalResult recordFile(StringRef name) {
    std::string path = pathOf(name);
    std::ifstream file(path, std::ios::binary);
    if (!file)
      return fail("cannot read '" + path + "'");
    runtime::Sha256 digest;
    size_t bytes = digest.update(file);
    if (file.bad())
      return fail("cannot read '" + path + "'");
    record(name, bytes, digest.hex());
    return success();
  }

  /// Lowers a copy of the module for `target` and writes it as C++; with
  /// `plans`, records each function's memory plan.
  LogicalResult writeSource(StringRef target, StringRef name,
                            llvm::StringMap<DictionaryAttr> *plans) {
    std::string code;
    llvm::raw_string_ostream os(code);
    if (failed(writeStageSource(getOperation(), target, os, plans)))
      return failure();
    return writeFile(name, {code});
  }

  /// Compiles the sources of `targets` into their libraries at once
  /// (separate compiler processes) and records them.
  LogicalResult compileLibraries(ArrayRef<runtime::StageTarget> targets) {
    std::vector<std::string> problems(targets.size());
    std::vector<std::thread> compiles;
    for (auto [index, target] : llvm::enumerate(targets))
      compiles.emplace_back([&, index = index, target = target] {
        const runtime::StageTargetFiles &files =
            runtime::stageTargetFiles(target);
        problems[index] = runtime::compileStageLibrary(
            target, pathOf(files.source), pathOf(files.library),
            pathOf(std::string("compile-") + files.name + ".log"));
      });
    for (std::thread &compile : compiles)
      compile.join();
    for (const std::string &problem : problems)
      if (!problem.empty())
        return fail(problem);
    for (runtime::StageTarget target : targets)
      if (failed(recordFile(runtime::stageTargetFiles(target).library)))
        return failure();
    return success();
  }

  std::string packageDir;
  /// The size and SHA-256 of each file written so far, but the manifest.
  json files;
};

} // namespace
