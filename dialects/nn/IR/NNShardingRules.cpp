//===- NNShardingRules.cpp - how each op runs on sharded operands ---------===//
//
// One ShardingRuleOpInterface::planSharding per op family (the elementwise
// maps share the interface's default). A rule keeps a sharding flowing
// through an op whenever the op's per-device computation on per-device data
// is the device's part of the whole result, turns shardings of summed
// dimensions into pending sums, and asks for replicated operands otherwise.
// localizeShapeAttributes makes the attributes that restate shapes
// per-device once pp-shard-tensor-parallel has localized the op.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace pp::nn;

namespace {

using Layout = TensorLayout;

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

int64_t normalizedAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

int64_t bytesOf(RankedTensorType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(bits / 8, 1);
}

/// Builds the plan of one op whose operands have the layouts `current`.
class Rules {
public:
  Rules(Operation *op, ArrayRef<Layout> current,
        const ShardingContext &context)
      : op(op), current(current), context(context) {}

private:
  Operation *op;
  ArrayRef<Layout> current;
  const ShardingContext &context;

  RankedTensorType operandType(unsigned i) const {
    return context.operandTypes[i];
  }
  RankedTensorType resultType(unsigned i) const {
    return tensorType(op->getResult(i));
  }
  int64_t devices() const { return context.devices; }
  std::optional<Layout> hint(unsigned result) const {
    if (result < context.resultHints.size())
      return context.resultHints[result];
    return std::nullopt;
  }
  bool fits(RankedTensorType type, Layout layout) const {
    return layoutFits(type, layout, devices());
  }

public:
  /// Every operand and result replicated.
  ShardingPlan replicated() const {
    return ShardingPlan::replicated(op->getNumOperands(), op->getNumResults());
  }

  /// The layout a pending sum of `type` becomes when its user cannot take
  /// a pending sum: split along the sequence under sequence parallelism,
  /// else replicated.
  Layout resolvedPartial(RankedTensorType type) const {
    Layout sequence = Layout::sharded(1);
    if (context.sequenceParallel && type.getRank() == 3 &&
        fits(type, sequence))
      return sequence;
    return Layout::replicated();
  }

  /// The normalized axes `[axis, axis + count)`.
  SmallVector<int64_t> axesFrom(int64_t axis, int64_t count) const {
    int64_t first = normalizedAxis(axis, resultType(0).getRank());
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < count; ++i)
      axes.push_back(first + i);
    return axes;
  }

  /// An op like softmax that mixes elements only along `axis`.
  ShardingPlan planAlongAxis(int64_t axis) const {
    return planKeepingAxes(axesFrom(axis, 1));
  }

  /// An op whose operands and results all have the result's shape and
  /// whose computation mixes elements only along `axes`: a sharding along
  /// any other dimension flows through.
  ShardingPlan planKeepingAxes(ArrayRef<int64_t> axes) const {
    RankedTensorType type = resultType(0);
    Layout target = Layout::replicated();
    for (Layout layout : current)
      if (layout.isSharded() && !llvm::is_contained(axes, layout.dim)) {
        target = layout;
        break;
      }
    if (target.isReplicated())
      for (Layout layout : current)
        if (layout.isPartial()) {
          target = resolvedPartial(type);
          if (target.isSharded() && llvm::is_contained(axes, target.dim))
            target = Layout::replicated();
          break;
        }
    ShardingPlan plan;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      plan.operands.push_back(operandType(i).getShape() == type.getShape()
                                  ? target
                                  : Layout::replicated());
    plan.results.assign(op->getNumResults(), target);
    return plan;
  }

  /// Elementwise ops with NumPy broadcasting: operand dimensions align with
  /// the result's trailing ones; a broadcast operand dimension is whole on
  /// every device.
  ShardingPlan planElementwise() const {
    ShardingPlan plan;
    RankedTensorType type = resultType(0);
    int64_t rank = type.getRank();
    if (llvm::any_of(current, [](Layout l) { return l.isPartial(); }) &&
        cast<ShardingRuleOpInterface>(op).keepsPendingSum(current)) {
      plan.operands.assign(current.begin(), current.end());
      plan.results.push_back(Layout::partial());
      return plan;
    }
    // The operand dimension matching result dimension `dim`, unless the
    // operand broadcasts along it.
    auto operandDim = [&](unsigned i, int64_t dim) -> std::optional<int64_t> {
      RankedTensorType operand = operandType(i);
      int64_t d = dim - (rank - operand.getRank());
      if (d < 0 || operand.getDimSize(d) != type.getDimSize(dim))
        return std::nullopt;
      return d;
    };
    Layout target = Layout::replicated();
    bool anyPartial = false;
    for (auto [i, layout] : llvm::enumerate(current)) {
      anyPartial |= layout.isPartial();
      if (!layout.isSharded() || !target.isReplicated())
        continue;
      int64_t dim = layout.dim + (rank - operandType(i).getRank());
      if (operandDim(i, dim))
        target = Layout::sharded(dim, layout.blocks);
    }
    if (target.isReplicated() && anyPartial)
      target = resolvedPartial(type);
    for (unsigned i = 0; i < current.size(); ++i) {
      std::optional<int64_t> d =
          target.isSharded() ? operandDim(i, target.dim) : std::nullopt;
      plan.operands.push_back(d ? Layout::sharded(*d, target.blocks)
                                : Layout::replicated());
    }
    plan.results.push_back(target);
    return plan;
  }

  //===--------------------------------------------------------------------===//
  // Contractions
  //===--------------------------------------------------------------------===//

  enum class Factor { Batch, M, N, K };

  /// The matmul factor dimension `dim` of operand `which` (0 lhs, 1 rhs)
  /// spans, and for a batch dimension the result dimension.
  std::pair<Factor, int64_t> matmulFactor(MatmulOp matmul, unsigned which,
                                          int64_t dim) const {
    int64_t rank = operandType(which).getRank();
    int64_t resultRank = resultType(0).getRank();
    bool transposed =
        which == 0 ? matmul.getTransposeLhs() : matmul.getTransposeRhs();
    Factor inner = which == 0 ? Factor::K : Factor::N;
    Factor outer = which == 0 ? Factor::M : Factor::K;
    if (transposed)
      std::swap(inner, outer);
    if (dim == rank - 1)
      return {inner, 0};
    if (dim == rank - 2)
      return {outer, 0};
    return {Factor::Batch, dim + (resultRank - rank)};
  }

  /// The dimension of operand `which` that spans `factor` (for Batch: the
  /// result dimension `batchDim`), unless it is broadcast or absent.
  std::optional<int64_t> matmulDim(MatmulOp matmul, unsigned which,
                                   Factor factor, int64_t batchDim) const {
    RankedTensorType type = operandType(which);
    int64_t rank = type.getRank();
    for (int64_t d = 0; d < rank; ++d) {
      auto [f, result] = matmulFactor(matmul, which, d);
      if (f != factor || (f == Factor::Batch && result != batchDim))
        continue;
      if (f == Factor::Batch &&
          type.getDimSize(d) != resultType(0).getDimSize(result))
        return std::nullopt;
      return d;
    }
    return std::nullopt;
  }

  /// The plan that keeps operand `which`'s sharding `layout`.
  ShardingPlan matmulKeeping(MatmulOp matmul, unsigned which,
                             Layout layout) const {
    ShardingPlan plan;
    plan.operands.assign(2, Layout::replicated());
    plan.operands[which] = layout;
    unsigned other = 1 - which;
    int64_t resultRank = resultType(0).getRank();
    auto [factor, batchDim] = matmulFactor(matmul, which, layout.dim);
    switch (factor) {
    case Factor::Batch:
      if (auto d = matmulDim(matmul, other, Factor::Batch, batchDim))
        plan.operands[other] = Layout::sharded(*d, layout.blocks);
      plan.results.push_back(Layout::sharded(batchDim, layout.blocks));
      break;
    case Factor::M:
      plan.results.push_back(Layout::sharded(resultRank - 2, layout.blocks));
      break;
    case Factor::N:
      plan.results.push_back(Layout::sharded(resultRank - 1, layout.blocks));
      break;
    case Factor::K:
      plan.operands[other] = Layout::sharded(
          *matmulDim(matmul, other, Factor::K, 0), layout.blocks);
      plan.results.push_back(Layout::partial());
      break;
    }
    return plan;
  }

  /// What converting operand `i` from its layout to `to` costs: the bytes
  /// it moves (slicing a replicated tensor moves none), counted apart for
  /// a parameter, whose shards should stay shards: gathering a weight every
  /// step costs more than moving any activation.
  std::pair<int64_t, int64_t> conversionCost(unsigned i, Layout to) const {
    if (current[i] == to || current[i].isReplicated())
      return {0, 0};
    bool parameter =
        i < context.operandIsParameter.size() && context.operandIsParameter[i];
    int64_t bytes = bytesOf(operandType(i));
    return parameter ? std::pair<int64_t, int64_t>{bytes, 0}
                     : std::pair<int64_t, int64_t>{0, bytes};
  }

  /// Matmuls: a sharded batch dimension stays sharded; M or N sharding
  /// gives a sharded result; K sharded on both sides gives a pending sum; a
  /// pending sum times a replicated operand stays one. Among the plans that
  /// keep the lhs's or the rhs's sharding, keep a pending sum or replicate
  /// both, the one that gathers the fewest parameter bytes, then moves the
  /// fewest other bytes (counting the all-reduce a pending result will
  /// need), wins; on a tie, the earlier (shardings first).
  ShardingPlan planMatmul(MatmulOp matmul) const {
    SmallVector<ShardingPlan> candidates;
    for (unsigned which = 0; which < 2; ++which)
      if (current[which].isSharded())
        candidates.push_back(matmulKeeping(matmul, which, current[which]));
    for (unsigned which = 0; which < 2; ++which) {
      Layout layout = current[which];
      if (layout.isPartial()) {
        ShardingPlan plan;
        plan.operands.assign(2, Layout::replicated());
        plan.operands[which] = layout;
        plan.results.push_back(Layout::partial());
        candidates.push_back(plan);
      }
    }
    candidates.push_back(replicated());
    const ShardingPlan *best = nullptr;
    std::pair<int64_t, int64_t> bestCost;
    for (const ShardingPlan &plan : candidates) {
      bool fitsAll = true;
      std::pair<int64_t, int64_t> cost = {
          0, plan.results[0].isPartial() ? bytesOf(resultType(0)) : 0};
      for (unsigned i = 0; i < 2; ++i) {
        fitsAll &= fits(operandType(i), plan.operands[i]);
        auto [parameterBytes, bytes] = conversionCost(i, plan.operands[i]);
        cost.first += parameterBytes;
        cost.second += bytes;
      }
      if (fitsAll && (!best || cost < bestCost)) {
        best = &plan;
        bestCost = cost;
      }
    }
    return *best;
  }

  /// Attention and its gradient: the operands before `firstBroadcast`
  /// (query, key and value, and the gradient first) share their leading
  /// batch and head dimensions, along which each computes on its own; a
  /// sharding of one of those flows through all of them and the results,
  /// and the bias and mask (from `firstBroadcast` on, broadcast to the
  /// scores) follow it where they span that dimension. Anything else runs
  /// replicated.
  ShardingPlan planAttention(unsigned firstBroadcast) const {
    int64_t rank = operandType(0).getRank();
    Layout target = Layout::replicated();
    for (unsigned i = 0; i < firstBroadcast; ++i)
      if (current[i].isSharded() && current[i].dim < rank - 2 &&
          fits(operandType(i), current[i])) {
        target = current[i];
        break;
      }
    ShardingPlan plan;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      if (i < firstBroadcast || target.isReplicated()) {
        plan.operands.push_back(target);
        continue;
      }
      RankedTensorType type = operandType(i);
      int64_t dim = target.dim - (rank - type.getRank());
      bool spans = dim >= 0 && type.getDimSize(dim) ==
                                   operandType(0).getDimSize(target.dim);
      plan.operands.push_back(spans ? Layout::sharded(dim, target.blocks)
                                    : Layout::replicated());
    }
    plan.results.assign(op->getNumResults(), target);
    return plan;
  }

  //===--------------------------------------------------------------------===//
  // Shapes
  //===--------------------------------------------------------------------===//

  /// A single-operand op whose result layout `map` computes from a
  /// sharding (nullopt: the operand must be replicated); pending sums pass
  /// when `linear`.
  ShardingPlan planUnary(function_ref<std::optional<Layout>(Layout)> map,
                         bool linear = true) const {
    ShardingPlan plan;
    Layout layout = current[0];
    if (layout.isPartial() && !linear)
      layout = Layout::replicated();
    std::optional<Layout> result =
        layout.isSharded() ? map(layout) : std::optional<Layout>(layout);
    if (!result || !fits(resultType(0), *result)) {
      layout = Layout::replicated();
      result = Layout::replicated();
    }
    plan.operands.push_back(layout);
    plan.operands.append(op->getNumOperands() - 1, Layout::replicated());
    plan.results.assign(op->getNumResults(), *result);
    return plan;
  }

  ShardingPlan planTranspose(TransposeOp transpose) const {
    return planUnary(
        [&](Layout layout) -> std::optional<Layout> {
          ArrayRef<int64_t> permutation = transpose.getPermutation();
          auto *at = llvm::find(permutation, layout.dim);
          return Layout::sharded(at - permutation.begin(), layout.blocks);
        },
        /*linear=*/false);
  }

  /// A reshape keeps a sharding whose devices' pieces stay contiguous
  /// pieces of one result dimension (reshapeLayout).
  ShardingPlan planReshape() const {
    ShardingPlan plan = planUnary(
        [&](Layout layout) {
          return reshapeLayout(operandType(0).getShape(),
                               resultType(0).getShape(), layout, devices());
        },
        /*linear=*/false);
    if (current[0].isSharded() && plan.operands[0].isReplicated())
      plan.sizeProblem = reshapeSizeProblem(current[0]);
    return plan;
  }

  /// When this reshape cannot keep its input's sharding `from` because the
  /// devices do not divide the dimension that receives the major part of
  /// the sharded one (a hidden dimension split into attention heads), says
  /// so.
  std::string reshapeSizeProblem(Layout from) const {
    ArrayRef<int64_t> in = operandType(0).getShape();
    ArrayRef<int64_t> out = resultType(0).getShape();
    // The flat extent of the sharded dimension's blocks; the output
    // dimension that ends at or beyond it receives their major part.
    int64_t inner = 1;
    for (int64_t size : in.drop_front(from.dim + 1))
      inner *= size;
    int64_t top = inner * in[from.dim] / from.blocks;
    int64_t stride = 1;
    for (int64_t d = out.size() - 1; d >= 0; stride *= out[d--]) {
      if (stride >= top || stride * out[d] < top)
        continue;
      if (out[d] % devices() == 0)
        return "";
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "splits dimension " << from.dim << " (size " << in[from.dim]
         << ") into dimension " << d << " of [";
      llvm::interleaveComma(out, os);
      os << "], whose " << out[d]
         << " entries (attention heads) do not split over " << devices()
         << " devices";
      return text;
    }
    return "";
  }

  ShardingPlan planBroadcastTo() const {
    int64_t added = resultType(0).getRank() - operandType(0).getRank();
    return planUnary(
        [&](Layout layout) -> std::optional<Layout> {
          if (operandType(0).getDimSize(layout.dim) !=
              resultType(0).getDimSize(layout.dim + added))
            return std::nullopt;
          return Layout::sharded(layout.dim + added, layout.blocks);
        },
        /*linear=*/false);
  }

  /// sum_to sums the leading dimensions and those the result keeps with
  /// size 1: a sharding of a summed dimension becomes a pending sum.
  ShardingPlan planSumTo() const {
    int64_t dropped = operandType(0).getRank() - resultType(0).getRank();
    return planUnary([&](Layout layout) -> std::optional<Layout> {
      int64_t dim = layout.dim - dropped;
      if (dim < 0 || resultType(0).getDimSize(dim) !=
                         operandType(0).getDimSize(layout.dim))
        return Layout::partial();
      return Layout::sharded(dim, layout.blocks);
    });
  }

  /// Reductions over `axes`: other dimensions keep their sharding; a
  /// sharding of a reduced dimension becomes a pending sum for a sum
  /// (`sumsShards`) and needs the whole dimension otherwise.
  ShardingPlan planReduce(ArrayRef<int64_t> axes, bool keepDims,
                          bool sumsShards, bool linear) const {
    int64_t rank = operandType(0).getRank();
    SmallVector<int64_t> reduced;
    for (int64_t axis : axes)
      reduced.push_back(normalizedAxis(axis, rank));
    return planUnary(
        [&](Layout layout) -> std::optional<Layout> {
          if (llvm::is_contained(reduced, layout.dim))
            return sumsShards ? std::optional<Layout>(Layout::partial())
                              : std::nullopt;
          int64_t dim = layout.dim;
          if (!keepDims)
            dim -= llvm::count_if(reduced,
                                  [&](int64_t r) { return r < layout.dim; });
          return Layout::sharded(dim, layout.blocks);
        },
        linear);
  }

  ShardingPlan planReduceSumGrad(ReduceSumGradOp grad) const {
    int64_t rank = resultType(0).getRank();
    SmallVector<int64_t> reduced;
    for (int64_t axis : grad.getAxes())
      reduced.push_back(normalizedAxis(axis, rank));
    bool keptDims = operandType(0).getRank() == rank;
    return planUnary([&](Layout layout) -> std::optional<Layout> {
      int64_t dim = layout.dim;
      if (!keptDims)
        for (int64_t d = 0; d < rank; ++d)
          if (llvm::is_contained(reduced, d) && d <= dim)
            ++dim;
      if (llvm::is_contained(reduced, dim))
        return std::nullopt;
      return Layout::sharded(dim, layout.blocks);
    });
  }

  /// split: a sharding of another dimension flows into every part; one of
  /// the split dimension does when the parts are equal and each is a whole
  /// number of its blocks (a fused QKV projection in 3 blocks).
  ShardingPlan planSplit(SplitOp split) const {
    int64_t axis = normalizedAxis(split.getAxis(), operandType(0).getRank());
    ArrayRef<int64_t> sizes = split.getSizes();
    int64_t parts = sizes.size();
    return planUnary([&](Layout layout) -> std::optional<Layout> {
      if (layout.dim != axis)
        return layout;
      bool equal = llvm::all_equal(sizes);
      if (!equal || layout.blocks % parts != 0)
        return std::nullopt;
      return Layout::sharded(axis, layout.blocks / parts);
    });
  }

  ShardingPlan planConcat(ConcatOp concat) const {
    int64_t rank = resultType(0).getRank();
    int64_t axis = normalizedAxis(concat.getAxis(), rank);
    ShardingPlan plan;
    Layout first = current[0];
    bool same = llvm::all_of(current, [&](Layout l) { return l == first; });
    bool equalSizes = true;
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      equalSizes &= operandType(i).getShape() == operandType(0).getShape();
    Layout result = Layout::replicated();
    if (same && first.isPartial())
      result = first;
    else if (same && first.isSharded() && first.dim != axis)
      result = first;
    else if (same && first.isSharded() && equalSizes)
      result = Layout::sharded(axis, first.blocks * op->getNumOperands());
    Layout operand = result.isReplicated() ? result : first;
    plan.operands.assign(op->getNumOperands(), operand);
    plan.results.push_back(result);
    return plan;
  }

  /// True when a slice with these parameters keeps dimension `dim` whole.
  static bool keepsWhole(ArrayRef<int64_t> starts, ArrayRef<int64_t> limits,
                         ArrayRef<int64_t> strides, int64_t size,
                         int64_t dim) {
    return starts[dim] == 0 && limits[dim] == size && strides[dim] == 1;
  }

  /// slice: a dimension taken whole keeps its sharding; along the sharded
  /// dimension, a slice of whole blocks (the q, k or v part of a fused
  /// projection) keeps those blocks.
  ShardingPlan planSlice(SliceOp slice) const {
    return planUnary(
        [&](Layout layout) -> std::optional<Layout> {
          int64_t dim = layout.dim;
          int64_t size = operandType(0).getDimSize(dim);
          int64_t start = slice.getStarts()[dim], limit = slice.getLimits()[dim];
          if (keepsWhole(slice.getStarts(), slice.getLimits(),
                         slice.getStrides(), size, dim))
            return layout;
          int64_t block = size / layout.blocks;
          if (slice.getStrides()[dim] != 1 || start % block != 0 ||
              limit % block != 0)
            return std::nullopt;
          return Layout::sharded(dim, (limit - start) / block);
        },
        /*linear=*/false);
  }

  /// slice_grad places the gradient of a slice in zeros: along a whole
  /// dimension the sharding flows; along the sliced one it does when the
  /// slice is one of equal slots (a q, k or v part of a fused projection),
  /// each slot then being as many blocks as the gradient has.
  ShardingPlan planSliceGrad(SliceGradOp grad) const {
    return planUnary([&](Layout layout) -> std::optional<Layout> {
      int64_t dim = layout.dim;
      int64_t size = operandType(0).getDimSize(dim);
      int64_t whole = grad.getInputShape()[dim];
      if (keepsWhole(grad.getStarts(), grad.getLimits(), grad.getStrides(),
                     whole, dim))
        return layout;
      if (grad.getStrides()[dim] != 1 || whole % size != 0 ||
          grad.getStarts()[dim] % size != 0)
        return std::nullopt;
      return Layout::sharded(dim, layout.blocks * (whole / size));
    });
  }

  //===--------------------------------------------------------------------===//
  // Gathers and losses
  //===--------------------------------------------------------------------===//

  ShardingPlan planGather(GatherOp gather) const {
    int64_t axis = normalizedAxis(gather.getAxis(), operandType(0).getRank());
    int64_t indexRank = operandType(1).getRank();
    Layout data = current[0], indices = current[1];
    ShardingPlan plan;
    if (data.isPartial() || (data.isSharded() && data.dim != axis)) {
      plan.operands = {data, Layout::replicated()};
      plan.results.push_back(
          data.isPartial()
              ? data
              : Layout::sharded(data.dim < axis ? data.dim
                                                : data.dim + indexRank - 1,
                                data.blocks));
      return plan;
    }
    if (data.isSharded() && data.blocks == 1) {
      plan.operands = {data, Layout::replicated()};
      plan.results.push_back(Layout::partial());
      plan.replacement = ShardingPlan::Replacement::ShardedGather;
      plan.gatherAxis = gather.getAxis();
      return plan;
    }
    if (data.isReplicated() && indices.isSharded()) {
      plan.operands = {data, indices};
      plan.results.push_back(
          Layout::sharded(axis + indices.dim, indices.blocks));
      return plan;
    }
    return replicated();
  }

  /// gather_grad scatters into a table: a parameter's gradient that wants
  /// the table's vocabulary-parallel layout gets its rows computed on the
  /// device holding them.
  ShardingPlan planGatherGrad(GatherGradOp grad) const {
    int64_t rank = resultType(0).getRank();
    int64_t axis = normalizedAxis(grad.getAxis(), rank);
    int64_t indexRank = operandType(1).getRank();
    Layout gradient = current[0], indices = current[1];
    ShardingPlan plan;
    if (gradient.isPartial() && indices.isReplicated()) {
      plan.operands = {gradient, indices};
      plan.results.push_back(gradient);
      return plan;
    }
    if (gradient.isSharded() &&
        (gradient.dim < axis || gradient.dim >= axis + indexRank)) {
      int64_t dim =
          gradient.dim < axis ? gradient.dim : gradient.dim - indexRank + 1;
      plan.operands = {gradient, Layout::replicated()};
      plan.results.push_back(Layout::sharded(dim, gradient.blocks));
      return plan;
    }
    if (gradient.isSharded() && indices.dim == gradient.dim - axis &&
        indices.isSharded() && indices.blocks == gradient.blocks) {
      plan.operands = {gradient, indices};
      plan.results.push_back(Layout::partial());
      return plan;
    }
    std::optional<Layout> wanted = hint(0);
    if (wanted && wanted->shards(axis) && wanted->blocks == 1 &&
        fits(resultType(0), *wanted)) {
      plan.operands = {Layout::replicated(), Layout::replicated()};
      plan.results.push_back(*wanted);
      plan.replacement = ShardingPlan::Replacement::ShardedGatherGrad;
      plan.gatherAxis = grad.getAxis();
      return plan;
    }
    return replicated();
  }

  /// Cross-entropy over the last (class) dimension: vocabulary-parallel
  /// for logits split over the classes (summed losses); for logits split
  /// along a position dimension, the labels follow and a summed loss is a
  /// pending sum.
  ShardingPlan planCrossEntropy(LossReduction reduction, int64_t ignoreIndex,
                                unsigned logits, bool isGrad) const {
    Layout layout = current[logits];
    RankedTensorType type = operandType(logits);
    int64_t classes = type.getRank() - 1;
    bool summed = reduction == LossReduction::sum;
    ShardingPlan plan;
    plan.operands.assign(op->getNumOperands(), Layout::replicated());
    if (layout.isSharded() && layout.dim == classes && layout.blocks == 1 &&
        summed) {
      plan.operands[logits] = layout;
      plan.results.push_back(isGrad ? layout : Layout::replicated());
      plan.replacement =
          isGrad ? ShardingPlan::Replacement::ShardedCrossEntropyGrad
                 : ShardingPlan::Replacement::ShardedCrossEntropy;
      plan.ignoreIndex = ignoreIndex;
      return plan;
    }
    if (layout.isSharded() && layout.dim < classes &&
        reduction != LossReduction::mean) {
      plan.operands[logits] = layout;
      plan.operands[logits + 1] = layout; // the labels
      if (isGrad && !summed)
        plan.operands[0] = layout; // a gradient per position
      plan.results.push_back(isGrad || !summed ? layout : Layout::partial());
      return plan;
    }
    plan.results.push_back(Layout::replicated());
    return plan;
  }

  /// Layer norm over `axis..`: a sharding of an earlier dimension flows;
  /// the scale and shift are replicated.
  ShardingPlan planLayerNorm(LayerNormOp norm) const {
    int64_t axis = normalizedAxis(norm.getAxis(), resultType(0).getRank());
    ShardingPlan plan = planNormalizedInput(current[0], axis);
    plan.operands.append(op->getNumOperands() - 1, Layout::replicated());
    return plan;
  }

  /// The input layout of a layer norm (or its gradient) and its result's.
  ShardingPlan planNormalizedInput(Layout input, int64_t axis) const {
    RankedTensorType type = resultType(0);
    if (input.isPartial())
      input = resolvedPartial(type);
    if (input.isSharded() && input.dim >= axis)
      input = Layout::replicated();
    ShardingPlan plan;
    plan.operands.push_back(input);
    plan.results.push_back(input);
    return plan;
  }

  /// The gradient of a layer norm: grad and input share the layout of the
  /// forward input; the scale and shift gradients sum over the positions,
  /// so a sharded position dimension makes them pending sums.
  ShardingPlan planLayerNormGrad(LayerNormGradOp grad) const {
    int64_t axis = normalizedAxis(grad.getAxis(), resultType(0).getRank());
    Layout input = current[1].isSharded() ? current[1] : current[0];
    ShardingPlan plan = planNormalizedInput(input, axis);
    Layout layout = plan.operands[0];
    plan.operands = {layout, layout, Layout::replicated()};
    Layout sums = layout.isSharded() ? Layout::partial() : layout;
    plan.results = {layout, sums, sums};
    return plan;
  }
};

} // namespace

ShardingPlan pp::nn::planElementwiseSharding(Operation *op,
                                             ArrayRef<TensorLayout> operands,
                                             const ShardingContext &context) {
  Rules rules(op, operands, context);
  if (!op->hasTrait<Elementwise>())
    return rules.replicated();
  return rules.planElementwise();
}

//===----------------------------------------------------------------------===//
// Elementwise ops that keep pending sums
//===----------------------------------------------------------------------===//

/// True when every operand is a pending sum: a sum, difference or negation
/// of pending sums is the pending sum of the result.
static bool allPending(ArrayRef<TensorLayout> operands) {
  return llvm::all_of(operands, [](TensorLayout l) { return l.isPartial(); });
}

bool AddOp::keepsPendingSum(ArrayRef<TensorLayout> operands) {
  return allPending(operands);
}
bool SubOp::keepsPendingSum(ArrayRef<TensorLayout> operands) {
  return allPending(operands);
}
bool NegOp::keepsPendingSum(ArrayRef<TensorLayout> operands) {
  return allPending(operands);
}

/// A product of one pending sum by replicated values.
bool MulOp::keepsPendingSum(ArrayRef<TensorLayout> operands) {
  return llvm::count_if(operands, [](TensorLayout l) { return l.isPartial(); }) ==
             1 &&
         llvm::count_if(operands, [](TensorLayout l) {
           return l.isReplicated();
         }) == static_cast<int64_t>(operands.size()) - 1;
}

/// A pending sum divided by a replicated value.
bool DivOp::keepsPendingSum(ArrayRef<TensorLayout> operands) {
  return operands[0].isPartial() && operands[1].isReplicated();
}

/// A pending sum only this cast reads, cast to a float type that represents
/// every value of its own exactly: each term converts exactly and the sum
/// happens in the wider type (a bf16 gradient cast to its f32 parameter is
/// summed in f32, where an f32 program sums it). A pending sum other ops
/// read too is summed once, before the cast, for all of them.
bool CastOp::keepsPendingSum(ArrayRef<TensorLayout> operands) {
  auto from = dyn_cast<FloatType>(getElementTypeOrSelf(getInput()));
  auto to = dyn_cast<FloatType>(getElementTypeOrSelf(getType()));
  return operands[0].isPartial() && getInput().hasOneUse() && from && to &&
         llvm::APFloat::isRepresentableBy(from.getFloatSemantics(),
                                          to.getFloatSemantics());
}

/// The terms of a sum whose result is wanted in `resultHint` (a gradient
/// summed from its contributions) want it too, unless they broadcast.
SmallVector<std::optional<TensorLayout>>
AddOp::operandHints(TensorLayout resultHint) {
  SmallVector<std::optional<TensorLayout>> hints;
  for (Value operand : getOperands())
    hints.push_back(operand.getType() == getType()
                        ? std::optional<TensorLayout>(resultHint)
                        : std::nullopt);
  return hints;
}

/// A cast's operand is wanted in its result's layout: a parameter's
/// gradient cast to the parameter's f32 type (pp-apply-precision) is
/// computed in the parameter's layout.
SmallVector<std::optional<TensorLayout>>
CastOp::operandHints(TensorLayout resultHint) {
  return {resultHint};
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

ShardingPlan MatmulOp::planSharding(ArrayRef<TensorLayout> operands,
                                    const ShardingContext &context) {
  return Rules(*this, operands, context).planMatmul(*this);
}

/// A cast maps each element on its own: it keeps its operand's layout.
ShardingPlan CastOp::planSharding(ArrayRef<TensorLayout> operands,
                                  const ShardingContext &context) {
  return Rules(*this, operands, context).planElementwise();
}

ShardingPlan TransposeOp::planSharding(ArrayRef<TensorLayout> operands,
                                       const ShardingContext &context) {
  return Rules(*this, operands, context).planTranspose(*this);
}

ShardingPlan ReshapeOp::planSharding(ArrayRef<TensorLayout> operands,
                                     const ShardingContext &context) {
  return Rules(*this, operands, context).planReshape();
}

ShardingPlan BroadcastToOp::planSharding(ArrayRef<TensorLayout> operands,
                                         const ShardingContext &context) {
  return Rules(*this, operands, context).planBroadcastTo();
}

ShardingPlan SumToOp::planSharding(ArrayRef<TensorLayout> operands,
                                   const ShardingContext &context) {
  return Rules(*this, operands, context).planSumTo();
}

ShardingPlan ReduceSumOp::planSharding(ArrayRef<TensorLayout> operands,
                                       const ShardingContext &context) {
  return Rules(*this, operands, context)
      .planReduce(getAxes(), getKeepDims(), /*sumsShards=*/true,
                  /*linear=*/true);
}

ShardingPlan ReduceMeanOp::planSharding(ArrayRef<TensorLayout> operands,
                                        const ShardingContext &context) {
  return Rules(*this, operands, context)
      .planReduce(getAxes(), getKeepDims(), /*sumsShards=*/false,
                  /*linear=*/true);
}

ShardingPlan ReduceMaxOp::planSharding(ArrayRef<TensorLayout> operands,
                                       const ShardingContext &context) {
  return Rules(*this, operands, context)
      .planReduce(getAxes(), getKeepDims(), /*sumsShards=*/false,
                  /*linear=*/false);
}

ShardingPlan ReduceSumGradOp::planSharding(ArrayRef<TensorLayout> operands,
                                           const ShardingContext &context) {
  return Rules(*this, operands, context).planReduceSumGrad(*this);
}

ShardingPlan SplitOp::planSharding(ArrayRef<TensorLayout> operands,
                                   const ShardingContext &context) {
  return Rules(*this, operands, context).planSplit(*this);
}

ShardingPlan ConcatOp::planSharding(ArrayRef<TensorLayout> operands,
                                    const ShardingContext &context) {
  return Rules(*this, operands, context).planConcat(*this);
}

ShardingPlan SliceOp::planSharding(ArrayRef<TensorLayout> operands,
                                   const ShardingContext &context) {
  return Rules(*this, operands, context).planSlice(*this);
}

ShardingPlan SliceGradOp::planSharding(ArrayRef<TensorLayout> operands,
                                       const ShardingContext &context) {
  return Rules(*this, operands, context).planSliceGrad(*this);
}

ShardingPlan GatherOp::planSharding(ArrayRef<TensorLayout> operands,
                                    const ShardingContext &context) {
  return Rules(*this, operands, context).planGather(*this);
}

ShardingPlan GatherGradOp::planSharding(ArrayRef<TensorLayout> operands,
                                        const ShardingContext &context) {
  return Rules(*this, operands, context).planGatherGrad(*this);
}

ShardingPlan CrossEntropyOp::planSharding(ArrayRef<TensorLayout> operands,
                                          const ShardingContext &context) {
  return Rules(*this, operands, context)
      .planCrossEntropy(getReduction(), getIgnoreIndex(), /*logits=*/0,
                        /*isGrad=*/false);
}

ShardingPlan CrossEntropyGradOp::planSharding(ArrayRef<TensorLayout> operands,
                                              const ShardingContext &context) {
  return Rules(*this, operands, context)
      .planCrossEntropy(getReduction(), getIgnoreIndex(), /*logits=*/1,
                        /*isGrad=*/true);
}

ShardingPlan SoftmaxOp::planSharding(ArrayRef<TensorLayout> operands,
                                     const ShardingContext &context) {
  return Rules(*this, operands, context).planAlongAxis(getAxis());
}

ShardingPlan LogSoftmaxOp::planSharding(ArrayRef<TensorLayout> operands,
                                        const ShardingContext &context) {
  return Rules(*this, operands, context).planAlongAxis(getAxis());
}

ShardingPlan SoftmaxGradOp::planSharding(ArrayRef<TensorLayout> operands,
                                         const ShardingContext &context) {
  return Rules(*this, operands, context).planAlongAxis(getAxis());
}

ShardingPlan LogSoftmaxGradOp::planSharding(ArrayRef<TensorLayout> operands,
                                            const ShardingContext &context) {
  return Rules(*this, operands, context).planAlongAxis(getAxis());
}

ShardingPlan AttentionOp::planSharding(ArrayRef<TensorLayout> operands,
                                       const ShardingContext &context) {
  return Rules(*this, operands, context).planAttention(/*firstBroadcast=*/3);
}

ShardingPlan AttentionGradOp::planSharding(ArrayRef<TensorLayout> operands,
                                           const ShardingContext &context) {
  return Rules(*this, operands, context).planAttention(/*firstBroadcast=*/4);
}

/// The triangle mixes elements only along the two trailing dimensions.
ShardingPlan TriluOp::planSharding(ArrayRef<TensorLayout> operands,
                                   const ShardingContext &context) {
  int64_t rank = getType().getRank();
  return Rules(*this, operands, context).planKeepingAxes({rank - 2, rank - 1});
}

ShardingPlan LayerNormOp::planSharding(ArrayRef<TensorLayout> operands,
                                       const ShardingContext &context) {
  return Rules(*this, operands, context).planLayerNorm(*this);
}

ShardingPlan LayerNormGradOp::planSharding(ArrayRef<TensorLayout> operands,
                                           const ShardingContext &context) {
  return Rules(*this, operands, context).planLayerNormGrad(*this);
}

//===----------------------------------------------------------------------===//
// Seeds
//===----------------------------------------------------------------------===//

/// A token embedding: a table gathered along its first axis at indices
/// computed from the inputs is vocabulary-parallel.
std::optional<ShardingSeed> GatherOp::shardingSeed() {
  if (getAxis() != 0 || getIndices().getDefiningOp<arith::ConstantOp>())
    return std::nullopt;
  return ShardingSeed{/*operand=*/0, /*dim=*/0, {1}, Value(),
                      /*vocabulary=*/true};
}

/// True when `value` reaches a cross-entropy's logits through reshapes.
static bool feedsLogits(Value value) {
  for (Operation *user : value.getUsers()) {
    if (auto loss = dyn_cast<CrossEntropyOp>(user))
      if (loss.getLogits() == value)
        return true;
    // Through reshapes, and the cast to f32 that a reduced precision puts
    // before the loss (pp-apply-precision).
    if (isa<ReshapeOp, CastOp>(user) && feedsLogits(user->getResult(0)))
      return true;
  }
  return false;
}

/// A projection by a matrix is column-parallel: its weight split along the
/// output, whole or in 2 or 3 blocks (fused gate/up or QKV projections),
/// with the other projections of its input; an LM head's output is a
/// vocabulary.
std::optional<ShardingSeed> MatmulOp::shardingSeed() {
  if (getRhs().getType().getRank() != 2)
    return std::nullopt;
  return ShardingSeed{/*operand=*/1, /*dim=*/getTransposeRhs() ? 0 : 1,
                      {1, 2, 3}, getLhs(), feedsLogits(getResult())};
}

//===----------------------------------------------------------------------===//
// Per-device shape attributes
//===----------------------------------------------------------------------===//

/// The per-device shape of result `index` of `op`.
static ArrayRef<int64_t> localShape(Operation *op, unsigned index) {
  return cast<RankedTensorType>(op->getResult(index).getType()).getShape();
}

/// `values` with entry `dim` divided by `devices`.
static SmallVector<int64_t> scaled(ArrayRef<int64_t> values, int64_t dim,
                                   int64_t devices) {
  SmallVector<int64_t> scaledValues(values);
  scaledValues[dim] /= devices;
  return scaledValues;
}

void ReshapeOp::localizeShapeAttributes(ArrayRef<TensorLayout>, int64_t) {
  setShape(localShape(*this, 0));
}

void BroadcastToOp::localizeShapeAttributes(ArrayRef<TensorLayout>, int64_t) {
  setShape(localShape(*this, 0));
}

void SumToOp::localizeShapeAttributes(ArrayRef<TensorLayout>, int64_t) {
  setShape(localShape(*this, 0));
}

void GatherGradOp::localizeShapeAttributes(ArrayRef<TensorLayout>, int64_t) {
  setDataShape(localShape(*this, 0));
}

void ReduceSumGradOp::localizeShapeAttributes(ArrayRef<TensorLayout>,
                                              int64_t) {
  setInputShape(localShape(*this, 0));
}

/// Parts split along their sharded axis have per-device sizes.
void SplitOp::localizeShapeAttributes(ArrayRef<TensorLayout> results,
                                      int64_t devices) {
  int64_t rank = cast<RankedTensorType>(getResult(0).getType()).getRank();
  if (!results[0].isSharded() ||
      results[0].dim != (static_cast<int64_t>(getAxis()) + rank) % rank)
    return;
  SmallVector<int64_t> sizes;
  for (int64_t size : getSizes())
    sizes.push_back(size / devices);
  setSizes(sizes);
}

void SliceOp::localizeShapeAttributes(ArrayRef<TensorLayout> results,
                                      int64_t devices) {
  if (!results[0].isSharded())
    return;
  setStarts(scaled(getStarts(), results[0].dim, devices));
  setLimits(scaled(getLimits(), results[0].dim, devices));
}

void SliceGradOp::localizeShapeAttributes(ArrayRef<TensorLayout> results,
                                          int64_t devices) {
  if (!results[0].isSharded())
    return;
  setInputShape(localShape(*this, 0));
  setStarts(scaled(getStarts(), results[0].dim, devices));
  setLimits(scaled(getLimits(), results[0].dim, devices));
}
