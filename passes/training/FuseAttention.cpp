//===- FuseAttention.cpp - pp-fuse-attention ------------------------------===//
//
// Replaces the chain of ops a model computes attention with (scores'
// matmul, scale, bias, mask, softmax, weighted sum) by one nn.attention,
// whose kernel runs them one head at a time with the same arithmetic and
// whose gradient recomputes the probabilities instead of saving them.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace pp {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// The ops of one attention and what nn.attention takes from them.
struct AttentionChain {
  nn::MatmulOp scores;
  nn::SoftmaxOp softmax;
  nn::MatmulOp weightedSum;
  /// The mask, bias and scale ops (those present), from the softmax back to
  /// the scores: each one's user before it.
  SmallVector<Operation *> between;
  double scale = 1.0;
  bool divide = false;
  Value bias, mask;
  double fill = 0.0;
  bool fillWhereTrue = false;
};

/// The value of a constant whose elements are all one f32 `value`, or
/// nullopt.
std::optional<double> splatF32(Value value) {
  DenseElementsAttr elements;
  if (!matchPattern(value, m_Constant(&elements)) || !elements.isSplat() ||
      !elements.getElementType().isF32())
    return std::nullopt;
  return elements.getSplatValue<APFloat>().convertToDouble();
}

/// True when `value` is an f32 tensor.
bool isF32(Value value) {
  return getElementTypeOrSelf(value.getType()).isF32();
}

/// Finds the attention chains of one program.
class AttentionMatcher {
public:
  AttentionMatcher(func::FuncOp main, const llvm::StringSet<> &keepNodes)
      : parameterDerived(derivedFromParameters(main)), keepNodes(keepNodes) {}

  /// The chain whose softmax is `softmax`, or nullopt.
  std::optional<AttentionChain> match(nn::SoftmaxOp softmax) const {
    AttentionChain chain;
    chain.softmax = softmax;
    auto type = cast<RankedTensorType>(softmax.getType());
    if (!type.getElementType().isF32() || type.getRank() < 2 ||
        (static_cast<int64_t>(softmax.getAxis()) != -1 &&
         static_cast<int64_t>(softmax.getAxis()) != type.getRank() - 1) ||
        !softmax->hasOneUse() || !keeps(softmax))
      return std::nullopt;
    auto weightedSum = dyn_cast<nn::MatmulOp>(*softmax->user_begin());
    if (!weightedSum || weightedSum.getLhs() != softmax.getResult() ||
        weightedSum.getTransposeLhs() || weightedSum.getTransposeRhs() ||
        !keeps(weightedSum))
      return std::nullopt;
    chain.weightedSum = weightedSum;
    Value scores = softmax.getInput();
    // From the softmax back to the scores: where, add, mul or div, each
    // optional, in that order.
    if (auto where = scores.getDefiningOp<nn::WhereOp>();
        where && intermediate(where)) {
      std::optional<double> onTrue = splatF32(where.getOnTrue());
      std::optional<double> onFalse = splatF32(where.getOnFalse());
      if (onTrue.has_value() == onFalse.has_value())
        return std::nullopt;
      chain.fillWhereTrue = onTrue.has_value();
      chain.fill = onTrue ? *onTrue : *onFalse;
      chain.mask = where.getCondition();
      chain.between.push_back(where);
      scores = onTrue ? where.getOnFalse() : where.getOnTrue();
    }
    if (auto add = scores.getDefiningOp<nn::AddOp>();
        add && intermediate(add)) {
      // The bias is the operand that is not the (scaled) scores.
      bool lhsScores = isScaledScores(add.getLhs());
      if (lhsScores == isScaledScores(add.getRhs()))
        return std::nullopt;
      unsigned scored = lhsScores ? 0 : 1;
      chain.bias = add->getOperand(1 - scored);
      if (!isF32(chain.bias) || parameterDerived.contains(chain.bias))
        return std::nullopt;
      chain.between.push_back(add);
      scores = add->getOperand(scored);
    }
    if (Operation *scale = scores.getDefiningOp();
        scale && isa<nn::MulOp, nn::DivOp>(scale) && intermediate(scale)) {
      std::optional<unsigned> scored = scaledOperand(scale);
      if (!scored)
        return std::nullopt;
      chain.scale = *splatF32(scale->getOperand(1 - *scored));
      chain.divide = isa<nn::DivOp>(scale);
      chain.between.push_back(scale);
      scores = scale->getOperand(*scored);
    }
    auto matmul = scores.getDefiningOp<nn::MatmulOp>();
    if (!matmul || matmul.getTransposeLhs() || !matmul->hasOneUse() ||
        matmul.getType() != softmax.getType() || !shareBatch(matmul, chain))
      return std::nullopt;
    chain.scores = matmul;
    return chain;
  }

private:
  /// The values computed from the model's parameters, which need
  /// gradients nn.attention does not give its bias.
  static llvm::DenseSet<Value> derivedFromParameters(func::FuncOp main) {
    return valuesDerivedFrom(
        main, [&](unsigned index) { return isModelParameter(main, index); });
  }

  /// True when `op` is not a node that must stay an op of its own.
  bool keeps(Operation *op) const {
    auto node = op->getAttrOfType<StringAttr>(kNodeAttrName);
    return !node || !keepNodes.contains(node.getValue());
  }

  /// True when `op` may disappear into the fused op: f32 scores of one
  /// use, the scores' shape unchanged, and no node that must stay.
  bool intermediate(Operation *op) const {
    return op->getNumResults() == 1 && op->hasOneUse() &&
           isF32(op->getResult(0)) && keeps(op);
  }

  /// The operand of `scale` (an nn.mul or nn.div) that it scales by a
  /// scalar constant, the other: the divisor of a division; nullopt when
  /// there is no such constant.
  static std::optional<unsigned> scaledOperand(Operation *scale) {
    if (splatF32(scale->getOperand(1)))
      return 0u;
    if (isa<nn::MulOp>(scale) && splatF32(scale->getOperand(0)))
      return 1u;
    return std::nullopt;
  }

  /// True when `value` is a matmul's product, scaled or not: the scores,
  /// not the bias.
  static bool isScaledScores(Value value) {
    Operation *def = value.getDefiningOp();
    if (def && isa<nn::MulOp, nn::DivOp>(def))
      if (std::optional<unsigned> scored = scaledOperand(def))
        def = def->getOperand(*scored).getDefiningOp();
    return isa_and_present<nn::MatmulOp>(def);
  }

  /// True when the query, key and value of the chain are f32 tensors of
  /// one rank and static shapes sharing their leading dimensions (the
  /// matmuls broadcast nothing), every op between the scores and the
  /// softmax keeps the scores' type, and the query, key and value are
  /// three values that only the chain reads: each then gets its gradient
  /// from nn.attention_grad alone, as it got it from one matmul's gradient
  /// unfused, so no sum of contributions changes its order.
  static bool shareBatch(nn::MatmulOp scores, AttentionChain &chain) {
    Value operands[] = {scores.getLhs(), scores.getRhs(),
                        chain.weightedSum.getRhs()};
    auto query = cast<RankedTensorType>(operands[0].getType());
    ArrayRef<int64_t> batch = query.getShape().drop_back(2);
    auto fits = [&](Value operand) {
      auto type = cast<RankedTensorType>(operand.getType());
      return type.getElementType().isF32() && type.hasStaticShape() &&
             type.getRank() == query.getRank() &&
             type.getShape().drop_back(2) == batch && operand.hasOneUse();
    };
    // One use each: three distinct values.
    return llvm::all_of(operands, fits) &&
           llvm::all_of(chain.between, [&](Operation *op) {
             return op->getResult(0).getType() == scores.getType();
           });
  }

  llvm::DenseSet<Value> parameterDerived;
  const llvm::StringSet<> &keepNodes;
};

/// Replaces `chain` with one nn.attention carrying the scores' matmul's
/// node and attributes, and erases its ops and the constants only they
/// read.
void fuse(AttentionChain &chain) {
  OpBuilder builder(chain.weightedSum);
  nn::MatmulOp scores = chain.scores;
  auto attention = nn::AttentionOp::create(
      builder, scores.getLoc(), scores.getLhs(), scores.getRhs(),
      chain.weightedSum.getRhs(), chain.bias, chain.mask,
      chain.divide ? builder.getUnitAttr() : nullptr,
      builder.getF64FloatAttr(chain.fill),
      chain.fillWhereTrue ? builder.getUnitAttr() : nullptr,
      builder.getF64FloatAttr(chain.scale),
      scores.getTransposeRhs() ? builder.getUnitAttr() : nullptr);
  for (NamedAttribute attr : scores->getDiscardableAttrs())
    attention->setAttr(attr.getName(), attr.getValue());
  chain.weightedSum.getResult().replaceAllUsesWith(attention.getResult());
  SmallVector<Operation *> erased = {chain.weightedSum, chain.softmax};
  llvm::append_range(erased, chain.between);
  erased.push_back(scores);
  llvm::SetVector<Operation *> constants;
  for (Operation *op : erased) {
    for (Value operand : op->getOperands())
      if (auto constant = operand.getDefiningOp<arith::ConstantOp>())
        constants.insert(constant);
    op->erase();
  }
  for (Operation *constant : constants)
    if (constant->use_empty())
      constant->erase();
}

struct FuseAttentionPass
    : public pp::impl::FuseAttentionBase<FuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> program = getProgram(getOperation());
    if (failed(program) || failed(checkFlatProgram(*program)))
      return signalPassFailure();
    llvm::StringSet<> keep;
    for (const std::string &node : keepNodes)
      keep.insert(node);
    AttentionMatcher matcher(*program, keep);
    // In program order, each chain matched against the program as the
    // chains before it left it (an attention's result may be the next
    // one's query): fusing erases only the chain's own ops.
    SmallVector<nn::SoftmaxOp> softmaxes;
    program->walk([&](nn::SoftmaxOp softmax) { softmaxes.push_back(softmax); });
    for (nn::SoftmaxOp softmax : softmaxes)
      if (std::optional<AttentionChain> chain = matcher.match(softmax))
        fuse(*chain);
  }
};

} // namespace
