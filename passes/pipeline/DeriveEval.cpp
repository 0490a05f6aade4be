//===- DeriveEval.cpp - pp-derive-eval ------------------------------------===//
//
// Copies each stage's forward function of a training program as
// `@stage<N>_eval` and strips it down to what the loss needs: the saved
// results go, then the ops that only fed them, the tensors of messages
// whose received values nothing uses any more (on both sides of the
// boundary), and the arguments nothing reads.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"

namespace pp {
#define GEN_PASS_DEF_DERIVEEVAL
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// Erases the ops of `function` that have no effect and whose results
/// nothing uses, users before the values they use.
void eraseDeadOps(func::FuncOp function) {
  Block &body = function.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

/// `function` without the results of role "saved".
void dropSavedResults(func::FuncOp function) {
  llvm::BitVector saved(function.getNumResults());
  for (unsigned i = 0; i < function.getNumResults(); ++i)
    if (auto role = function.getResultAttrOfType<StringAttr>(i, kRoleAttrName))
      saved[i] = role.getValue() == kRoleSaved;
  function.getBody().front().getTerminator()->eraseOperands(saved);
  (void)function.eraseResults(saved);
}

/// `function` without the arguments nothing uses.
void dropUnusedArguments(func::FuncOp function) {
  llvm::BitVector unused(function.getNumArguments());
  for (BlockArgument arg : function.getArguments())
    unused[arg.getArgNumber()] = arg.use_empty();
  (void)function.eraseArguments(unused);
}

/// The eval functions of the stages, as they are stripped.
class EvalDeriver {
public:
  explicit EvalDeriver(SmallVector<func::FuncOp> evals)
      : evals(std::move(evals)) {}

  /// Drops dead ops and message tensors until nothing more is dead, then
  /// the arguments nothing uses.
  LogicalResult strip() {
    for (bool changed = true; changed;) {
      changed = false;
      for (func::FuncOp eval : evals) {
        eraseDeadOps(eval);
        SmallVector<RecvOp> recvs(eval.getOps<RecvOp>());
        for (RecvOp recv : recvs) {
          FailureOr<bool> dropped = dropUnusedTensors(recv);
          if (failed(dropped))
            return failure();
          changed |= *dropped;
        }
      }
    }
    for (func::FuncOp eval : evals)
      dropUnusedArguments(eval);
    return success();
  }

private:
  /// Removes the tensors of `recv` that nothing uses from it and from the
  /// matching send of the sending stage's eval function; a message left
  /// without tensors goes. Returns whether there were any.
  FailureOr<bool> dropUnusedTensors(RecvOp recv) {
    llvm::BitVector unused(recv.getNumResults());
    for (OpResult result : recv.getResults())
      unused[result.getResultNumber()] = result.use_empty();
    if (unused.none())
      return false;
    int64_t stage = recv->getParentOfType<func::FuncOp>()
                        ->getAttrOfType<IntegerAttr>(kStageAttrName)
                        .getInt();
    int64_t from = static_cast<int64_t>(recv.getFrom());
    SendOp send;
    if (from >= 0 && from < static_cast<int64_t>(evals.size()))
      for (SendOp candidate : evals[from].getOps<SendOp>())
        if (static_cast<int64_t>(candidate.getTo()) == stage &&
            candidate.getNames() == recv.getNames())
          send = candidate;
    if (!send)
      return recv.emitOpError("of stage ")
             << stage << " has no matching pp.send to it in the forward of "
             << "stage " << from << "; run pp-outline-stages to pair them";

    SmallVector<Attribute> names;
    SmallVector<Value> values;
    SmallVector<Type> types;
    SmallVector<Value> kept;
    for (auto [index, name] : llvm::enumerate(recv.getNames())) {
      if (unused[index])
        continue;
      names.push_back(name);
      values.push_back(send.getValues()[index]);
      types.push_back(recv.getResult(index).getType());
      kept.push_back(recv.getResult(index));
    }
    if (!names.empty()) {
      OpBuilder builder(send);
      ArrayAttr keptNames = builder.getArrayAttr(names);
      SendOp::create(builder, send.getLoc(), send.getMesh(), values,
                     send.getTo(), keptNames);
      builder.setInsertionPoint(recv);
      auto narrowed = RecvOp::create(builder, recv.getLoc(), types,
                                     recv.getMesh(), recv.getFrom(), keptNames);
      for (auto [old, replacement] : llvm::zip(kept, narrowed.getResults()))
        old.replaceAllUsesWith(replacement);
    }
    send.erase();
    recv.erase();
    return true;
  }

  /// Indexed by stage.
  SmallVector<func::FuncOp> evals;
};

struct DeriveEvalPass : public pp::impl::DeriveEvalBase<DeriveEvalPass> {
  void runOnOperation() override {
    if (failed(derive()))
      signalPassFailure();
  }

  LogicalResult derive() {
    ModuleOp module = getOperation();
    if (module->hasAttr(kForwardOnlyAttrName))
      return module.emitError(
          "the program is forward-only (pp-mark-outputs): its forward "
          "functions already compute no saved values; derive eval functions "
          "of a training program (pp-attach-loss)");
    auto stageCosts = module->getAttrOfType<ArrayAttr>(kStageCostsAttrName);
    if (!module->hasAttr(kLossAttrName) || !stageCosts)
      return module.emitError("no outlined training program: run "
                              "--pp-compile (or pp-attach-loss through "
                              "pp-outline-stages) first");
    int64_t numStages = stageCosts.size();
    SmallVector<func::FuncOp> forwards(numStages);
    for (auto function : module.getOps<func::FuncOp>()) {
      auto stage = function->getAttrOfType<IntegerAttr>(kStageAttrName);
      auto phase = function->getAttrOfType<StagePhaseAttr>(kPhaseAttrName);
      if (!stage || !phase)
        continue;
      if (phase.getValue() == StagePhase::eval)
        return function.emitOpError("is already an eval function; run "
                                    "pp-derive-eval once");
      if (phase.getValue() != StagePhase::forward)
        continue;
      if (stage.getInt() < 0 || stage.getInt() >= numStages)
        return function.emitOpError("is on stage ")
               << stage.getInt() << ", but the program has " << numStages
               << " stages (pp.stage_costs)";
      if (forwards[stage.getInt()])
        return function.emitOpError("is a second forward function of stage ")
               << stage.getInt() << " after @"
               << forwards[stage.getInt()].getSymName();
      forwards[stage.getInt()] = function;
    }

    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    SmallVector<func::FuncOp> evals;
    for (auto [stage, forward] : llvm::enumerate(forwards)) {
      if (!forward)
        return module.emitError("stage ")
               << stage << " has no forward function; run pp-outline-stages "
               << "first";
      std::string name = ("stage" + Twine(stage) + "_eval").str();
      if (Operation *taken = module.lookupSymbol(name))
        return taken->emitOpError("takes the name @")
               << name << " that the eval function of stage " << stage
               << " needs";
      auto eval = cast<func::FuncOp>(builder.insert(forward->clone()));
      eval.setSymName(name);
      eval->setAttr(kPhaseAttrName,
                    StagePhaseAttr::get(&getContext(), StagePhase::eval));
      dropSavedResults(eval);
      evals.push_back(eval);
    }
    return EvalDeriver(std::move(evals)).strip();
  }
};

} // namespace
