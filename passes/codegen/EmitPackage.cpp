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
#include "runtime/package/Manifest.h"
#include "runtime/package/StageCompiler.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "dialects/pp/IR/PPOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
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

namespace {

/// The manifest's tensor `name` in `role` of `type`, a ranked tensor of a
/// runtime dtype (EmitPackagePass::checkDtypes has checked).
runtime::TensorInfo describeValue(StringRef name, runtime::Role role,
                                  Type type) {
  auto tensor = cast<RankedTensorType>(type);
  runtime::TensorInfo info;
  info.name = name.str();
  info.role = role;
  std::string dtype =
      getRuntimeDtype(tensor.getElementType())->manifestName.str();
  pp_dtype_from_name(dtype.c_str(), &info.dtype);
  info.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  return info;
}

StringRef stringAttr(DictionaryAttr dict, StringRef name) {
  auto attr = dict ? dict.getAs<StringAttr>(name) : StringAttr();
  return attr ? attr.getValue() : StringRef();
}

/// The phase of a stage function.
StagePhase phaseOf(func::FuncOp function) {
  return function->getAttrOfType<StagePhaseAttr>(kPhaseAttrName).getValue();
}

/// The manifest's description of a value of `function` (`what`: "argument
/// 2", "result 0") whose attributes are `attrs`; an error unless its role
/// (kRoleAttrName) is one the runtime knows.
FailureOr<runtime::TensorInfo> describeFunctionValue(func::FuncOp function,
                                                     const Twine &what,
                                                     DictionaryAttr attrs,
                                                     Type type) {
  std::optional<runtime::Role> role =
      runtime::parseRole(stringAttr(attrs, kRoleAttrName).str());
  if (!role)
    return function.emitError()
           << what << " has the role '" << stringAttr(attrs, kRoleAttrName)
           << "', which the runtime does not know";
  runtime::TensorInfo tensor =
      describeValue(stringAttr(attrs, kNameAttrName), *role, type);
  if (auto part = attrs.getAs<IntegerAttr>(kGradientPartAttrName))
    tensor.part = part.getInt();
  return tensor;
}

/// The manifest's description of one stage function (without its memory
/// plan).
FailureOr<runtime::StageFunctionInfo> describeFunction(func::FuncOp function) {
  runtime::StageFunctionInfo info;
  info.symbol = function.getSymName().str();
  info.phase =
      *runtime::parsePhase(stringifyStagePhase(phaseOf(function)).str());
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    FailureOr<runtime::TensorInfo> arg = describeFunctionValue(
        function, "argument " + Twine(i), function.getArgAttrDict(i),
        function.getArgumentTypes()[i]);
    if (failed(arg))
      return failure();
    info.args.push_back(*arg);
  }
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    FailureOr<runtime::TensorInfo> result = describeFunctionValue(
        function, "result " + Twine(i), function.getResultAttrDict(i),
        function.getResultTypes()[i]);
    if (failed(result))
      return failure();
    info.results.push_back(*result);
  }
  function.walk([&](Operation *op) {
    runtime::MessageInfo message;
    if (auto send = dyn_cast<SendOp>(op))
      message = {true, static_cast<int64_t>(send.getTo()), {}};
    else if (auto recv = dyn_cast<RecvOp>(op))
      message = {false, static_cast<int64_t>(recv.getFrom()), {}};
    else
      return;
    ArrayAttr names = op->getAttrOfType<ArrayAttr>("names");
    TypeRange types = isa<SendOp>(op) ? TypeRange(op->getOperandTypes())
                                      : TypeRange(op->getResultTypes());
    for (auto [name, type] : llvm::zip(names, types))
      message.tensors.push_back(describeValue(cast<StringAttr>(name).getValue(),
                                              runtime::Role::None, type));
    info.messages.push_back(std::move(message));
  });
  return info;
}

/// The memory plan of a function lowered with `plan` (kMemoryPlanAttrName).
runtime::MemoryPlan describeMemoryPlan(DictionaryAttr plan) {
  runtime::MemoryPlan described;
  described.arenaBytes = plan.getAs<IntegerAttr>("arena_bytes").getInt();
  ArrayRef<int64_t> entries =
      plan.getAs<DenseI64ArrayAttr>("allocations").asArrayRef();
  for (size_t i = 0; i + 1 < entries.size(); i += 2)
    described.allocations.push_back(
        {static_cast<uint64_t>(entries[i]), entries[i + 1]});
  return described;
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

/// The import record's (kImportRecordAttrName) entries of `kind`, each
/// name with its value as `value` gives it; none when the record has none
/// of that kind.
template <typename ValueOf>
auto importRecordEntries(ModuleOp module, StringRef kind, ValueOf value) {
  std::vector<std::pair<std::string, decltype(value(Attribute()))>> found;
  auto record = module->getAttrOfType<DictionaryAttr>(kImportRecordAttrName);
  if (auto entries = record ? record.getAs<DictionaryAttr>(kind) : nullptr)
    for (NamedAttribute entry : entries)
      found.emplace_back(entry.getName().str(), value(entry.getValue()));
  return found;
}

/// The floating-point tensors of the model that the import held constant,
/// each with its element count.
std::vector<std::pair<std::string, int64_t>> heldConstants(ModuleOp module) {
  return importRecordEntries(module, "held", [](Attribute count) {
    return cast<IntegerAttr>(count).getInt();
  });
}

/// Trained tensors that an exporter folded from a parameter the model no
/// longer has, each with that parameter's name.
std::map<std::string, std::string> foldedParameters(ModuleOp module) {
  auto folded = importRecordEntries(module, "folded", [](Attribute from) {
    return cast<StringAttr>(from).str();
  });
  return {folded.begin(), folded.end()};
}

struct EmitPackagePass : public pp::impl::EmitPackageBase<EmitPackagePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(emit()))
      signalPassFailure();
  }

  /// An entry of `pp.stage_costs` as JSON: numbers, strings, and arrays
  /// and objects of them (a stage's boundary tensors), for the runtime to
  /// read as it reads the manifest's.
  static nlohmann::json costToJson(Attribute value) {
    if (auto text = dyn_cast<StringAttr>(value))
      return text.str();
    if (auto number = dyn_cast<FloatAttr>(value))
      return number.getValueAsDouble();
    if (auto number = dyn_cast<IntegerAttr>(value))
      return number.getInt();
    nlohmann::json result = isa<ArrayAttr>(value) ? nlohmann::json::array()
                                                  : nlohmann::json::object();
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
    if (dir.empty())
      return fail("pp-emit-package needs dir=DIRECTORY");
    auto stageCosts = module->getAttrOfType<ArrayAttr>(kStageCostsAttrName);
    auto loss = module->getAttrOfType<DictionaryAttr>(kLossAttrName);
    if (auto precision = module->getAttrOfType<StringAttr>(kPrecisionAttrName))
      manifest.precision = precision.str();
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

    manifest.numStages = numStages;
    std::vector<runtime::MeshAxis> axes;
    for (auto axis : mesh.getAxes().getAsRange<MeshAxisAttr>())
      axes.push_back(
          {axis.getName().str(), axis.getSize(),
           *runtime::parseAxisKind(stringifyAxisKind(axis.getKind()).str())});
    try {
      manifest.mesh = runtime::DeviceMesh(std::move(axes));
    } catch (const std::runtime_error &problem) {
      return fail("the mesh @" + kPipelineMeshName.str() + ": " +
                  problem.what());
    }
    if (mesh.getNumStages() != numStages)
      return fail("the mesh @" + kPipelineMeshName.str() + " places " +
                  Twine(mesh.getNumStages()) + " stages, but the program has " +
                  Twine(numStages) + " (pp.stage_costs)");
    for (int64_t stage = 0; stage < numStages; ++stage)
      manifest.stageRanks.push_back(mesh.getStageRank(stage));
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
    for (int64_t stage = 0; stage < numStages; ++stage) {
      SmallVector<func::FuncOp> &functions = functionsOf[stage];
      llvm::stable_sort(functions, [](func::FuncOp a, func::FuncOp b) {
        return phaseOf(a) < phaseOf(b);
      });
      if (functions.empty() || phaseOf(functions.front()) != StagePhase::forward)
        return fail("stage " + Twine(stage) + " has no forward function; run "
                    "pp-outline-stages first");
      runtime::StageInfo &described = manifest.stages.emplace_back();
      for (func::FuncOp function : functions) {
        FailureOr<runtime::StageFunctionInfo> info = describeFunction(function);
        if (failed(info))
          return failure();
        described.functions.push_back(std::move(*info));
      }
    }

    // Parameters, inputs and labels, from the forward functions that take
    // them; parameter values go to parameters.bin in this order, written
    // from the module's blobs (no copy of the weights is assembled).
    SmallVector<StringRef> values;
    uint64_t offset = 0;
    llvm::StringSet<> seenInputs;
    // Each parameter's index in manifest.parameters.
    llvm::StringMap<size_t> heldAt;
    // Integer inputs that index a table: their bound on every stage.
    llvm::StringMap<int64_t> indexBounds;
    // Forward-only: each output and its stage, by name.
    llvm::StringMap<runtime::OutputInfo> outputsByName;
    bool labelled = false;
    for (int64_t stage = 0; stage < numStages; ++stage) {
      func::FuncOp function = functionsOf[stage].front();
      const runtime::StageFunctionInfo &described =
          manifest.stages[stage].functions.front();
      for (const runtime::TensorInfo &result : described.results)
        if (result.role == runtime::Role::Output)
          outputsByName[result.name] = {result, stage};
      for (unsigned i = 0; i < function.getNumArguments(); ++i) {
        const runtime::TensorInfo &arg = described.args[i];
        if (arg.role == runtime::Role::Input) {
          if (std::optional<int64_t> bound =
                  indexBoundOf(function.getArgument(i))) {
            auto [it, added] = indexBounds.try_emplace(arg.name, *bound);
            it->second = std::min(it->second, *bound);
          }
          if (!forwardOnly && seenInputs.insert(arg.name).second)
            manifest.inputs.push_back(arg);
        }
        if (arg.role == runtime::Role::Label) {
          manifest.labels = arg;
          labelled = true;
        }
        if (!runtime::isParameterRole(arg.role))
          continue;
        // A tied parameter, taken by several stages, is listed once: its
        // first stage owns it, `stages` names every holder.
        if (auto held = heldAt.find(arg.name); held != heldAt.end()) {
          manifest.parameters[held->second].stages.push_back(stage);
          continue;
        }
        heldAt[arg.name] = manifest.parameters.size();
        runtime::ParameterInfo parameter;
        parameter.tensor = arg;
        parameter.stage = stage;
        parameter.stages = {stage};
        parameter.modelDtype = arg.dtype;
        DictionaryAttr attrs = function.getArgAttrDict(i);
        if (auto stored = attrs.getAs<TypeAttr>(kModelDtypeAttrName))
          if (std::optional<RuntimeDtype> dtype =
                  getRuntimeDtype(stored.getValue()))
            pp_dtype_from_name(dtype->manifestName.data(),
                               &parameter.modelDtype);
        if (auto sharding = attrs.getAs<ShardingAttr>(kShardingAttrName))
          if (failed(describeSharding(
                  arg.name, sharding,
                  cast<RankedTensorType>(function.getArgumentTypes()[i]), mesh,
                  parameter)))
            return failure();
        if (auto init = attrs.getAs<DenseResourceElementsAttr>(kInitAttrName)) {
          AsmResourceBlob *data = init.getRawHandle().getBlob();
          if (!data)
            return fail("the initial value of parameter '" + arg.name +
                        "' is missing (was the IR printed with elided "
                        "resources?)");
          parameter.fromFile = true;
          parameter.offset = offset;
          parameter.bytes = data->getData().size();
          offset += data->getData().size();
          values.push_back(
              StringRef(data->getData().data(), data->getData().size()));
        }
        manifest.parameters.push_back(std::move(parameter));
      }
    }
    if (forwardOnly) {
      // The model's inputs in its order, those no stage takes included.
      for (auto input :
           forwardOnly.getAs<ArrayAttr>("inputs").getAsRange<DictionaryAttr>())
        manifest.inputs.push_back(
            describeValue(stringAttr(input, "name"), runtime::Role::Input,
                          input.getAs<TypeAttr>("type").getValue()));
      for (auto name :
           forwardOnly.getAs<ArrayAttr>("outputs").getAsRange<StringAttr>()) {
        auto it = outputsByName.find(name.getValue());
        if (it == outputsByName.end())
          return fail("no stage returns the output '" + name.getValue() +
                      "'; run pp-outline-stages first");
        manifest.outputs.push_back(it->second);
      }
      const runtime::Shape *first =
          manifest.inputs.empty() ? nullptr : &manifest.inputs.front().shape;
      manifest.microbatchSize = first && !first->empty() ? first->front() : 1;
    } else {
      if (!labelled)
        return fail("no stage takes the labels");
      const runtime::Shape &labels = manifest.labels.shape;
      manifest.microbatchSize = labels.empty() ? 1 : labels.front();
      manifest.lossKind = stringAttr(loss, "kind").str();
      manifest.lossOutput = stringAttr(loss, "output").str();
      manifest.ignoreIndex = loss.getAs<IntegerAttr>("ignore_index").getInt();
      if (auto classes = loss.getAs<IntegerAttr>("classes"))
        manifest.lossClasses = classes.getInt();
    }
    for (runtime::TensorInfo &input : manifest.inputs) {
      auto bound = indexBounds.find(input.name);
      if (bound != indexBounds.end())
        input.indexBound = bound->second;
    }
    manifest.heldConstants = heldConstants(module);
    manifest.foldedParameters = foldedParameters(module);
    for (auto [stage, cost] : llvm::enumerate(stageCosts)) {
      try {
        manifest.stageCosts.push_back(runtime::readStageCost(
            costToJson(cost),
            kStageCostsAttrName.str() + "[" + std::to_string(stage) + "]"));
      } catch (const std::runtime_error &problem) {
        return fail(problem.what());
      }
    }

    try {
      runtime::checkManifestStrings(manifest);
    } catch (const std::runtime_error &problem) {
      return fail(problem.what());
    }
    // The files first, then their sizes and digests in the manifest, which
    // pp-run checks each file against before it uses it.
    if (failed(writeFile(runtime::kParametersFileName, values)))
      return failure();
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
      manifest.sourceTargets.insert(target);
    }
    for (runtime::StageInfo &stage : manifest.stages)
      for (runtime::StageFunctionInfo &function : stage.functions)
        function.memoryPlan = describeMemoryPlan(plans.lookup(function.symbol));
    std::vector<runtime::StageTarget> compiled;
    if (compile)
      compiled.push_back(runtime::StageTarget::Cpu);
    if (compileCuda)
      compiled.push_back(runtime::StageTarget::Cuda);
    if (failed(compileLibraries(compiled)))
      return failure();
    manifest.compiledTargets.insert(compiled.begin(), compiled.end());
    return writeFile(runtime::kManifestFileName,
                     {runtime::writeManifest(manifest)});
  }

  /// Sets the global shape and sharding of `parameter`, the manifest's
  /// entry of parameter `name`, whose stage functions take the shard of
  /// type `local` that `sharding` describes: the runtime slices one
  /// dimension of the whole tensor over one tensor axis.
  LogicalResult describeSharding(StringRef name, ShardingAttr sharding,
                                 RankedTensorType local, MeshOp mesh,
                                 runtime::ParameterInfo &parameter) {
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
    parameter.sharding = runtime::ParameterSharding{
        axis.getName().str(), dim, sharding.getBlockCount(dim), axis.getSize(),
        runtime::Shape(global.begin(), global.end())};
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
  /// but the manifest are recorded in the manifest's files, hashed as they are
  /// written (no second read of parameters.bin) with the runtime's SHA-256, the
  /// one pp-run checks them with.
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
    if (name != runtime::kManifestFileName)
      record(name, bytes, digest.hex());
    return success();
  }

  /// Records the size and SHA-256 (hex digits) of the package file `name`
  /// in the manifest.
  void record(StringRef name, size_t bytes, std::string sha256) {
    manifest.files[name.str()] = {bytes, std::move(sha256)};
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
  /// What the manifest records, filled as the package is written.
  runtime::Manifest manifest;
};

} // namespace
