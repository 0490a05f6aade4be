//===- FuseElementwise.cpp - pp-fuse-elementwise --------------------------===//
//
// Groups connected elementwise ops of one shape in each stage function into
// an nn.fusion, which pp-lower-to-runtime turns into one generated loop.
// Which ops are elementwise comes from their definition (NN_Elementwise).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace pp {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/codegen/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// True when `op` can be computed inside a fusion: an elementwise op with
/// one statically shaped result of a float type the kernels compute (f32,
/// bf16 or f16) whose operands are of that type or i1 (where's condition),
/// the types the generated loop reads and writes. Ops of one group share
/// the type: each consumes its producers' results.
bool isFusible(Operation *op) {
  if (!op->hasTrait<nn::Elementwise>() || op->getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  Type element = type ? type.getElementType() : Type();
  if (!type || !type.hasStaticShape() ||
      !(element.isF32() || element.isBF16() || element.isF16()))
    return false;
  return llvm::all_of(op->getOperandTypes(), [&](Type operand) {
    auto tensor = dyn_cast<RankedTensorType>(operand);
    return tensor && tensor.hasStaticShape() &&
           (tensor.getElementType() == element ||
            tensor.getElementType().isInteger(1));
  });
}

ArrayRef<int64_t> resultShape(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType()).getShape();
}

/// Grows groups of fusible ops over one block in program order. A group
/// stands where its last op stands, so an op joins groups only when no op
/// outside them uses one of their values before it.
class Grouping {
public:
  explicit Grouping(Block &block) : block(block) {
    for (Operation &op : block)
      if (isFusible(&op))
        add(&op);
  }

  /// The groups of two ops or more, each in program order.
  SmallVector<SmallVector<Operation *>> fusedGroups() const {
    SmallVector<SmallVector<Operation *>> result;
    for (const SmallVector<Operation *> &group : groups)
      if (group.size() > 1)
        result.push_back(group);
    return result;
  }

private:
  void add(Operation *op) {
    SmallVector<unsigned> candidates;
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      auto it = producer ? groupOf.find(producer) : groupOf.end();
      if (it != groupOf.end() && resultShape(producer) == resultShape(op) &&
          !llvm::is_contained(candidates, it->second))
        candidates.push_back(it->second);
    }
    SmallVector<unsigned> joined;
    for (unsigned candidate : candidates) {
      joined.push_back(candidate);
      if (!canStandAt(joined, op))
        joined.pop_back();
    }
    if (joined.empty()) {
      groupOf[op] = groups.size();
      groups.push_back({op});
      return;
    }
    unsigned target = joined.front();
    for (unsigned other : llvm::drop_begin(joined)) {
      for (Operation *member : groups[other])
        groupOf[member] = target;
      llvm::append_range(groups[target], groups[other]);
      groups[other].clear();
    }
    groups[target].push_back(op);
    groupOf[op] = target;
    // Merged groups interleave: keep each group in program order.
    llvm::sort(groups[target], [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
  }

  /// True when the union of `ids` and `op` can stand at `op`: every user
  /// of one of their values is among them or after `op` in this block.
  bool canStandAt(ArrayRef<unsigned> ids, Operation *op) const {
    for (unsigned id : ids)
      for (Operation *member : groups[id])
        for (Operation *user : member->getResult(0).getUsers()) {
          // A use in another block keeps the value where it is.
          Operation *inBlock = block.findAncestorOpInBlock(*user);
          if (!inBlock)
            return false;
          auto it = groupOf.find(inBlock);
          bool inside = inBlock == op || (it != groupOf.end() &&
                                          llvm::is_contained(ids, it->second));
          if (!inside && !op->isBeforeInBlock(inBlock))
            return false;
        }
    return true;
  }

  Block &block;
  SmallVector<SmallVector<Operation *>> groups;
  llvm::DenseMap<Operation *, unsigned> groupOf;
};

/// Replaces the ops of `group` (in program order) by one nn.fusion where
/// the last of them stood.
void fuse(ArrayRef<Operation *> group) {
  llvm::SmallPtrSet<Operation *, 16> members(group.begin(), group.end());
  llvm::SetVector<Value> inputs;
  SmallVector<Value> escaping;
  SmallVector<Location> locations;
  for (Operation *op : group) {
    locations.push_back(op->getLoc());
    for (Value operand : op->getOperands())
      if (!members.contains(operand.getDefiningOp()))
        inputs.insert(operand);
    Value result = op->getResult(0);
    if (llvm::any_of(result.getUsers(),
                     [&](Operation *user) { return !members.contains(user); }))
      escaping.push_back(result);
  }
  OpBuilder builder(group.back());
  builder.setInsertionPointAfter(group.back());
  Location loc = builder.getFusedLoc(locations);
  auto fusion = nn::FusionOp::create(
      builder, loc, ValueRange(escaping).getTypes(), inputs.getArrayRef());
  SmallVector<Location> argumentLocations;
  for (Value input : inputs)
    argumentLocations.push_back(input.getLoc());
  Block *body = builder.createBlock(&fusion.getBody(), {},
                                    ValueRange(inputs.getArrayRef()).getTypes(),
                                    argumentLocations);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  for (Operation *op : group)
    builder.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value value : escaping)
    yielded.push_back(mapping.lookup(value));
  nn::YieldOp::create(builder, loc, yielded);
  for (auto [value, result] : llvm::zip(escaping, fusion.getResults()))
    value.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !members.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(group))
    op->erase();
}

struct FuseElementwisePass
    : public pp::impl::FuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (!function->hasAttr(kStageAttrName) || function.isExternal())
        continue;
      for (Block &block : function.getBody())
        for (const SmallVector<Operation *> &group :
             Grouping(block).fusedGroups())
          fuse(group);
    }
  }
};

} // namespace
