//===- RecomputeParameterCasts.cpp - pp-recompute-parameter-casts ---------===//
//
// Under a reduced precision each model node reads a bf16 (f16) copy of its
// weights, cast from the f32 master (pp-apply-precision). The backward
// needs the copy too (a matmul's input gradient); taken from the forward,
// it would be saved per microbatch in flight, a copy of every weight per
// microbatch. The backward casts the master again instead: the same bits,
// one conversion per weight and microbatch, no saved copy.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace pp {
#define GEN_PASS_DEF_RECOMPUTEPARAMETERCASTS
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// Gives the backward users of `castOp` (a cast of a parameter) a cast of
/// their own, before the first of them.
void recomputeForBackward(nn::CastOp castOp) {
  SmallVector<OpOperand *> backwardUses;
  for (OpOperand &use : castOp.getResult().getUses())
    if (isBackward(use.getOwner()))
      backwardUses.push_back(&use);
  if (backwardUses.empty())
    return;
  Operation *first = backwardUses.front()->getOwner();
  for (OpOperand *use : backwardUses)
    if (use->getOwner()->isBeforeInBlock(first))
      first = use->getOwner();
  OpBuilder builder(first);
  Operation *again = builder.clone(*castOp);
  setBackward(again);
  for (OpOperand *use : backwardUses)
    use->set(again->getResult(0));
}

struct RecomputeParameterCastsPass
    : public pp::impl::RecomputeParameterCastsBase<
          RecomputeParameterCastsPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> program = getProgram(getOperation());
    if (failed(program) || failed(checkFlatProgram(*program)))
      return signalPassFailure();
    func::FuncOp main = *program;
    for (BlockArgument arg : main.getArguments()) {
      if (!isModelParameter(main, arg.getArgNumber()))
        continue;
      for (Operation *user : llvm::to_vector(arg.getUsers()))
        if (auto castOp = dyn_cast<nn::CastOp>(user);
            castOp && !isBackward(castOp))
          recomputeForBackward(castOp);
    }
  }
};

} // namespace
