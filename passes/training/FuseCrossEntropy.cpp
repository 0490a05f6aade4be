//===- FuseCrossEntropy.cpp - pp-fuse-cross-entropy -----------------------===//
//
// Replaces an LM head's nn.matmul and the nn.cross_entropy of its logits by
// one nn.linear_cross_entropy, whose kernel makes the logits a chunk of rows
// at a time and whose gradient recomputes them instead of saving them.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

namespace pp {
#define GEN_PASS_DEF_FUSECROSSENTROPY
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// Bytes of logits a chunk may hold when the pass chooses its rows.
constexpr int64_t kChunkLogitsBytes = int64_t(64) << 20;
/// The rows of a GEMM panel (runtime/kernels/gemm/GemmPanels.h): a chunk
/// of more rows than that is a multiple of it.
constexpr int64_t kPanelRows = 256;

/// True when `value` is a statically shaped f32 tensor.
bool isStaticF32(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getElementType().isF32() && type.hasStaticShape();
}

/// An LM head: the matmul of its logits and the bias added to them, if any.
struct Head {
  nn::MatmulOp matmul;
  nn::AddOp biasAdd;
  Value bias;
};

/// The bias operand of `add` when it adds a rank-1 f32 bias to `logits`'s
/// product (either operand), or null.
Value addedBias(nn::AddOp add) {
  for (unsigned product = 0; product < 2; ++product) {
    Value bias = add->getOperand(1 - product);
    auto type = cast<RankedTensorType>(bias.getType());
    if (add->getOperand(product).getDefiningOp<nn::MatmulOp>() &&
        type.getRank() == 1 && isStaticF32(bias) &&
        type.getShape()[0] == add.getType().getShape().back() &&
        add.getType() == add->getOperand(product).getType())
      return bias;
  }
  return Value();
}

/// The LM head whose logits `loss` takes, when the ops can fuse.
std::optional<Head> fusibleHead(nn::CrossEntropyOp loss,
                                const llvm::StringSet<> &keepNodes) {
  auto mayFuse = [&](Operation *op) {
    auto node = op->getAttrOfType<StringAttr>(kNodeAttrName);
    return !node || !keepNodes.contains(node.getValue());
  };
  Head head;
  Value logits = loss.getLogits();
  if (auto add = logits.getDefiningOp<nn::AddOp>()) {
    head.bias = addedBias(add);
    if (!head.bias || !add->hasOneUse() || !mayFuse(add))
      return std::nullopt;
    head.biasAdd = add;
    logits = add->getOperand(add.getLhs() == head.bias ? 1 : 0);
  }
  head.matmul = logits.getDefiningOp<nn::MatmulOp>();
  nn::MatmulOp matmul = head.matmul;
  if (!matmul || !matmul->hasOneUse() || matmul.getTransposeLhs() ||
      cast<RankedTensorType>(matmul.getRhs().getType()).getRank() != 2 ||
      !isStaticF32(matmul.getLhs()) || !isStaticF32(matmul.getRhs()) ||
      !mayFuse(matmul) || !mayFuse(loss))
    return std::nullopt;
  return head;
}

/// The rows of a chunk of `head`'s logits: `chunkRows` when positive, else
/// one batch element's rows while their logits fit in kChunkLogitsBytes.
int64_t chooseChunkRows(nn::MatmulOp head, int64_t chunkRows) {
  if (chunkRows > 0)
    return chunkRows;
  auto hidden = cast<RankedTensorType>(head.getLhs().getType());
  auto logits = cast<RankedTensorType>(head.getType());
  int64_t rowBytes = std::max<int64_t>(1, logits.getShape().back() * 4);
  int64_t batchRows = hidden.getShape()[hidden.getRank() - 2];
  if (batchRows * rowBytes <= kChunkLogitsBytes)
    return std::max<int64_t>(batchRows, 1);
  int64_t fitting = std::max<int64_t>(1, kChunkLogitsBytes / rowBytes);
  return fitting >= kPanelRows ? fitting / kPanelRows * kPanelRows : fitting;
}

/// True when one chunk of `chunkRows` rows holds every row of `head`'s
/// hidden states and they are one batch element: the fused kernels then
/// make the unfused program's GEMMs, and its bits.
bool givesUnfusedBits(nn::MatmulOp head, int64_t chunkRows) {
  auto hidden = cast<RankedTensorType>(head.getLhs().getType());
  int64_t batchRows = hidden.getShape()[hidden.getRank() - 2];
  int64_t rows = hidden.getNumElements() / hidden.getShape().back();
  return rows == batchRows && chunkRows >= rows;
}

void fuse(nn::CrossEntropyOp loss, const Head &head, int64_t chunkRows) {
  OpBuilder builder(loss);
  nn::MatmulOp matmul = head.matmul;
  auto fused = nn::LinearCrossEntropyOp::create(
      builder, matmul.getLoc(), matmul.getLhs(), matmul.getRhs(),
      loss.getLabels(), head.bias, loss.getReduction(), loss.getIgnoreIndex(),
      chunkRows, matmul.getTransposeRhs());
  for (NamedAttribute attr : matmul->getDiscardableAttrs())
    fused->setAttr(attr.getName(), attr.getValue());
  loss.getResult().replaceAllUsesWith(fused.getResult());
  loss->erase();
  if (head.biasAdd)
    head.biasAdd->erase();
  matmul->erase();
}

struct FuseCrossEntropyPass
    : public pp::impl::FuseCrossEntropyBase<FuseCrossEntropyPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> program = getProgram(getOperation());
    if (failed(program) || failed(checkFlatProgram(*program)))
      return signalPassFailure();
    if (chunkRows < 0) {
      program->emitError("pp-fuse-cross-entropy: chunk-rows must be 0 (the "
                         "pass chooses) or positive, got ")
          << static_cast<int64_t>(chunkRows);
      return signalPassFailure();
    }
    llvm::StringSet<> keep;
    for (const std::string &node : keepNodes)
      keep.insert(node);
    SmallVector<nn::CrossEntropyOp> losses;
    program->walk([&](nn::CrossEntropyOp loss) { losses.push_back(loss); });
    for (nn::CrossEntropyOp loss : losses) {
      std::optional<Head> head = fusibleHead(loss, keep);
      if (!head)
        continue;
      int64_t rows = chooseChunkRows(head->matmul, chunkRows);
      if (!exactOnly || givesUnfusedBits(head->matmul, rows))
        fuse(loss, *head, rows);
    }
  }
};

} // namespace
