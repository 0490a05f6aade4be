//===- Autodiff.cpp - pp-autodiff -----------------------------------------===//
//
// Reverse-mode differentiation of @main's loss. Forward ops are visited in
// reverse program order; each op's rule (nn::GradientOpInterface) turns the
// gradients of its results into contributions to its operands, which are
// summed in visiting order. A parameter that several nodes use gets its
// gradient in parts, one per node (pp.gradient_part, in program order of
// the nodes), so that the sums do not depend on the stages the nodes land
// on. The pass names no op: adding an op with its rule needs no change
// here.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

namespace pp {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// True when a gradient can flow from `op`'s result into operand `index`:
/// the op's rule says so, or, for an op without a rule, the operand is a
/// float (an op without a rule on such a path is an error when reached).
bool carriesGradient(Operation *op, unsigned index) {
  if (auto differentiable = dyn_cast<nn::GradientOpInterface>(op))
    return differentiable.isDifferentiableOperand(index);
  return isa<FloatType>(getElementTypeOrSelf(op->getOperand(index).getType()));
}

struct AutodiffPass : public pp::impl::AutodiffBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main) || failed(checkFlatProgram(*main)) ||
        failed(differentiate(*main)))
      signalPassFailure();
  }

  /// Arguments with role `parameter` whose name matches `freeze` become
  /// `frozen`.
  LogicalResult freezeParameters(func::FuncOp main) {
    if (freeze.empty())
      return success();
    llvm::Regex pattern("^(" + freeze + ")$");
    std::string problem;
    if (!pattern.isValid(problem))
      return main.emitError("freeze='")
             << freeze << "' is not a valid regular expression: " << problem;
    SmallVector<StringRef> names;
    bool matched = false;
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      if (argumentRole(main, i) != kRoleParameter)
        continue;
      names.push_back(argumentName(main, i));
      if (!pattern.match(names.back()))
        continue;
      main.setArgAttr(i, kRoleAttrName,
                      StringAttr::get(main.getContext(), kRoleFrozen));
      matched = true;
    }
    if (!matched)
      return main.emitError("freeze='")
             << freeze << "' matches no parameter (the whole name must "
             << "match); parameters are: " << llvm::join(names, ", ");
    return success();
  }

  /// Parameters that reach the loss only through operands that carry no
  /// gradient (a mask, an index table) become `constant`.
  void classifyConstants(func::FuncOp main, Value loss) {
    Block &body = main.getBody().front();
    llvm::DenseSet<Value> reaches = {loss}, flows = {loss};
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      bool reached = llvm::any_of(op.getResults(),
                                  [&](Value v) { return reaches.contains(v); });
      bool flowed = llvm::any_of(op.getResults(),
                                 [&](Value v) { return flows.contains(v); });
      for (auto [index, operand] : llvm::enumerate(op.getOperands())) {
        if (reached)
          reaches.insert(operand);
        if (flowed && carriesGradient(&op, index))
          flows.insert(operand);
      }
    }
    for (BlockArgument arg : body.getArguments())
      if (argumentRole(main, arg.getArgNumber()) == kRoleParameter &&
          reaches.contains(arg) && !flows.contains(arg))
        main.setArgAttr(arg.getArgNumber(), kRoleAttrName,
                        StringAttr::get(main.getContext(), kRoleConstant));
  }

  LogicalResult differentiate(func::FuncOp main) {
    Block &body = main.getBody().front();
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    auto lossType = returnOp.getNumOperands() == 1
                        ? dyn_cast<RankedTensorType>(returnOp.getOperand(0).getType())
                        : RankedTensorType();
    if (!lossType || lossType.getRank() != 0)
      return main.emitError(
          "pp-autodiff differentiates a program that "
          "returns one scalar loss; run pp-attach-loss first");
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (argumentRole(main, i) == kRoleLossScale)
        return main.emitError("the program is already differentiated");
    Value loss = returnOp.getOperand(0);
    if (failed(freezeParameters(main)))
      return failure();
    classifyConstants(main, loss);

    // Values that depend on a trainable parameter through operands that
    // carry gradients.
    llvm::DenseSet<Value> active;
    SmallVector<BlockArgument> parameters;
    for (BlockArgument arg : body.getArguments())
      if (argumentRole(main, arg.getArgNumber()) == kRoleParameter) {
        active.insert(arg);
        parameters.push_back(arg);
      }
    SmallVector<Operation *> forwardOps;
    for (Operation &op : body.without_terminator()) {
      forwardOps.push_back(&op);
      for (auto [index, operand] : llvm::enumerate(op.getOperands()))
        if (active.contains(operand) && carriesGradient(&op, index))
          active.insert(op.getResults().begin(), op.getResults().end());
    }

    OpBuilder builder(returnOp);
    auto scaleType = RankedTensorType::get({}, builder.getF32Type());
    unsigned scaleIndex = main.getNumArguments();
    if (failed(main.insertArgument(
            scaleIndex, scaleType,
            getNameAndRoleAttrs(builder.getContext(),
                                uniqueArgumentName(main, "loss_scale"),
                                kRoleLossScale),
            main.getLoc())))
      return failure();

    Gradients gradients;
    gradients[{loss, nullptr}] = main.getArgument(scaleIndex);
    for (Operation *op : llvm::reverse(forwardOps))
      if (failed(differentiateOp(op, builder, returnOp, active, gradients)))
        return failure();

    // Results: the loss, then the gradient of each trainable parameter the
    // loss depends on, in parts where several nodes use it. The others get
    // none (PyTorch's None), so the optimizer leaves them alone.
    SmallVector<Value> results = {loss};
    SmallVector<Attribute> resultAttrs = {main.getResultAttrDict(0)};
    llvm::DenseMap<Operation *, size_t> position;
    for (auto [index, op] : llvm::enumerate(forwardOps))
      position[op] = index;
    for (BlockArgument parameter : parameters) {
      // Its forward users in program order (backward ops use it too).
      SmallVector<Operation *> users;
      for (Operation *user : parameter.getUsers())
        if (position.count(user))
          users.push_back(user);
      llvm::sort(users, [&](Operation *a, Operation *b) {
        return position.lookup(a) < position.lookup(b);
      });
      SmallVector<Value> parts;
      llvm::SmallPtrSet<const void *, 4> seen;
      for (Operation *user : users)
        if (seen.insert(partKey(user)).second)
          if (Value part = gradients.lookup({parameter, partKey(user)}))
            parts.push_back(part);
      for (auto [number, part] : llvm::enumerate(parts)) {
        NamedAttrList attrs(getNameAndRoleAttrs(
            builder.getContext(), argumentName(main, parameter.getArgNumber()),
            kRoleGradient));
        if (parts.size() > 1)
          attrs.set(kGradientPartAttrName, builder.getI64IntegerAttr(number));
        results.push_back(part);
        resultAttrs.push_back(attrs.getDictionary(builder.getContext()));
      }
    }
    func::ReturnOp::create(builder, returnOp.getLoc(), results);
    returnOp.erase();
    main.setType(builder.getFunctionType(main.getArgumentTypes(),
                                         TypeRange(ValueRange(results))));
    main.setAllResultAttrs(resultAttrs);
    return success();
  }

  /// The gradient of each value, by (value, part): a parameter's parts are
  /// keyed by partKey of the users contributing to them, other values' one
  /// gradient by null.
  using Gradients = llvm::DenseMap<std::pair<Value, const void *>, Value>;

  /// The part of a parameter's gradient that `user`'s contributions add to:
  /// its node's (a node is what the partitioner places on a stage), or its
  /// own for an op outside every node.
  static const void *partKey(Operation *user) {
    StringAttr node = getNode(user);
    return node ? node.getAsOpaquePointer() : user;
  }

  /// Adds the backward ops of `op` before `end` and sums its contributions
  /// into `gradients`.
  LogicalResult differentiateOp(Operation *op, OpBuilder &builder,
                                Operation *end,
                                const llvm::DenseSet<Value> &active,
                                Gradients &gradients) {
    SmallVector<Value> resultGradients;
    for (Value result : op->getResults())
      resultGradients.push_back(gradients.lookup({result, nullptr}));
    SmallVector<bool> wanted;
    for (auto [index, operand] : llvm::enumerate(op->getOperands()))
      wanted.push_back(active.contains(operand) &&
                       carriesGradient(op, index));
    if (llvm::all_of(resultGradients, [](Value v) { return !v; }) ||
        llvm::none_of(wanted, [](bool w) { return w; }))
      return success();
    auto differentiable = dyn_cast<nn::GradientOpInterface>(op);
    if (!differentiable)
      return op->emitOpError("has no gradient rule, but the loss depends on ")
             << "a parameter through it; add its GradientOpInterface rule in "
             << "dialects/nn/IR/NNGradients.cpp, or freeze the parameters "
             << "that reach it (--freeze)";

    Operation *before = end->getPrevNode();
    SmallVector<Value> contributions;
    if (failed(differentiable.buildGradients(builder, resultGradients, wanted,
                                             contributions)))
      return failure();
    for (auto [operand, gradient] :
         llvm::zip(op->getOperands(), contributions)) {
      if (!gradient)
        continue;
      gradient = sumTo(builder, op->getLoc(), gradient, operand.getType());
      // The arguments that get gradients are the trainable parameters.
      auto [it, first] = gradients.try_emplace(
          {operand, isa<BlockArgument>(operand) ? partKey(op) : nullptr},
          gradient);
      if (first)
        continue;
      // Sum on the node that defines the value, so that partitioning keeps
      // the sum where the value lives.
      auto sum = nn::AddOp::create(builder, op->getLoc(), it->second, gradient);
      if (Operation *def = operand.getDefiningOp())
        if (StringAttr defNode = getNode(def))
          sum->setAttr(kNodeAttrName, defNode);
      it->second = sum;
    }
    tagBackward(before, end, getNode(op), op->hasAttr(kAttentionAttrName));
    return success();
  }

  /// Sums a gradient back to the shape its operand had before broadcasting.
  static Value sumTo(OpBuilder &builder, Location loc, Value gradient,
                     Type operandType) {
    auto type = cast<RankedTensorType>(operandType);
    if (gradient.getType() == type)
      return gradient;
    return nn::SumToOp::create(builder, loc, gradient, type.getShape());
  }

  /// Marks the ops between `after` (exclusive; null: block start) and `end`
  /// as backward ops of `node`, keeping a node already set, and as
  /// attention's when `attention` (the gradient of an op of attention).
  static void tagBackward(Operation *after, Operation *end, StringAttr node,
                          bool attention) {
    Block *block = end->getBlock();
    auto it = after ? std::next(after->getIterator()) : block->begin();
    for (; &*it != end; ++it) {
      setBackward(&*it);
      if (attention)
        it->setAttr(kAttentionAttrName, UnitAttr::get(it->getContext()));
      if (node && !getNode(&*it))
        it->setAttr(kNodeAttrName, node);
    }
  }
};

} // namespace
