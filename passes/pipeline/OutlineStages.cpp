//===- OutlineStages.cpp - pp-outline-stages ------------------------------===//
//
// Each `pp.stage` op of @main becomes a function `@stage<N>_<phase>`; each
// `pp.transfer` becomes a `pp.send` at the end of the producing function and
// a `pp.recv` in the receiving stage's function of the same phase. Values a
// later phase of a stage takes from an earlier one (activations, graph
// inputs, values received in the forward) are returned by the earlier
// function and taken by the later one as `saved` values, matched by name.
// A forward-only program gets forward functions only.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace pp {
#define GEN_PASS_DEF_OUTLINESTAGES
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// The function of one stage in one phase, as it is being built.
struct StageFunction {
  int64_t stage;
  StagePhase phase;
  func::FuncOp function;
  /// Where the next op goes: the end of the entry block.
  OpBuilder builder;
  /// Values of @main (arguments, stage op results, received values) to
  /// their counterparts in the function.
  IRMapping mapping;
  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs;
  /// The names of the saved values a forward function returns.
  llvm::StringSet<> savedNames;

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

/// The stage op whose results a transfer carries, or null (after an error)
/// when they do not all come from one stage op of stage `from`.
StageOp producerOf(TransferOp transfer) {
  StageOp producer;
  for (Value value : transfer.getValues()) {
    auto stageOp = value.getDefiningOp<StageOp>();
    if (!stageOp || (producer && stageOp != producer) ||
        stageOp.getStage() != transfer.getFrom()) {
      transfer.emitOpError("must carry results of one pp.stage op of stage ")
          << transfer.getFrom() << "; run pp-insert-send-recv to create "
          << "transfers";
      return StageOp();
    }
    producer = stageOp;
  }
  return producer;
}

/// The phase of the values a transfer carries: its producer's.
StagePhase phaseOf(TransferOp transfer) {
  return transfer.getValues().front().getDefiningOp<StageOp>().getPhase();
}

class Outliner {
public:
  Outliner(func::FuncOp main, int64_t numStages)
      : main(main), context(main.getContext()), numStages(numStages) {}

  LogicalResult outline() {
    OpBuilder moduleBuilder(main);
    // A forward-only program (pp-mark-outputs) has no backward functions.
    SmallVector<StagePhase, 2> phases = {StagePhase::forward};
    if (!main->hasAttr(kForwardOnlyAttrName))
      phases.push_back(StagePhase::backward);
    for (StagePhase phase : phases)
      for (int64_t stage = 0; stage < numStages; ++stage) {
        std::string name = ("stage" + Twine(stage) + "_" +
                            stringifyStagePhase(phase))
                               .str();
        auto function =
            func::FuncOp::create(moduleBuilder, main.getLoc(), name,
                                 moduleBuilder.getFunctionType({}, {}));
        function->setAttr(kStageAttrName,
                          moduleBuilder.getI64IntegerAttr(stage));
        function->setAttr(kPhaseAttrName, StagePhaseAttr::get(context, phase));
        Block *entry = function.addEntryBlock();
        functions.push_back({stage,
                             phase,
                             function,
                             OpBuilder::atBlockEnd(entry),
                             {},
                             {},
                             {},
                             {}});
      }

    Block &body = main.getBody().front();
    for (Operation &op : body.without_terminator()) {
      if (auto transfer = dyn_cast<TransferOp>(op)) {
        if (!producerOf(transfer) ||
            failed(checkStage(transfer, transfer.getTo())) ||
            failed(outlineSend(transfer)))
          return failure();
      } else if (auto stageOp = dyn_cast<StageOp>(op)) {
        if (failed(checkStage(stageOp, stageOp.getStage())) ||
            failed(outlineStage(stageOp)))
          return failure();
      } else {
        return op.emitOpError("is outside every pp.stage; run pp-partition "
                              "and pp-insert-send-recv first");
      }
    }

    // The loss and the gradients come from the functions that compute them.
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
      auto producer = value.getDefiningOp<StageOp>();
      if (!producer)
        return main.emitError("result ")
               << index << " of the program is not computed by a stage";
      StageFunction &fn = functionOf(producer.getStage(), producer.getPhase());
      fn.results.push_back(fn.mapping.lookup(value));
      fn.resultAttrs.push_back(main.getResultAttrDict(index));
    }
    for (StageFunction &fn : functions) {
      func::ReturnOp::create(fn.builder, fn.function.getLoc(), fn.results);
      fn.function.setType(FunctionType::get(
          context, fn.function.getBody().front().getArgumentTypes(),
          TypeRange(ValueRange(fn.results))));
      fn.function.setAllResultAttrs(fn.resultAttrs);
    }
    return success();
  }

private:
  /// `stage` is one of the partition's stages.
  LogicalResult checkStage(Operation *op, int64_t stage) {
    if (stage >= 0 && stage < numStages)
      return success();
    return op->emitOpError("names stage ")
           << stage << ", but the program was partitioned into " << numStages
           << " stages (pp.stage_costs)";
  }

  StageFunction &functionOf(int64_t stage, StagePhase phase) {
    return functions[(phase == StagePhase::forward ? 0 : numStages) + stage];
  }

  /// Copies the body of `stageOp` into its function.
  LogicalResult outlineStage(StageOp stageOp) {
    if (stageOp.getPhase() != StagePhase::forward &&
        stageOp.getPhase() != StagePhase::backward)
      return stageOp.emitOpError("phase ")
             << stringifyStagePhase(stageOp.getPhase())
             << " has no schedule yet; the runtime runs forward and backward";
    StageFunction &fn = functionOf(stageOp.getStage(), stageOp.getPhase());
    Block &block = stageOp.getBody().front();
    for (auto [operand, arg] :
         llvm::zip(stageOp.getInputs(), block.getArguments())) {
      FailureOr<Value> mapped = lookup(fn, operand);
      if (failed(mapped))
        return failure();
      fn.mapping.map(arg, *mapped);
    }
    for (Operation &op : block.without_terminator())
      fn.builder.clone(op, fn.mapping);
    for (auto [result, yielded] :
         llvm::zip(stageOp.getResults(),
                   block.getTerminator()->getOperands()))
      fn.mapping.map(result, fn.mapping.lookupOrDefault(yielded));
    return success();
  }

  /// Adds the `pp.send` of `transfer` to the end of its producer's function.
  LogicalResult outlineSend(TransferOp transfer) {
    StageFunction &sender = functionOf(transfer.getFrom(), phaseOf(transfer));
    SmallVector<Value> values;
    for (Value value : transfer.getValues()) {
      FailureOr<Value> mapped = lookup(sender, value);
      if (failed(mapped))
        return failure();
      values.push_back(*mapped);
    }
    SendOp::create(sender.builder, transfer.getLoc(), transfer.getMesh(),
                   values, transfer.getTo(), transfer.getNames());
    return success();
  }

  /// The counterpart in `fn` of `value` of @main: an argument, a received
  /// value, or a value saved by the stage's forward.
  FailureOr<Value> lookup(StageFunction &fn, Value value) {
    if (Value mapped = fn.mapping.lookupOrNull(value))
      return mapped;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      // The backward takes the graph inputs it needs from its forward, like
      // activations, so that each sample is loaded once per stage.
      if (fn.phase != StagePhase::forward &&
          argumentRole(main, arg.getArgNumber()) == kRoleInput)
        return saved(fn, value);
      return fn.addArgument(value, main.getArgAttrDict(arg.getArgNumber()));
    }
    if (auto transfer = value.getDefiningOp<TransferOp>()) {
      if (static_cast<int64_t>(transfer.getTo()) != fn.stage)
        return emitError(value.getLoc())
               << "stage " << fn.stage << " uses a value sent to stage "
               << transfer.getTo();
      if (phaseOf(transfer) != fn.phase)
        return saved(fn, value);
      auto recv = RecvOp::create(fn.builder, transfer.getLoc(),
                                 transfer.getResultTypes(), transfer.getMesh(),
                                 transfer.getFrom(), transfer.getNames());
      fn.mapping.map(transfer.getResults(), recv.getResults());
      return fn.mapping.lookup(value);
    }
    if (auto producer = value.getDefiningOp<StageOp>()) {
      if (static_cast<int64_t>(producer.getStage()) == fn.stage &&
          producer.getPhase() == StagePhase::forward &&
          fn.phase != StagePhase::forward)
        return saved(fn, value);
      return emitError(value.getLoc())
             << "stage " << fn.stage << " uses a value of stage "
             << producer.getStage() << " that does not travel; run "
             << "pp-insert-send-recv first";
    }
    return emitError(value.getLoc())
           << "stage " << fn.stage << " uses a value computed outside every "
           << "stage; run pp-partition first";
  }

  /// `value` in the later-phase function `fn`, handed over by the stage's
  /// forward function under a name both sides agree on.
  FailureOr<Value> saved(StageFunction &fn, Value value) {
    if (fn.phase == StagePhase::forward)
      return emitError(value.getLoc())
             << "the forward of stage " << fn.stage
             << " uses a value of a later phase";
    StageFunction &forward = functionOf(fn.stage, StagePhase::forward);
    FailureOr<Value> produced = lookup(forward, value);
    if (failed(produced))
      return failure();
    std::string name = savedName(forward, value);
    forward.results.push_back(*produced);
    forward.resultAttrs.push_back(
        getNameAndRoleAttrs(context, name, kRoleSaved));
    return fn.addArgument(value,
                          getNameAndRoleAttrs(context, name, kRoleSaved));
  }

  /// A name for a saved value, unique among the forward's saved values: the
  /// graph input's name or the node that computes it.
  std::string savedName(StageFunction &forward, Value value) {
    std::string origin;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      origin = argumentName(main, arg.getArgNumber()).str();
    } else if (auto transfer = value.getDefiningOp<TransferOp>()) {
      unsigned index = cast<OpResult>(value).getResultNumber();
      origin = cast<StringAttr>(transfer.getNames()[index]).str();
    } else if (auto producer = value.getDefiningOp<StageOp>()) {
      Value yielded = producer.getBody().front().getTerminator()->getOperand(
          cast<OpResult>(value).getResultNumber());
      if (Operation *def = yielded.getDefiningOp())
        if (StringAttr node = getNode(def))
          origin = node.str();
    }
    std::string base = "saved:" + (origin.empty() ? "value" : origin);
    std::string name = base;
    for (int suffix = 1; forward.savedNames.contains(name); ++suffix)
      name = base + "." + std::to_string(suffix);
    forward.savedNames.insert(name);
    return name;
  }

  func::FuncOp main;
  MLIRContext *context;
  int64_t numStages;
  std::vector<StageFunction> functions;
};

struct OutlineStagesPass
    : public pp::impl::OutlineStagesBase<OutlineStagesPass> {
  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main))
      return signalPassFailure();
    auto stageCosts = (*main)->getAttrOfType<ArrayAttr>(kStageCostsAttrName);
    if (!stageCosts) {
      (*main).emitError("the program is not partitioned; run pp-partition "
                        "and pp-insert-send-recv first");
      return signalPassFailure();
    }
    if (failed(Outliner(*main, stageCosts.size()).outline()))
      return signalPassFailure();
    ModuleOp module = getOperation();
    for (StringRef program : {kLossAttrName, kForwardOnlyAttrName})
      if (Attribute attr = (*main)->getAttr(program))
        module->setAttr(program, attr);
    module->setAttr(kStageCostsAttrName, stageCosts);
    main->erase();
  }
};

} // namespace
