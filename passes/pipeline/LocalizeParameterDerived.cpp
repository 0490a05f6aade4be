//===- LocalizeParameterDerived.cpp - pp-localize-parameter-derived -------===//
//
// A value computed only from parameters and constants (an exporter's
// transpose of a tied embedding for the LM head, a reshape or slice of a
// weight) does not depend on the microbatch. Where another node computes it
// (an exporter may place the transpose next to the embedding), it would
// travel from that node's stage to its users' stages per microbatch as if
// it were an activation, and the partitioner would count it so. Instead,
// every node that uses such a value computes it itself: the ops computing
// it are cloned into each node using their results, so that the value is
// made on every stage that uses it, from the parameters the stage holds
// (tied weights: pp.holder_stages), and nothing weight-sized crosses a
// stage boundary. Run before pp-autodiff, the gradient through each copy
// is its node's part of the parameter's gradient (pp.gradient_part), as
// for a parameter the node reads directly.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

namespace pp {
#define GEN_PASS_DEF_LOCALIZEPARAMETERDERIVED
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// The ops of `main` that compute a value from the model's parameters and
/// constants only, in program order: pure ops without regions whose every
/// operand is a parameter, a constant or such an op's result, and at least
/// one of them not of constants alone. Values of constants alone (a mask an
/// importer did not fold) stay where they are, as constants do:
/// pp-partition copies constants into every stage.
SmallVector<Operation *> parameterDerivedOps(func::FuncOp main) {
  llvm::DenseSet<Value> fromParameters, fromConstants;
  for (BlockArgument arg : main.getArguments())
    if (isModelParameter(main, arg.getArgNumber()))
      fromParameters.insert(arg);
  SmallVector<Operation *> ops;
  for (Operation &op : main.getBody().front().without_terminator()) {
    bool known = llvm::all_of(op.getOperands(), [&](Value operand) {
      return fromParameters.contains(operand) ||
             fromConstants.contains(operand);
    });
    if (!known || op.getNumRegions() != 0 || !isPure(&op))
      continue;
    bool parameterDerived = llvm::any_of(op.getOperands(), [&](Value operand) {
      return fromParameters.contains(operand);
    });
    (parameterDerived ? fromParameters : fromConstants)
        .insert(op.result_begin(), op.result_end());
    if (parameterDerived)
      ops.push_back(&op);
  }
  return ops;
}

/// Gives every other node using `op`'s results a copy of `op` of its own,
/// placed before its first op using them; `op` itself stays for the users
/// it has left (its own node's, ops outside every node and the program's
/// results), or goes when the copies took all its uses.
void localize(Operation *op) {
  StringAttr home = getNode(op);
  // The first user in program order of each other node.
  llvm::MapVector<StringAttr, Operation *> firstUsers;
  for (Operation *user : op->getUsers()) {
    StringAttr node = getNode(user);
    if (!node || node == home)
      continue;
    auto [it, inserted] = firstUsers.try_emplace(node, user);
    if (!inserted && user->isBeforeInBlock(it->second))
      it->second = user;
  }
  for (auto [node, first] : firstUsers) {
    OpBuilder builder(first);
    Operation *copy = builder.clone(*op);
    copy->setAttr(kNodeAttrName, node);
    op->replaceUsesWithIf(copy->getResults(), [&](OpOperand &use) {
      return getNode(use.getOwner()) == node;
    });
  }
  if (!firstUsers.empty() && op->use_empty())
    op->erase();
}

struct LocalizeParameterDerivedPass
    : public pp::impl::LocalizeParameterDerivedBase<
          LocalizeParameterDerivedPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> program = getProgram(getOperation());
    if (failed(program) || failed(checkFlatProgram(*program)))
      return signalPassFailure();
    func::FuncOp main = *program;
    for (Operation &op : main.getBody().front().without_terminator())
      if (isBackward(&op)) {
        op.emitOpError("is a backward op: pp-localize-parameter-derived "
                       "runs before pp-autodiff, so that the gradient "
                       "through each node's copy is that node's part of "
                       "its parameter's gradient; run it first");
        return signalPassFailure();
      }
    // Last first: when an op is localized, the derived ops using it have
    // been, so each node's copy of a chain reads the node's own copies.
    SmallVector<Operation *> derived = parameterDerivedOps(main);
    for (Operation *op : llvm::reverse(derived))
      localize(op);
  }
};

} // namespace
