//===- ProgramUtils.cpp - the program the passes transform ----------------===//

#include "passes/ProgramUtils.h"

#include "dialects/pp/IR/PPDialect.h"

using namespace mlir;

namespace pp {

FailureOr<func::FuncOp> getProgram(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (main && !main.isExternal())
    return main;
  return module.emitError("expected the training program as func.func @main "
                          "(import a model with `pp-opt MODEL.onnx`)");
}

LogicalResult checkFlatProgram(func::FuncOp function) {
  if (!llvm::hasSingleElement(function.getBody()))
    return function.emitError("the program has several blocks; pp handles a "
                              "model as one block of ops");
  for (Operation &op : function.getBody().front())
    if (op.getNumRegions() != 0)
        return op.emitOpError("has regions; pp handles a model as one flat "
                            "block of ops");
  return success();
}

LogicalResult checkBatchDimension(func::FuncOp main, int64_t size,
                                  std::optional<unsigned> output) {
  if (size == 0)
    return success();
  auto check = [&](Type type, const Twine &what) -> LogicalResult {
    auto tensor = cast<RankedTensorType>(type);
    if (tensor.getRank() >= 1 && tensor.getDimSize(0) == size)
      return success();
    return main.emitError() << what << " has type " << tensor
                            << ", but microbatch-size=" << size
                            << " needs dimension 0 of size " << size
                            << "; export the model with batch size " << size
                            << " or give it a symbolic batch dimension";
  };
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    if (argumentRole(main, i) == kRoleInput &&
        failed(check(main.getArgumentTypes()[i],
                     "input '" + argumentName(main, i) + "'")))
      return failure();
  if (output)
    return check(main.getResultTypes()[*output], "the loss output");
  return success();
}

StringRef argumentRole(func::FuncOp function, unsigned index) {
  auto role = function.getArgAttrOfType<StringAttr>(index, kRoleAttrName);
  return role ? role.getValue() : StringRef();
}

StringRef argumentName(func::FuncOp function, unsigned index) {
  auto name = function.getArgAttrOfType<StringAttr>(index, kNameAttrName);
  return name ? name.getValue() : StringRef();
}

bool isModelParameter(func::FuncOp function, unsigned index) {
  StringRef role = argumentRole(function, index);
  return role == kRoleParameter || role == kRoleFrozen ||
         role == kRoleConstant;
}

llvm::DenseSet<Value> valuesDerivedFrom(func::FuncOp function,
                                        function_ref<bool(unsigned)> seed) {
  llvm::DenseSet<Value> derived;
  for (BlockArgument arg : function.getArguments())
    if (seed(arg.getArgNumber()))
      derived.insert(arg);
  for (Operation &op : function.getBody().front().without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value value) { return derived.contains(value); }))
      derived.insert(op.result_begin(), op.result_end());
  return derived;
}

int64_t getParameterStage(func::FuncOp function, unsigned index) {
  auto stage = function.getArgAttrOfType<IntegerAttr>(index, kStageAttrName);
  return stage ? stage.getInt() : 0;
}

std::string uniqueArgumentName(func::FuncOp function, StringRef base) {
  auto taken = [&](StringRef name) {
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      if (argumentName(function, i) == name)
        return true;
    return false;
  };
  std::string name = base.str();
  for (int suffix = 1; taken(name); ++suffix)
    name = (base + "_" + Twine(suffix)).str();
  return name;
}

StringAttr getNode(Operation *op) {
  return op->getAttrOfType<StringAttr>(kNodeAttrName);
}

bool isBackward(Operation *op) {
  auto phase = op->getAttrOfType<StagePhaseAttr>(kPhaseAttrName);
  return phase && phase.getValue() != StagePhase::forward;
}

void setBackward(Operation *op) {
  op->setAttr(kPhaseAttrName,
              StagePhaseAttr::get(op->getContext(), StagePhase::backward));
}

std::optional<int64_t> getStage(Operation *op) {
  if (auto stage = op->getAttrOfType<IntegerAttr>(kStageAttrName))
    return stage.getInt();
  return std::nullopt;
}

} // namespace pp
