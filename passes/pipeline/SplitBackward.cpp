//===- SplitBackward.cpp - pp-split-backward ------------------------------===//
//
// Each `pp.stage` op of phase backward becomes two: `backward_input`, the
// ops the gradients other stages receive depend on, and `backward_weight`,
// the rest (the parameter gradients the program returns). The halves
// partition the same ops, so they compute the same bits; values the weight
// half takes from the input half become results of one and operands of the
// other, except constants and recomputed forward values (pp-recompute's),
// which the weight half makes again from what the forward keeps: handed
// over, a recomputed value would wait in memory for the weight half, which
// a zero-bubble schedule runs late.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace pp {
#define GEN_PASS_DEF_SPLITBACKWARD
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// Calls `use` on every value `op` reads: its operands and the values its
/// regions take from outside them.
void forEachUsedValue(Operation *op, function_ref<void(Value)> use) {
  for (Value operand : op->getOperands())
    use(operand);
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  for (Value value : captured)
    use(value);
}

/// True when the weight half may take `value` of @main straight away: it
/// exists before the stage's backward starts (an argument of the program or
/// a forward value), unlike gradients received from other stages, which the
/// input half receives and hands on.
bool availableBeforeBackward(Value value) {
  if (isa<BlockArgument>(value))
    return true;
  Operation *producer = value.getDefiningOp();
  if (auto transfer = dyn_cast<TransferOp>(producer))
    producer = transfer.getValues().front().getDefiningOp();
  auto stage = dyn_cast_or_null<StageOp>(producer);
  return stage && stage.getPhase() == StagePhase::forward;
}

/// One backward stage op, split into its two halves.
class BackwardSplitter {
public:
  explicit BackwardSplitter(StageOp backward)
      : backward(backward), body(backward.getBody().front()),
        resultPlace(backward.getNumResults()) {}

  void split() {
    collectInputHalf();
    collectWeightNeeds();
    OpBuilder builder(backward);
    StageOp inputHalf = buildInputHalf(builder);
    StageOp weightHalf = buildWeightHalf(builder, inputHalf);
    for (auto [index, result] : llvm::enumerate(backward.getResults())) {
      auto [half, position] = resultPlace[index];
      result.replaceAllUsesWith(
          (half == StagePhase::backward_input ? inputHalf : weightHalf)
              .getResult(position));
    }
    backward.erase();
  }

private:
  /// Whether `op`, an op of the body, belongs to the input half.
  bool inInputHalf(Operation *op) const { return inputOps.contains(op); }

  /// The ops of the body that results used by other ops than the program's
  /// return (transfers of gradients to earlier stages) depend on.
  void collectInputHalf() {
    Operation *yield = body.getTerminator();
    SmallVector<Operation *> worklist;
    auto need = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (def && def->getBlock() == &body && inputOps.insert(def).second)
        worklist.push_back(def);
    };
    for (OpResult result : backward.getResults())
      if (llvm::any_of(result.getUsers(), [](Operation *user) {
            return !isa<func::ReturnOp>(user);
          }))
        need(yield->getOperand(result.getResultNumber()));
    while (!worklist.empty())
      forEachUsedValue(worklist.pop_back_val(), need);
  }

  /// What the weight half reads from outside itself: arguments of the body
  /// it takes straight from @main, values the input half hands over, and
  /// constants and recomputed values it makes again.
  void collectWeightNeeds() {
    std::function<void(Value)> need = [&](Value value) {
      if (auto arg = dyn_cast<BlockArgument>(value)) {
        if (arg.getOwner() != &body)
          return;
        if (availableBeforeBackward(backward.getInputs()[arg.getArgNumber()]))
          weightArgs.insert(arg);
        else
          handedOver.insert(arg);
        return;
      }
      Operation *def = value.getDefiningOp();
      if (def->getBlock() != &body || !inInputHalf(def))
        return;
      if (!def->hasTrait<OpTrait::ConstantLike>() &&
          !def->hasAttr(kRecomputedAttrName))
        handedOver.insert(value);
      else if (weightCopies.insert(def).second)
        forEachUsedValue(def, need);
    };
    for (Operation &op : body.without_terminator())
      if (!inInputHalf(&op))
        forEachUsedValue(&op, need);
  }

  /// Whether result `value` of the body (a yielded value) is the weight
  /// half's: computed by one of its ops.
  bool yieldedByWeightHalf(Value value) const {
    Operation *def = value.getDefiningOp();
    return def && !inInputHalf(def);
  }

  /// Creates a stage op of `phase` before `backward` taking `operands`, with
  /// one block argument per operand, mapped from `args` in `mapping`.
  StageOp createHalf(OpBuilder &builder, StagePhase phase,
                     TypeRange resultTypes, ValueRange operands,
                     ValueRange args, IRMapping &mapping) {
    auto half = StageOp::create(
        builder, backward.getLoc(), resultTypes, backward.getMeshAttr(),
        backward.getStageAttr(),
        StagePhaseAttr::get(backward.getContext(), phase), operands);
    Block *block = new Block();
    half.getBody().push_back(block);
    for (auto [operand, arg] : llvm::zip(operands, args))
      mapping.map(arg, block->addArgument(operand.getType(), arg.getLoc()));
    return half;
  }

  /// The input half: the ops the sent gradients need, taking the body's
  /// arguments they (or the weight half, through it) read, returning the
  /// backward's results it computes, then what else it hands over.
  StageOp buildInputHalf(OpBuilder &builder) {
    llvm::SetVector<Value> read;
    for (Operation &op : body.without_terminator())
      if (inInputHalf(&op))
        forEachUsedValue(&op, [&](Value value) { read.insert(value); });
    SmallVector<Value> yielded;
    for (auto [index, value] :
         llvm::enumerate(body.getTerminator()->getOperands())) {
      if (yieldedByWeightHalf(value))
        continue;
      resultPlace[index] = {StagePhase::backward_input, yielded.size()};
      inputPosition.try_emplace(value, yielded.size());
      yielded.push_back(value);
      read.insert(value);
    }
    for (Value value : handedOver)
      if (inputPosition.try_emplace(value, yielded.size()).second) {
        yielded.push_back(value);
        read.insert(value);
      }

    SmallVector<Value> operands, args;
    for (BlockArgument arg : body.getArguments())
      if (read.contains(arg)) {
        operands.push_back(backward.getInputs()[arg.getArgNumber()]);
        args.push_back(arg);
      }
    IRMapping mapping;
    StageOp half =
        createHalf(builder, StagePhase::backward_input,
                   TypeRange(ValueRange(yielded)), operands, args, mapping);
    fillBody(half, [&](Operation &op) { return inInputHalf(&op); }, yielded,
             mapping);
    return half;
  }

  /// The weight half: every other op, taking the arguments available before
  /// the backward from @main and the handed-over values from `inputHalf`.
  StageOp buildWeightHalf(OpBuilder &builder, StageOp inputHalf) {
    SmallVector<Value> operands, args;
    for (BlockArgument arg : body.getArguments())
      if (weightArgs.contains(arg)) {
        operands.push_back(backward.getInputs()[arg.getArgNumber()]);
        args.push_back(arg);
      }
    for (Value value : handedOver) {
      operands.push_back(inputHalf.getResult(inputPosition.lookup(value)));
      args.push_back(value);
    }
    SmallVector<Value> yielded;
    for (auto [index, value] :
         llvm::enumerate(body.getTerminator()->getOperands()))
      if (yieldedByWeightHalf(value)) {
        resultPlace[index] = {StagePhase::backward_weight, yielded.size()};
        yielded.push_back(value);
      }
    IRMapping mapping;
    StageOp half =
        createHalf(builder, StagePhase::backward_weight,
                   TypeRange(ValueRange(yielded)), operands, args, mapping);
    fillBody(
        half,
        [&](Operation &op) {
          return !inInputHalf(&op) || weightCopies.contains(&op);
        },
        yielded, mapping);
    return half;
  }

  /// Copies the ops of the body `member` selects into `half`, in order, and
  /// yields the copies of `yielded`.
  void fillBody(StageOp half, function_ref<bool(Operation &)> member,
                ValueRange yielded, IRMapping &mapping) {
    OpBuilder builder = OpBuilder::atBlockEnd(&half.getBody().front());
    for (Operation &op : body.without_terminator())
      if (member(op))
        builder.clone(op, mapping);
    SmallVector<Value> copies = llvm::map_to_vector(
        yielded, [&](Value value) { return mapping.lookup(value); });
    YieldOp::create(builder, backward.getLoc(), copies);
  }

  StageOp backward;
  Block &body;
  llvm::SmallPtrSet<Operation *, 32> inputOps;
  /// Body arguments the weight half takes from @main.
  llvm::SetVector<BlockArgument> weightArgs;
  /// Values of the body the input half returns for the weight half.
  llvm::SetVector<Value> handedOver;
  /// Constants and recomputed values of the input half the weight half
  /// reads: made again, not handed over.
  llvm::SmallPtrSet<Operation *, 8> weightCopies;
  /// Where each result of the backward goes: the half and its position.
  SmallVector<std::pair<StagePhase, size_t>> resultPlace;
  /// The result of the input half that returns each value of the body it
  /// yields.
  llvm::DenseMap<Value, size_t> inputPosition;
};

struct SplitBackwardPass
    : public pp::impl::SplitBackwardBase<SplitBackwardPass> {
  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main) || failed(split(*main)))
      signalPassFailure();
  }

  LogicalResult split(func::FuncOp main) {
    if (main->hasAttr(kForwardOnlyAttrName))
      return main.emitError("a forward-only program (pp-mark-outputs) has no "
                            "backward to split; drop split-backward");
    Block &body = main.getBody().front();
    if (body.getOps<StageOp>().empty())
      return main.emitError("the program has no pp.stage ops; run "
                            "pp-partition first");
    SmallVector<StageOp> backwards;
    for (StageOp stage : body.getOps<StageOp>()) {
      if (stage.getPhase() == StagePhase::backward_input ||
          stage.getPhase() == StagePhase::backward_weight)
        return stage.emitOpError("is already a half of a split backward; run ")
               << "pp-split-backward once";
      if (stage.getPhase() == StagePhase::backward)
        backwards.push_back(stage);
    }
    if (backwards.empty())
      return main.emitError("the program has no pp.stage op of phase "
                            "backward to split; compile a training program "
                            "(a loss and pp-autodiff)");
    for (StageOp backward : backwards)
      BackwardSplitter(backward).split();
    return success();
  }
};

} // namespace
