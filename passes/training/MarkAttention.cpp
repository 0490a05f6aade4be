//===- MarkAttention.cpp - pp-mark-attention ------------------------------===//
//
// Marks the ops of attention with `pp.attention`, from the program's
// pattern rather than from names: a softmax over scores that a matmul of
// two activations produced, the scale and mask between them, and the
// matmuls that take its probabilities. pp-autodiff hands the mark on to
// their gradients, and pp-lower-to-runtime passes it to the profile
// brackets (PP_PROFILE_ATTENTION).
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace pp {
#define GEN_PASS_DEF_MARKATTENTION
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// The most ops between the scores' matmul and the softmax (scale, mask,
/// casts, reshapes), and between the softmax and the weighted sum
/// (dropout, casts), that the search follows.
constexpr int kMostScoreSteps = 8;

/// Finds and marks the attention ops of one program.
class AttentionMarker {
public:
  explicit AttentionMarker(func::FuncOp main) : activations(inputDerived(main)) {}

  /// Marks `softmax` and its attention when it is attention's.
  void markIfAttention(nn::SoftmaxOp softmax) {
    SmallVector<Operation *> scorePath;
    Operation *scores = findScores(softmax.getInput(), scorePath, 0);
    if (!scores)
      return;
    SmallVector<Operation *> weighting;
    if (!findWeightedSums(softmax, weighting, 0))
      return;
    mark(scores);
    for (Operation *op : scorePath)
      mark(op);
    mark(softmax);
    for (Operation *op : weighting)
      mark(op);
    llvm::append_range(masked, scorePath);
  }

  /// Marks the ops that compute the masks of the attention marked so far
  /// alone: after every attention is, so that a mask all layers share is
  /// one too.
  void markMasks() {
    for (Operation *op : masked)
      for (Value operand : op->getOperands())
        markMask(operand);
  }

private:
  /// The values computed from the program's inputs (its arguments that are
  /// not model parameters): activations. Values of parameters and
  /// constants alone are not.
  static llvm::DenseSet<Value> inputDerived(func::FuncOp main) {
    return valuesDerivedFrom(
        main, [&](unsigned index) { return !isModelParameter(main, index); });
  }

  /// Whether `op` is a matmul of two activations (scores, or a weighted
  /// sum), not a layer's product with its weight.
  bool isActivationProduct(Operation *op) const {
    return isa<nn::MatmulOp>(op) &&
           llvm::all_of(op->getOperands(), [&](Value value) {
             return activations.contains(value);
           });
  }

  /// Whether `op` keeps scores or probabilities what they are in another
  /// form: a scale, a mask, a cast, a reshape, dropout.
  static bool carriesScores(Operation *op) {
    return op->hasTrait<nn::Elementwise>() ||
           isa<nn::CastOp, nn::ReshapeOp, nn::DropoutOp>(op);
  }

  /// The matmul of two activations that `value` comes from through at most
  /// kMostScoreSteps ops that carry scores, appending those ops to `path`;
  /// null when there is none.
  Operation *findScores(Value value, SmallVectorImpl<Operation *> &path,
                        int steps) const {
    Operation *def = value.getDefiningOp();
    if (!def)
      return nullptr;
    if (isActivationProduct(def))
      return def;
    if (steps == kMostScoreSteps || !carriesScores(def))
      return nullptr;
    for (Value operand : def->getOperands()) {
      if (!activations.contains(operand))
        continue;
      if (Operation *scores = findScores(operand, path, steps + 1)) {
        path.push_back(def);
        return scores;
      }
    }
    return nullptr;
  }

  /// Appends to `found` the matmuls of activations that take `from`'s
  /// result through at most kMostScoreSteps - `steps` ops that carry
  /// probabilities, and those ops; whether there is one.
  bool findWeightedSums(Operation *from, SmallVectorImpl<Operation *> &found,
                        int steps) const {
    bool any = false;
    for (Operation *user : from->getUsers()) {
      if (isActivationProduct(user)) {
        found.push_back(user);
        any = true;
      } else if (steps < kMostScoreSteps && carriesScores(user) &&
                 user->getNumResults() == 1 &&
                 findWeightedSums(user, found, steps + 1)) {
        found.push_back(user);
        any = true;
      }
    }
    return any;
  }

  /// Marks the ops that compute `value` for attention alone (the mask):
  /// those whose every user is marked already.
  void markMask(Value value) {
    Operation *def = value.getDefiningOp();
    if (!def || isa<arith::ConstantOp>(def) ||
        def->hasAttr(kAttentionAttrName) ||
        !llvm::all_of(def->getUsers(), [](Operation *user) {
          return user->hasAttr(kAttentionAttrName);
        }))
      return;
    mark(def);
    for (Value operand : def->getOperands())
      markMask(operand);
  }

  static void mark(Operation *op) {
    op->setAttr(kAttentionAttrName, UnitAttr::get(op->getContext()));
  }

  llvm::DenseSet<Value> activations;
  /// The ops between the scores and the softmaxes marked so far, whose
  /// other operands are masks.
  SmallVector<Operation *> masked;
};

struct MarkAttentionPass
    : public pp::impl::MarkAttentionBase<MarkAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> program = getProgram(getOperation());
    if (failed(program) || failed(checkFlatProgram(*program)))
      return signalPassFailure();
    AttentionMarker marker(*program);
    program->walk(
        [&](nn::SoftmaxOp softmax) { marker.markIfAttention(softmax); });
    marker.markMasks();
  }
};

} // namespace
