//===- Partition.cpp - pp-partition ---------------------------------------===//
//
// Balanced contiguous partitioning of the model's nodes (Alpa-style dynamic
// programming over the program order, minimizing the bottleneck stage).
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/CostModel.h"
#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace pp {
#define GEN_PASS_DEF_PARTITION
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// The stage where each of `costs.size()` nodes starts a new stage, chosen
/// to minimize the most expensive of `stages` contiguous stages.
SmallVector<size_t> balancedStageStarts(ArrayRef<double> costs,
                                        int64_t stages) {
  size_t n = costs.size();
  SmallVector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + costs[i];
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the bottleneck of the first i nodes in k stages; from[k][i]
  // the start of the last of those stages.
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> from(stages + 1,
                                        std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= stages; ++k)
    for (size_t i = k; i <= n; ++i)
      for (size_t j = k - 1; j < i; ++j) {
        double candidate = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (candidate < best[k][i]) {
          best[k][i] = candidate;
          from[k][i] = j;
        }
      }
  SmallVector<size_t> starts(stages);
  size_t end = n;
  for (int64_t k = stages; k >= 1; --k) {
    starts[k - 1] = from[k][end];
    end = starts[k - 1];
  }
  return starts;
}

struct PartitionPass : public pp::impl::PartitionBase<PartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main) || failed(partition(*main)))
      signalPassFailure();
  }

  LogicalResult partition(func::FuncOp main) {
    Block &body = main.getBody().front();
    if (main->hasAttr(kStageCostsAttrName))
      return main.emitError("the program is already partitioned");

    // The model's nodes in program order, with the cost of their forward
    // and backward ops.
    llvm::MapVector<StringAttr, OpCost> nodes;
    for (Operation &op : body.without_terminator())
      if (StringAttr node = getNode(&op); node && !isBackward(&op))
        nodes[node];
    for (Operation &op : body.without_terminator())
      if (StringAttr node = getNode(&op); node && nodes.count(node))
        nodes[node] += estimateCost(&op);
    if (nodes.empty())
      return main.emitError("the program has no model nodes to partition");

    int64_t numStages = stages;
    if (numStages == 0)
      numStages = splitPoints.empty() ? 1 : splitPoints.size() + 1;
    if (numStages < 1)
      return main.emitError("stages must be at least 1, got ") << numStages;
    if (numStages > static_cast<int64_t>(nodes.size()))
      return main.emitError("cannot split ")
             << nodes.size() << " nodes into " << numStages
             << " stages: every stage needs at least one node; use at most "
             << nodes.size() << " stages";

    SmallVector<StringAttr> order;
    SmallVector<double> costs;
    for (auto &[node, cost] : nodes) {
      order.push_back(node);
      costs.push_back(cost.seconds(kCpuFlopsPerSecond, kCpuBytesPerSecond));
    }
    FailureOr<SmallVector<size_t>> starts = stageStarts(main, order, costs,
                                                        numStages);
    if (failed(starts))
      return failure();

    llvm::DenseMap<StringAttr, int64_t> stageOfNode;
    for (size_t i = 0, stage = 0; i < order.size(); ++i) {
      while (stage + 1 < starts->size() && (*starts)[stage + 1] <= i)
        ++stage;
      stageOfNode[order[i]] = stage;
    }
    if (failed(assignStages(main, stageOfNode)))
      return failure();
    orderByStage(body);
    declareMesh(numStages);
    report(main, order, nodes, *starts);
    return success();
  }

  /// The index of the first node of each stage.
  FailureOr<SmallVector<size_t>> stageStarts(func::FuncOp main,
                                             ArrayRef<StringAttr> order,
                                             ArrayRef<double> costs,
                                             int64_t numStages) {
    if (splitPoints.empty())
      return balancedStageStarts(costs, numStages);
    if (static_cast<int64_t>(splitPoints.size()) != numStages - 1)
      return main.emitError("split-points names ")
             << splitPoints.size() << " nodes, but " << numStages
             << " stages need " << numStages - 1;
    SmallVector<size_t> starts = {0};
    for (const std::string &name : splitPoints) {
      const auto *it = llvm::find_if(
          order, [&](StringAttr node) { return node.getValue() == name; });
      if (it == order.end())
        return main.emitError("split point '")
               << name << "' is not a node of the model; nodes are: "
               << llvm::join(llvm::map_range(order,
                                             [](StringAttr node) {
                                               return node.getValue();
                                             }),
                             ", ");
      size_t index = it - order.begin();
      if (index <= starts.back())
        return main.emitError("split point '")
               << name << "' must come after the previous split point and "
               << "after the first node, in program order";
      starts.push_back(index);
    }
    return starts;
  }

  /// Sets `pp.stage` on every op and checks that each parameter lives on
  /// one stage.
  LogicalResult assignStages(func::FuncOp main,
                             llvm::DenseMap<StringAttr, int64_t> &stageOfNode) {
    Block &body = main.getBody().front();
    Builder builder(main.getContext());
    SmallVector<Operation *> unplaced;
    for (Operation &op : body.without_terminator()) {
      StringAttr node = getNode(&op);
      if (node && stageOfNode.count(node))
        op.setAttr(kStageAttrName, builder.getI64IntegerAttr(stageOfNode[node]));
      else
        unplaced.push_back(&op);
    }
    // Ops outside every node (constants) run on their first user's stage.
    for (Operation *op : llvm::reverse(unplaced)) {
      int64_t stage = 0;
      for (Operation *user : op->getUsers())
        if (std::optional<int64_t> userStage = getStage(user)) {
          stage = *userStage;
          break;
        }
      op->setAttr(kStageAttrName, builder.getI64IntegerAttr(stage));
    }
    for (BlockArgument arg : body.getArguments()) {
      if (argumentRole(main, arg.getArgNumber()) != kRoleParameter)
        continue;
      std::optional<int64_t> owner;
      for (Operation *user : arg.getUsers()) {
        if (isBackward(user))
          continue;
        std::optional<int64_t> stage = getStage(user);
        if (owner && stage != owner)
          return main.emitError("parameter '")
                 << argumentName(main, arg.getArgNumber())
                 << "' is used on stages " << std::min(*owner, *stage)
                 << " and " << std::max(*owner, *stage)
                 << "; weights shared across stages are not supported yet: "
                    "place their users on one stage with split-points";
        owner = stage;
      }
      main.setArgAttr(arg.getArgNumber(), kStageAttrName,
                      builder.getI64IntegerAttr(owner.value_or(0)));
    }
    return success();
  }

  /// Orders the ops stage by stage in schedule order: forward ops by
  /// ascending stage, then backward ops by descending stage. Data only flows
  /// forward to later stages and backward to earlier ones, so this stable
  /// order keeps every def before its uses.
  static void orderByStage(Block &body) {
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    auto key = [](Operation *op) {
      int64_t stage = *getStage(op);
      return isBackward(op) ? std::make_pair(1, -stage)
                            : std::make_pair(0, stage);
    };
    llvm::stable_sort(ops, [&](Operation *a, Operation *b) {
      return key(a) < key(b);
    });
    Operation *terminator = body.getTerminator();
    for (Operation *op : ops)
      op->moveBefore(terminator);
  }

  void declareMesh(int64_t numStages) {
    ModuleOp module = getOperation();
    if (module.lookupSymbol(kPipelineMeshName))
      return;
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    auto axis = MeshAxisAttr::get(builder.getContext(), "pp", numStages,
                                  AxisKind::pipeline);
    MeshOp::create(builder, module.getLoc(), kPipelineMeshName,
                   builder.getArrayAttr({axis}));
  }

  static void report(func::FuncOp main, ArrayRef<StringAttr> order,
                     llvm::MapVector<StringAttr, OpCost> &nodes,
                     ArrayRef<size_t> starts) {
    Builder builder(main.getContext());
    SmallVector<Attribute> summaries;
    for (size_t stage = 0; stage < starts.size(); ++stage) {
      size_t begin = starts[stage];
      size_t end = stage + 1 < starts.size() ? starts[stage + 1] : order.size();
      OpCost cost;
      for (size_t i = begin; i < end; ++i)
        cost += nodes[order[i]];
      double micros =
          1e6 * cost.seconds(kCpuFlopsPerSecond, kCpuBytesPerSecond);
      mlir::emitRemark(NameLoc::get(builder.getStringAttr("pp-partition")),
                       llvm::formatv(
          "stage {0}: nodes {1} .. {2} ({3} nodes), {4} MFLOP, {5} MB moved, "
          "estimated {6} us per microbatch",
          stage, order[begin].getValue(), order[end - 1].getValue(),
          end - begin, llvm::format("%.3f", cost.flops / 1e6),
          llvm::format("%.3f", cost.bytes / 1e6),
          llvm::format("%.2f", micros)));
      summaries.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr("first_node", order[begin]),
           builder.getNamedAttr("last_node", order[end - 1]),
           builder.getNamedAttr("flops", builder.getF64FloatAttr(cost.flops)),
           builder.getNamedAttr("bytes", builder.getF64FloatAttr(cost.bytes)),
           builder.getNamedAttr("estimated_us",
                                builder.getF64FloatAttr(micros))}));
    }
    main->setAttr(kStageCostsAttrName, builder.getArrayAttr(summaries));
  }
};

} // namespace
