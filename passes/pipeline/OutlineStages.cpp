//===- OutlineStages.cpp - pp-outline-stages ------------------------------===//
//
// Each `pp.stage` op of @main becomes a function `@stage<N>_<phase>`; each
// `pp.transfer` becomes a `pp.send` at the end of the producing function and
// a `pp.recv` in the receiving stage's function of the same phase. Values a
// later phase of a stage takes from an earlier one (activations, graph
// inputs, values received in the forward; with a split backward, what
// backward_input hands to backward_weight) are returned by the earlier
// function and taken by the later one as `saved` values, matched by name.
// A forward-only program gets forward functions only.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
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
    // A forward-only program (pp-mark-outputs) has no backward functions;
    // a split one (pp-split-backward) has two per stage.
    phases = {StagePhase::forward};
    if (!main->hasAttr(kForwardOnlyAttrName)) {
      if (llvm::any_of(main.getBody().getOps<StageOp>(), [](StageOp op) {
            return op.getPhase() == StagePhase::backward_input ||
                   op.getPhase() == StagePhase::backward_weight;
          }))
        phases.append({StagePhase::backward_input, StagePhase::backward_weight});
      else
        phases.push_back(StagePhase::backward);
    }
    savedNames.resize(numStages);
    savedAs.resize(numStages);
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

  /// The function of `stage` in `phase`, one of `phases`.
  StageFunction &functionOf(int64_t stage, StagePhase phase) {
    return functions[(llvm::find(phases, phase) - phases.begin()) * numStages +
                     stage];
  }

  /// Copies the body of `stageOp` into its function.
  LogicalResult outlineStage(StageOp stageOp) {
    if (!llvm::is_contained(phases, stageOp.getPhase()))
      return stageOp.emitOpError("has phase ")
             << stringifyStagePhase(stageOp.getPhase())
             << ", but the program's stage functions are "
             << llvm::join(llvm::map_range(phases, stringifyStagePhase), ", ")
             << "; split every backward stage op (pp-split-backward) or none";
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
        return saved(fn, value, phaseOf(transfer));
      auto recv = RecvOp::create(fn.builder, transfer.getLoc(),
                                 transfer.getResultTypes(), transfer.getMesh(),
                                 transfer.getFrom(), transfer.getNames());
      fn.mapping.map(transfer.getResults(), recv.getResults());
      return fn.mapping.lookup(value);
    }
    if (auto producer = value.getDefiningOp<StageOp>()) {
      if (static_cast<int64_t>(producer.getStage()) == fn.stage &&
          producer.getPhase() < fn.phase)
        return saved(fn, value, producer.getPhase());
      return emitError(value.getLoc())
             << "stage " << fn.stage << " uses a value of stage "
             << producer.getStage() << " that does not travel; run "
             << "pp-insert-send-recv first";
    }
    return emitError(value.getLoc())
           << "stage " << fn.stage << " uses a value computed outside every "
           << "stage; run pp-partition first";
  }

  /// `value` in the function `fn`, handed over by the stage's function of
  /// the earlier phase `from` (the forward by default) under a name both
  /// sides agree on.
  FailureOr<Value> saved(StageFunction &fn, Value value,
                         StagePhase from = StagePhase::forward) {
    if (from >= fn.phase)
      return emitError(value.getLoc())
             << "the " << stringifyStagePhase(fn.phase) << " of stage "
             << fn.stage << " uses a value of phase "
             << stringifyStagePhase(from) << ", which does not run before it";
    // Both halves of a split backward may take the same value: it is
    // returned once.
    DictionaryAttr attrs = savedAs[fn.stage].lookup(value);
    if (!attrs) {
      StageFunction &producer = functionOf(fn.stage, from);
      FailureOr<Value> produced = lookup(producer, value);
      if (failed(produced))
        return failure();
      attrs = getNameAndRoleAttrs(context, savedName(fn.stage, value),
                                  kRoleSaved);
      savedAs[fn.stage][value] = attrs;
      producer.results.push_back(*produced);
      producer.resultAttrs.push_back(attrs);
    }
    return fn.addArgument(value, attrs);
  }

  /// What `value` of @main is called: the graph input's name, the name it
  /// travels under, or the node that computes it ("" when none).
  std::string originOf(Value value) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return argumentName(main, arg.getArgNumber()).str();
    if (auto transfer = value.getDefiningOp<TransferOp>()) {
      unsigned index = cast<OpResult>(value).getResultNumber();
      return cast<StringAttr>(transfer.getNames()[index]).str();
    }
    if (auto producer = value.getDefiningOp<StageOp>()) {
      Value yielded = producer.getBody().front().getTerminator()->getOperand(
          cast<OpResult>(value).getResultNumber());
      // A value the stage op passes on is called what it takes.
      if (auto arg = dyn_cast<BlockArgument>(yielded))
        return originOf(producer.getInputs()[arg.getArgNumber()]);
      if (StringAttr node = getNode(yielded.getDefiningOp()))
        return node.str();
    }
    return "";
  }

  /// A name for a saved value, unique among the saved values of `stage`:
  /// the graph input's name or the node that computes it.
  std::string savedName(int64_t stage, Value value) {
    std::string origin = originOf(value);
    std::string base = "saved:" + (origin.empty() ? "value" : origin);
    std::string name = base;
    for (int suffix = 1; savedNames[stage].contains(name); ++suffix)
      name = base + "." + std::to_string(suffix);
    savedNames[stage].insert(name);
    return name;
  }

  func::FuncOp main;
  MLIRContext *context;
  int64_t numStages;
  /// The phases that get a function per stage, in the order they run.
  SmallVector<StagePhase, 3> phases;
  std::vector<StageFunction> functions;
  /// Per stage, the names of the saved values its functions hand over.
  std::vector<llvm::StringSet<>> savedNames;
  /// Per stage, the attributes of each value of @main already saved.
  std::vector<llvm::DenseMap<Value, DictionaryAttr>> savedAs;
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
