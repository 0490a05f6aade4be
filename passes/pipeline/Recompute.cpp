//===- Recompute.cpp - pp-recompute ---------------------------------------===//
//
// Activation recomputation: each stage's backward recomputes the forward
// values its policy (pp-partition's choice, recorded per stage in
// `pp.stage_costs`) names, from the values the forward keeps, instead of
// taking them saved. The forward then hands its backward only those kept
// values; the recomputed copies are the backward's own, made at its start.
// Dropout recomputes the same mask (it is keyed, not drawn), so the bits do
// not change.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/Passes.h"
#include "passes/pipeline/RecomputePolicy.h"

#include "dialects/pp/IR/PPOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace pp {
#define GEN_PASS_DEF_RECOMPUTE
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

/// A stage op in `stage`'s place that takes its body and yields `values`
/// (values of that body); `stage` is left for the caller to replace.
static StageOp yielding(StageOp stage, ArrayRef<Value> values) {
  stage.getBody().front().getTerminator()->setOperands(values);
  OpBuilder builder(stage);
  auto rebuilt = StageOp::create(builder, stage.getLoc(),
                                 ValueRange(values).getTypes(),
                                 stage.getMeshAttr(), stage.getStageAttr(),
                                 stage.getPhaseAttr(), stage.getInputs());
  rebuilt->setDiscardableAttrs(stage->getDiscardableAttrDictionary());
  rebuilt.getBody().takeBody(stage.getBody());
  return rebuilt;
}

/// `stage` with `extra` (values of its body) yielded after its results.
static StageOp yieldingAlso(StageOp stage, ArrayRef<Value> extra) {
  SmallVector<Value> values(
      stage.getBody().front().getTerminator()->getOperands());
  values.append(extra.begin(), extra.end());
  StageOp grown = yielding(stage, values);
  stage.replaceAllUsesWith(
      grown.getResults().take_front(stage.getNumResults()));
  stage.erase();
  return grown;
}

/// `stage` without the results nothing uses.
static void dropUnusedResults(StageOp stage) {
  Operation *yield = stage.getBody().front().getTerminator();
  SmallVector<Value> kept, keptInner;
  for (auto [result, inner] :
       llvm::zip(stage.getResults(), yield->getOperands()))
    if (!result.use_empty()) {
      kept.push_back(result);
      keptInner.push_back(inner);
    }
  if (kept.size() == stage.getNumResults())
    return;
  StageOp shrunk = yielding(stage, keptInner);
  for (auto [old, now] : llvm::zip(kept, shrunk.getResults()))
    old.replaceAllUsesWith(now);
  stage.erase();
}

namespace {

/// The recomputation of one stage: its backward recomputes, from the
/// values its forward keeps, the forward values the policy names.
class StageRecomputation {
public:
  StageRecomputation(StageOp forward, StageOp backward, RecomputePolicy policy)
      : forward(forward), backward(backward), policy(std::move(policy)) {}

  /// Decides what the backward recomputes: the forward's values it reads,
  /// and the ops they need, that the policy recomputes. Every stage plans
  /// before any is rewritten: the policy reads the program across stages.
  void plan() {
    for (Value input : backward.getInputs())
      if (auto result = dyn_cast<OpResult>(input);
          result && result.getOwner() == forward)
        if (Operation *op = yielded(result.getResultNumber()).getDefiningOp())
          planRecomputing(op);
  }

  /// Rewrites the stage by the plan.
  void run() {
    if (recomputed.empty())
      return;
    SmallVector<Operation *> order = recomputed.takeVector();
    llvm::sort(order, [](Operation *lhs, Operation *rhs) {
      return lhs->isBeforeInBlock(rhs);
    });
    yieldKeptValues(order);
    cloneIntoBackward(order);
    dropUnusedInputs();
    dropUnusedResults(forward);
  }

private:
  Value yielded(unsigned index) {
    return forward.getBody().front().getTerminator()->getOperand(index);
  }

  /// Adds `op` (an op of the forward's body), and the ops it reads that
  /// the policy recomputes, to `recomputed`.
  void planRecomputing(Operation *op) {
    // No op is reached again while its operands are planned (SSA has no
    // cycles), so `recomputed` alone says which are done.
    if (!policy.recomputes(op) || recomputed.contains(op))
      return;
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp())
        planRecomputing(producer);
    recomputed.insert(op);
  }

  /// Makes the forward yield each kept value of its body the recomputed
  /// ops read (the checkpoints) that it does not yield yet.
  void yieldKeptValues(ArrayRef<Operation *> order) {
    Operation *yield = forward.getBody().front().getTerminator();
    llvm::SetVector<Value> extra;
    for (Operation *op : order)
      for (Value operand : op->getOperands())
        if (Operation *producer = operand.getDefiningOp();
            producer && !recomputed.contains(producer) &&
            !llvm::is_contained(yield->getOperands(), operand))
          extra.insert(operand);
    if (!extra.empty())
      forward = yieldingAlso(forward, extra.getArrayRef());
  }

  /// The backward's block argument for `outer`, added when it has none.
  Value backwardArgument(Value outer) {
    Block &body = backward.getBody().front();
    for (auto [input, arg] :
         llvm::zip(backward.getInputs(), body.getArguments()))
      if (input == outer)
        return arg;
    backward.getInputsMutable().append(outer);
    return body.addArgument(outer.getType(), outer.getLoc());
  }

  /// The forward value (outside it) that carries `inner`, a value of its
  /// body: an input, or a result.
  Value outerOf(Value inner) {
    if (auto arg = dyn_cast<BlockArgument>(inner))
      return forward.getInputs()[arg.getArgNumber()];
    Operation *yield = forward.getBody().front().getTerminator();
    for (auto [index, value] : llvm::enumerate(yield->getOperands()))
      if (value == inner)
        return forward.getResult(index);
    llvm_unreachable("yieldKeptValues yields every kept value");
  }

  /// Clones `order` at the start of the backward, reading the kept values
  /// through its arguments, and makes the backward read the copies.
  void cloneIntoBackward(ArrayRef<Operation *> order) {
    Block &body = backward.getBody().front();
    OpBuilder builder(&body, body.begin());
    IRMapping mapping;
    for (Operation *op : order) {
      for (Value operand : op->getOperands())
        if (!mapping.contains(operand))
          mapping.map(operand, backwardArgument(outerOf(operand)));
      builder.clone(*op, mapping)
          ->setAttr(kRecomputedAttrName, builder.getUnitAttr());
    }
    for (auto [input, arg] :
         llvm::zip(backward.getInputs(), body.getArguments()))
      if (auto result = dyn_cast<OpResult>(input);
          result && result.getOwner() == forward)
        if (Value copy = mapping.lookupOrNull(
                yielded(result.getResultNumber()));
            copy && copy != arg) // Not a kept value's own argument.
          arg.replaceAllUsesWith(copy);
  }

  /// Erases the backward's arguments (and inputs) nothing reads any more:
  /// the forward values now recomputed (partitioning leaves none unused).
  void dropUnusedInputs() {
    Block &body = backward.getBody().front();
    for (int index = body.getNumArguments() - 1; index >= 0; --index)
      if (body.getArgument(index).use_empty()) {
        body.eraseArgument(index);
        backward.getInputsMutable().erase(index);
      }
  }

  StageOp forward, backward;
  RecomputePolicy policy;
  llvm::SetVector<Operation *> recomputed;
};

struct RecomputePass : public pp::impl::RecomputeBase<RecomputePass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> program = getProgram(getOperation());
    if (failed(program))
      return signalPassFailure();
    func::FuncOp main = *program;
    auto costs = main->getAttrOfType<ArrayAttr>(kStageCostsAttrName);
    if (!costs) {
      main.emitError("pp-recompute: the program is not partitioned (it has "
                     "no ")
          << kStageCostsAttrName << "); run pp-partition first";
      return signalPassFailure();
    }
    llvm::DenseMap<int64_t, StageOp> forwards;
    SmallVector<StageOp> backwards;
    for (StageOp stage : main.getBody().front().getOps<StageOp>()) {
      if (stage.getPhase() == StagePhase::forward)
        forwards[stage.getStage()] = stage;
      else if (stage.getPhase() == StagePhase::backward)
        backwards.push_back(stage);
    }
    std::vector<StageRecomputation> stages;
    for (StageOp backward : backwards) {
      int64_t index = backward.getStage();
      StageOp forward = forwards.lookup(index);
      if (!forward || index >= static_cast<int64_t>(costs.size()))
        continue;
      RecomputePolicy policy =
          RecomputePolicy::ofStage(dyn_cast<DictionaryAttr>(costs[index]));
      if (!policy.recomputesNothing())
        stages.emplace_back(forward, backward, std::move(policy));
    }
    for (StageRecomputation &stage : stages)
      stage.plan();
    for (StageRecomputation &stage : stages)
      stage.run();
  }
};

} // namespace
