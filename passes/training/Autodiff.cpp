//===- Autodiff.cpp - pp-autodiff -----------------------------------------===//
//
// Reverse-mode differentiation of @main's loss. Forward ops are visited in
// reverse program order; each op's vector-Jacobian product (its gradient
// rule) turns the gradients of its results into contributions to its
// operands, which are summed in visiting order.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace pp {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// A contribution to the gradient of operand `operand` of the op.
struct Contribution {
  unsigned operand;
  Value gradient;
};

/// Builds the gradient rules of one forward op.
class GradientBuilder {
public:
  GradientBuilder(OpBuilder &builder, Location loc,
                  llvm::function_ref<bool(Value)> needsGradient)
      : builder(builder), loc(loc), needsGradient(needsGradient) {}

  /// Appends the contributions of `op` given the gradient `grad` of its
  /// (single) result; fails when `op` has no rule.
  LogicalResult build(Operation *op, Value grad,
                      SmallVectorImpl<Contribution> &out) {
    auto want = [&](unsigned i) { return needsGradient(op->getOperand(i)); };
    auto add = [&](unsigned i, llvm::function_ref<Value()> make) {
      if (want(i))
        out.push_back({i, sumTo(make(), op->getOperand(i).getType())});
    };
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](nn::AddOp) {
          add(0, [&] { return grad; });
          add(1, [&] { return grad; });
          return success();
        })
        .Case([&](nn::SubOp) {
          add(0, [&] { return grad; });
          add(1,
              [&]() -> Value { return nn::NegOp::create(builder, loc, grad); });
          return success();
        })
        .Case([&](nn::MulOp mul) {
          add(0, [&]() -> Value {
            return nn::MulOp::create(builder, loc, grad, mul.getRhs());
          });
          add(1, [&]() -> Value {
            return nn::MulOp::create(builder, loc, grad, mul.getLhs());
          });
          return success();
        })
        .Case([&](nn::NegOp) {
          add(0,
              [&]() -> Value { return nn::NegOp::create(builder, loc, grad); });
          return success();
        })
        .Case([&](nn::MatmulOp matmul) {
          buildMatmul(matmul, grad, add);
          return success();
        })
        .Case([&](nn::ReluOp relu) {
          add(0, [&]() -> Value {
            return nn::ReluGradOp::create(builder, loc, grad, relu.getInput());
          });
          return success();
        })
        .Case([&](nn::SigmoidOp sigmoid) {
          add(0, [&]() -> Value {
            return nn::SigmoidGradOp::create(builder, loc, grad,
                                             sigmoid.getResult());
          });
          return success();
        })
        .Case([&](nn::TanhOp tanh) {
          add(0, [&]() -> Value {
            return nn::TanhGradOp::create(builder, loc, grad, tanh.getResult());
          });
          return success();
        })
        .Case([&](nn::ReshapeOp reshape) {
          add(0, [&]() -> Value {
            auto type = cast<RankedTensorType>(reshape.getInput().getType());
            return nn::ReshapeOp::create(builder, loc, grad, type.getShape());
          });
          return success();
        })
        .Case([&](nn::MseLossOp mse) {
          add(0, [&]() -> Value {
            return nn::MseLossGradOp::create(builder, loc, grad, mse.getInput(),
                                             mse.getTarget(),
                                             mse.getReduction());
          });
          add(1, [&]() -> Value {
            Value input =
                nn::MseLossGradOp::create(builder, loc, grad, mse.getInput(),
                                          mse.getTarget(), mse.getReduction());
            return nn::NegOp::create(builder, loc, input);
          });
          return success();
        })
        .Case([&](nn::CrossEntropyOp ce) {
          add(0, [&]() -> Value {
            return nn::CrossEntropyGradOp::create(
                builder, loc, grad, ce.getLogits(), ce.getLabels(),
                ce.getReduction(), ce.getIgnoreIndex());
          });
          return success();
        })
        .Default([&](Operation *) {
          return op->emitOpError("has no gradient rule in pp-autodiff yet");
        });
  }

private:
  /// C = op(A) * op(B) with op = identity or transpose: each operand's
  /// gradient is again a matmul of the result gradient with the other one.
  template <typename AddFn>
  void buildMatmul(nn::MatmulOp matmul, Value grad, AddFn &add) {
    Value a = matmul.getLhs(), b = matmul.getRhs();
    bool ta = matmul.getTransposeLhs(), tb = matmul.getTransposeRhs();
    add(0, [&]() -> Value {
      if (!ta) // dA = dC * op(B)^T
        return nn::MatmulOp::create(builder, loc, grad, b, false, !tb);
      // dA = op(B) * dC^T
      return nn::MatmulOp::create(builder, loc, b, grad, tb, true);
    });
    add(1, [&]() -> Value {
      if (!tb) // dB = op(A)^T * dC
        return nn::MatmulOp::create(builder, loc, a, grad, !ta, false);
      // dB = dC^T * op(A)
      return nn::MatmulOp::create(builder, loc, grad, a, true, ta);
    });
  }

  /// Sums a gradient back to the shape its operand had before broadcasting.
  Value sumTo(Value gradient, Type operandType) {
    auto type = cast<RankedTensorType>(operandType);
    if (gradient.getType() == type)
      return gradient;
    return nn::SumToOp::create(builder, loc, gradient, type.getShape());
  }

  OpBuilder &builder;
  Location loc;
  llvm::function_ref<bool(Value)> needsGradient;
};

struct AutodiffPass : public pp::impl::AutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main) || failed(differentiate(*main)))
      signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp main) {
    Block &body = main.getBody().front();
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    if (returnOp.getNumOperands() != 1 ||
        cast<RankedTensorType>(returnOp.getOperand(0).getType()).getRank() != 0)
      return main.emitError(
          "pp-autodiff differentiates a program that "
          "returns one scalar loss; run pp-attach-loss first");
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (argumentRole(main, i) == kRoleLossScale)
        return main.emitError("the program is already differentiated");
    Value loss = returnOp.getOperand(0);

    // Values that depend on a parameter need gradients.
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
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return active.contains(v); }))
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

    llvm::DenseMap<Value, Value> gradients;
    gradients[loss] = main.getArgument(scaleIndex);
    auto needsGradient = [&](Value v) { return active.contains(v); };

    for (Operation *op : llvm::reverse(forwardOps)) {
      if (op->getNumResults() != 1 || !gradients.count(op->getResult(0)))
        continue;
      StringAttr node = getNode(op);
      Operation *before = returnOp->getPrevNode();
      GradientBuilder rules(builder, op->getLoc(), needsGradient);
      SmallVector<Contribution> contributions;
      if (failed(rules.build(op, gradients[op->getResult(0)], contributions)))
        return failure();
      for (auto [operandIndex, gradient] : contributions) {
        Value operand = op->getOperand(operandIndex);
        auto it = gradients.find(operand);
        if (it == gradients.end()) {
          gradients[operand] = gradient;
          continue;
        }
        // Sum on the node that defines the value, so that partitioning
        // keeps the sum where the value lives.
        auto sum =
            nn::AddOp::create(builder, op->getLoc(), it->second, gradient);
        if (Operation *def = operand.getDefiningOp())
          if (StringAttr defNode = getNode(def))
            sum->setAttr(kNodeAttrName, defNode);
        it->second = sum;
      }
      tagBackward(before, returnOp, node);
    }

    // Results: the loss, then the gradient of each parameter the loss
    // depends on. The others get none (PyTorch's None), so the optimizer
    // leaves them alone.
    SmallVector<Value> results = {loss};
    SmallVector<Attribute> resultAttrs = {main.getResultAttrDict(0)};
    for (BlockArgument parameter : parameters) {
      StringRef name = argumentName(main, parameter.getArgNumber());
      if (parameter.use_empty())
        return main.emitError("parameter '")
               << name << "' is used by no op of the model; remove it "
               << "from the model file";
      Value gradient = gradients.lookup(parameter);
      if (!gradient)
        continue;
      results.push_back(gradient);
      resultAttrs.push_back(
          getNameAndRoleAttrs(builder.getContext(), name, kRoleGradient));
    }
    func::ReturnOp::create(builder, returnOp.getLoc(), results);
    returnOp.erase();
    main.setType(builder.getFunctionType(main.getArgumentTypes(),
                                         TypeRange(ValueRange(results))));
    main.setAllResultAttrs(resultAttrs);
    return success();
  }

  /// Marks the ops between `after` (exclusive; null: block start) and `end`
  /// as backward ops of `node`, keeping a node already set.
  static void tagBackward(Operation *after, Operation *end, StringAttr node) {
    Block *block = end->getBlock();
    auto it = after ? std::next(after->getIterator()) : block->begin();
    for (; &*it != end; ++it) {
      setBackward(&*it);
      if (node && !getNode(&*it))
        it->setAttr(kNodeAttrName, node);
    }
  }
};

} // namespace
