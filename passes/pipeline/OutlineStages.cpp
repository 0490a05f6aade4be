//===- OutlineStages.cpp - pp-outline-stages ------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace pp {
#define GEN_PASS_DEF_OUTLINESTAGES
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// One function being outlined: a stage in one phase.
struct StageFunction {
  int64_t stage;
  bool backward;
  func::FuncOp function;
  OpBuilder builder;
  IRMapping mapping;
  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs;

  /// Makes `value` an argument of the function with `attrs`.
  Value addArgument(Value value, DictionaryAttr attrs) {
    Block &entry = function.getBody().front();
    BlockArgument arg = entry.addArgument(value.getType(), value.getLoc());
    function.setType(FunctionType::get(function.getContext(),
                                       entry.getArgumentTypes(),
                                       function.getResultTypes()));
    function.setArgAttrs(arg.getArgNumber(), attrs);
    mapping.map(value, arg);
    return arg;
  }
};

struct OutlineStagesPass
    : public pp::impl::OutlineStagesBase<OutlineStagesPass> {
  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main) || failed(outline(*main)))
      signalPassFailure();
  }

  /// True when `value` is computed by the forward phase of `stage`.
  static bool isForwardValueOf(Value value, int64_t stage) {
    Operation *def = value.getDefiningOp();
    if (!def || isBackward(def))
      return false;
    if (auto transfer = dyn_cast<TransferOp>(def))
      return static_cast<int64_t>(transfer.getTo()) == stage;
    return getStage(def) == stage;
  }

  LogicalResult outline(func::FuncOp main) {
    auto stageCosts = main->getAttrOfType<ArrayAttr>(kStageCostsAttrName);
    if (!stageCosts)
      return main.emitError("the program is not partitioned; run "
                            "pp-partition and pp-insert-send-recv first");
    int64_t numStages = stageCosts.size();
    Block &body = main.getBody().front();
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();

    // Create the functions, forward ones first.
    std::vector<StageFunction> functions;
    functions.reserve(2 * numStages);
    OpBuilder moduleBuilder(main);
    for (bool backward : {false, true})
      for (int64_t stage = 0; stage < numStages; ++stage) {
        std::string name = "stage" + std::to_string(stage) +
                           (backward ? "_backward" : "_forward");
        auto function =
            func::FuncOp::create(moduleBuilder, main.getLoc(), name,
                                 moduleBuilder.getFunctionType({}, {}));
        function->setAttr(kStageAttrName,
                          moduleBuilder.getI64IntegerAttr(stage));
        function->setAttr(
            kPhaseAttrName,
            StagePhaseAttr::get(context, backward ? StagePhase::backward
                                                  : StagePhase::forward));
        Block *entry = function.addEntryBlock();
        functions.push_back({stage,
                             backward,
                             function,
                             OpBuilder::atBlockEnd(entry),
                             {},
                             {},
                             {}});
      }
    auto functionOf = [&](int64_t stage, bool backward) -> StageFunction & {
      return functions[(backward ? numStages : 0) + stage];
    };

    // Forward values each backward function takes from its forward one.
    std::vector<llvm::SetVector<Value>> saved(numStages);

    // Maps `value` into `fn`, adding an argument or a copy when it is
    // defined elsewhere.
    auto lookup = [&](StageFunction &fn, Value value) -> FailureOr<Value> {
      if (Value mapped = fn.mapping.lookupOrNull(value))
        return mapped;
      Block *entry = &fn.function.getBody().front();
      if (auto arg = dyn_cast<BlockArgument>(value);
          arg && arg.getOwner() == &body) {
        // The backward takes the graph inputs it needs from its forward,
        // like activations, so that each sample is loaded once.
        if (fn.backward &&
            argumentRole(main, arg.getArgNumber()) == kRoleInput) {
          saved[fn.stage].insert(value);
          return fn.addArgument(
              value, savedAttrs(savedName(value, saved[fn.stage].size() - 1)));
        }
        return fn.addArgument(value, main.getArgAttrDict(arg.getArgNumber()));
      }
      Operation *def = value.getDefiningOp();
      if (auto constant = dyn_cast_or_null<arith::ConstantOp>(def)) {
        OpBuilder::InsertionGuard guard(fn.builder);
        fn.builder.setInsertionPointToStart(entry);
        Operation *copy = fn.builder.clone(*constant);
        copy->removeAttr(kPhaseAttrName);
        fn.mapping.map(value, copy->getResult(0));
        return copy->getResult(0);
      }
      if (fn.backward && isForwardValueOf(value, fn.stage)) {
        saved[fn.stage].insert(value);
        return fn.addArgument(
            value, savedAttrs(savedName(value, saved[fn.stage].size() - 1)));
      }
      return emitError(value.getLoc())
             << "stage " << fn.stage << " uses a value of another stage that "
             << "does not travel; run pp-insert-send-recv first";
    };

    for (Operation &op : body.without_terminator()) {
      if (auto transfer = dyn_cast<TransferOp>(op)) {
        bool backward = isBackward(transfer);
        StageFunction &sender = functionOf(transfer.getFrom(), backward);
        SmallVector<Value> values;
        for (Value value : transfer.getValues()) {
          FailureOr<Value> mapped = lookup(sender, value);
          if (failed(mapped))
            return failure();
          values.push_back(*mapped);
        }
        SendOp::create(sender.builder, transfer.getLoc(), transfer.getMesh(),
                       values, transfer.getTo(), transfer.getNames());
        StageFunction &receiver = functionOf(transfer.getTo(), backward);
        auto recv = RecvOp::create(
            receiver.builder, transfer.getLoc(), transfer.getResultTypes(),
            transfer.getMesh(), transfer.getFrom(), transfer.getNames());
        receiver.mapping.map(transfer.getResults(), recv.getResults());
        continue;
      }
      StageFunction &fn = functionOf(*getStage(&op), isBackward(&op));
      for (Value operand : op.getOperands())
        if (failed(lookup(fn, operand)))
          return failure();
      Operation *copy = fn.builder.clone(op, fn.mapping);
      copy->removeAttr(kStageAttrName);
      copy->removeAttr(kPhaseAttrName);
    }

    // Results of @main (the loss, the gradients) come from the function
    // that computes them.
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
      Operation *def = value.getDefiningOp();
      if (!def)
        return main.emitError("result ")
               << index << " of the program is an argument";
      StageFunction &fn = functionOf(*getStage(def), isBackward(def));
      fn.results.push_back(fn.mapping.lookup(value));
      fn.resultAttrs.push_back(main.getResultAttrDict(index));
    }
    for (int64_t stage = 0; stage < numStages; ++stage) {
      StageFunction &fn = functionOf(stage, /*backward=*/false);
      for (auto [index, value] : llvm::enumerate(saved[stage])) {
        FailureOr<Value> mapped = lookup(fn, value);
        if (failed(mapped))
          return failure();
        fn.results.push_back(*mapped);
        fn.resultAttrs.push_back(savedAttrs(savedName(value, index)));
      }
    }
    for (StageFunction &fn : functions) {
      func::ReturnOp::create(fn.builder, fn.function.getLoc(), fn.results);
      fn.function.setType(FunctionType::get(
          context, fn.function.getBody().front().getArgumentTypes(),
          TypeRange(ValueRange(fn.results))));
      fn.function.setAllResultAttrs(fn.resultAttrs);
    }
    if (Attribute loss = main->getAttr(kLossAttrName))
      module->setAttr(kLossAttrName, loss);
    module->setAttr(kStageCostsAttrName, stageCosts);
    main.erase();
    return success();
  }

  /// The name of the `index`th saved value of a stage.
  /// "saved<index>:" and the producing node or the graph input's name.
  static std::string savedName(Value value, size_t index) {
    std::string origin;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      auto function = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      origin = argumentName(function, arg.getArgNumber()).str();
    } else if (StringAttr node = getNode(value.getDefiningOp())) {
      origin = node.str();
    }
    return "saved" + std::to_string(index) +
           (origin.empty() ? std::string() : ":" + origin);
  }

  DictionaryAttr savedAttrs(StringRef name) {
    return getNameAndRoleAttrs(&getContext(), name, kRoleSaved);
  }
};

} // namespace
