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

/// The LM head matmul whose logits `loss` takes, when the pair can fuse.
std::optional<nn::MatmulOp> fusibleHead(nn::CrossEntropyOp loss,
                                        const llvm::StringSet<> &keepNodes) {
  auto mayFuse = [&](Operation *op) {
    auto node = op->getAttrOfType<StringAttr>(kNodeAttrName);
    return !node || !keepNodes.contains(node.getValue());
  };
  auto head = loss.getLogits().getDefiningOp<nn::MatmulOp>();
  if (!head || !head->hasOneUse() || head.getTransposeLhs() ||
      cast<RankedTensorType>(head.getRhs().getType()).getRank() != 2 ||
      !isStaticF32(head.getLhs()) || !isStaticF32(head.getRhs()) ||
      !mayFuse(head) || !mayFuse(loss))
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

void fuse(nn::CrossEntropyOp loss, nn::MatmulOp head, int64_t chunkRows) {
  OpBuilder builder(loss);
  auto fused = nn::LinearCrossEntropyOp::create(
      builder, head.getLoc(), head.getLhs(), head.getRhs(), loss.getLabels(),
      loss.getReduction(), loss.getIgnoreIndex(), chunkRows,
      head.getTransposeRhs());
  for (NamedAttribute attr : head->getDiscardableAttrs())
    fused->setAttr(attr.getName(), attr.getValue());
  loss.getResult().replaceAllUsesWith(fused.getResult());
  loss->erase();
  head->erase();
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
      std::optional<nn::MatmulOp> head = fusibleHead(loss, keep);
      if (!head)
        continue;
      int64_t rows = chooseChunkRows(*head, chunkRows);
      if (!exactOnly || givesUnfusedBits(*head, rows))
        fuse(loss, *head, rows);
    }
  }
};

} // namespace
