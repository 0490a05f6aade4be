//===- Partition.cpp - pp-partition ---------------------------------------===//
//
// Balanced contiguous partitioning of the model's nodes (Alpa-style dynamic
// programming over the program order, minimizing the bottleneck stage).
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/CostModel.h"
#include "passes/pipeline/PartitionSolver.h"
#include "passes/pipeline/RecomputePolicy.h"
#include "passes/pipeline/Passes.h"
#include "runtime/schedules/Schedule.h"
#include "runtime/schedules/ScheduleSimulation.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>
#include <set>

namespace pp {
#define GEN_PASS_DEF_PARTITION
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// True for constants: they belong to no node and are copied into every
/// stage that uses them.
bool isConstant(Operation *op) {
  return op && op->hasTrait<OpTrait::ConstantLike>();
}

/// A result of a node that later nodes use: the index of its last user, its
/// size and the name it travels under (pp-insert-send-recv's: the node's,
/// numbered from its second such result on).
struct CrossingValue {
  size_t lastUser;
  double bytes;
  std::string name;
};

/// A value that a stage holds once when any of the nodes `users` is on it:
/// an activation kept for the backward (OutlineStages' saved values), or a
/// parameter. A value the backward recomputes has a `producer` node: a
/// stage holds it only when it receives it (the producer is on an earlier
/// stage).
struct HeldValue {
  double bytes;
  double elements;
  SmallVector<size_t> users;
  std::optional<size_t> producer = std::nullopt;

  /// Whether the stage of nodes from `begin` on makes it rather than
  /// holding it.
  bool recomputedFrom(size_t begin) const {
    return producer && *producer >= begin;
  }
};

/// A table over the stages of blocks [begin, end) (blocks numbered as the
/// boundaries between them): at(begin, end), for every begin < end.
class BlockTable {
public:
  explicit BlockTable(size_t numBlocks)
      : width(numBlocks + 1), values(width * width, 0) {}
  double &at(size_t begin, size_t end) { return values[begin * width + end]; }
  double at(size_t begin, size_t end) const {
    return values[begin * width + end];
  }

private:
  size_t width;
  std::vector<double> values;
};

/// The bytes of the `values` that the stage of blocks [begin, end) holds
/// (`boundaries` as blockBoundaries makes them; `blockOf` the block of each
/// node).
BlockTable heldBytesTable(ArrayRef<HeldValue> values,
                          ArrayRef<size_t> boundaries,
                          ArrayRef<size_t> blockOf) {
  size_t numBlocks = boundaries.size() - 1, numNodes = boundaries.back();
  BlockTable table(numBlocks);
  for (size_t begin = 0; begin < numBlocks; ++begin) {
    // A value joins the stage with its first user at or after `begin`.
    std::vector<double> joining(numBlocks + 1, 0);
    for (const HeldValue &value : values) {
      if (value.recomputedFrom(boundaries[begin]))
        continue;
      size_t first = numNodes;
      for (size_t user : value.users)
        if (user >= boundaries[begin])
          first = std::min(first, user);
      if (first < numNodes)
        joining[blockOf[first] + 1] += value.bytes;
    }
    for (size_t end = begin + 1; end <= numBlocks; ++end)
      table.at(begin, end) = table.at(begin, end - 1) + joining[end];
  }
  return table;
}

/// The model's nodes in program order with what partitioning needs.
struct NodeSequence {
  SmallVector<StringAttr> names;
  /// The forward, input-gradient and weight-gradient work of each node.
  SmallVector<OpCost> forward, backwardInput, backwardWeight;
  /// The results of each node used by later nodes.
  SmallVector<SmallVector<CrossingValue>> crossing;
  /// Forward results and graph inputs that backward ops use.
  SmallVector<HeldValue> saved;
  /// The model's parameters, and those of them that train.
  SmallVector<HeldValue> parameters, trainable;

  size_t size() const { return names.size(); }

  /// All work of nodes [begin, end).
  OpCost work(size_t begin, size_t end) const {
    OpCost cost;
    for (size_t node = begin; node < end; ++node) {
      cost += forward[node];
      cost += backwardInput[node];
      cost += backwardWeight[node];
    }
    return cost;
  }
  /// The values of `values` a stage of nodes [begin, end) holds.
  static SmallVector<const HeldValue *> heldBy(ArrayRef<HeldValue> values,
                                               size_t begin, size_t end) {
    SmallVector<const HeldValue *> held;
    for (const HeldValue &value : values)
      if (!value.recomputedFrom(begin) &&
          llvm::any_of(value.users, [&](size_t node) {
            return node >= begin && node < end;
          }))
        held.push_back(&value);
    return held;
  }
  /// The bytes of the values of `values` a stage of nodes [begin, end)
  /// holds.
  static double heldBytes(ArrayRef<HeldValue> values, size_t begin,
                          size_t end) {
    double bytes = 0;
    for (const HeldValue *value : heldBy(values, begin, end))
      bytes += value->bytes;
    return bytes;
  }
  /// The values leaving the stage of nodes [begin, end) for later stages.
  SmallVector<const CrossingValue *> sentOnward(size_t begin,
                                                size_t end) const {
    SmallVector<const CrossingValue *> sent;
    for (size_t node = begin; node < end; ++node)
      for (const CrossingValue &value : crossing[node])
        if (value.lastUser >= end)
          sent.push_back(&value);
    return sent;
  }
  double bytesSentOnward(size_t begin, size_t end) const {
    double bytes = 0;
    for (const CrossingValue *value : sentOnward(begin, end))
      bytes += value->bytes;
    return bytes;
  }
};

/// The rates that turn work and traffic into seconds.
struct Rates {
  double flops, bytes, link;

  double seconds(const OpCost &cost) const {
    return cost.seconds(flops, bytes);
  }
  /// A stage's compute plus sending its outgoing activations and receiving
  /// their gradients.
  double stageSeconds(const OpCost &work, double sentBytes) const {
    return seconds(work) + 2 * sentBytes / link;
  }
};

/// The schedule the memory estimate assumes when `schedule` is not given:
/// the one the layout runs as a rule (1f1b for a stage per rank,
/// interleaved-1f1b for several in loop placement, zb-v in V placement).
runtime::ScheduleKind usualSchedule(int64_t virtualStages,
                                    runtime::Placement placement) {
  if (placement == runtime::Placement::V)
    return runtime::ScheduleKind::ZeroBubbleV;
  return virtualStages > 1 ? runtime::ScheduleKind::Interleaved1F1B
                           : runtime::ScheduleKind::OneForwardOneBackward;
}

/// Formats a byte count for messages.
std::string formatBytes(double bytes) {
  return llvm::formatv("{0} bytes ({1} MiB)", llvm::format("%.0f", bytes),
                       llvm::format("%.1f", bytes / (1 << 20)))
      .str();
}

struct PartitionPass : public pp::impl::PartitionBase<PartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main) || failed(partition(*main)))
      signalPassFailure();
  }

  /// How the stages sit on the ranks.
  struct StageLayout {
    int64_t ranks;
    SmallVector<int64_t> stageRanks;
    /// Per stage, the microbatches whose activations it holds at once.
    SmallVector<int64_t> inFlight;
    /// The schedule they are counted under.
    std::string schedule;
    runtime::DataParallelism dataParallel;
    /// Per stage, what it holds at the points of a step where no other
    /// point holds more of everything, per byte of its parameters, of its
    /// trainable parameters (gradients and optimizer state) and of one
    /// microbatch's activations: the simulated table's stageMemory.
    SmallVector<SmallVector<runtime::HeldBytes>> heldPerByte;

    /// The most stage `stage` holds at once with `parameters` bytes of
    /// parameters, `trainable` of them trainable and `saved` bytes of
    /// activations per microbatch.
    double stageBytes(size_t stage, double parameters, double trainable,
                      double saved) const {
      double most = 0;
      for (const runtime::HeldBytes &held : heldPerByte[stage])
        most = std::max(most, parameters * held.parameters +
                                  trainable * (held.gradients +
                                               held.optimizerState) +
                                  saved * held.activations);
      return most;
    }
  };

  /// The points of `timeline` no other point exceeds in every field (the
  /// only ones where a stage can hold the most, whatever its sizes).
  static SmallVector<runtime::HeldBytes>
  peakCandidates(const std::vector<runtime::HeldBytes> &timeline) {
    auto below = [](const runtime::HeldBytes &a, const runtime::HeldBytes &b) {
      return a.parameters <= b.parameters &&
             a.gradients + a.optimizerState <=
                 b.gradients + b.optimizerState &&
             a.activations <= b.activations;
    };
    SmallVector<runtime::HeldBytes> candidates;
    for (const runtime::HeldBytes &point : timeline) {
      if (llvm::any_of(candidates, [&](const runtime::HeldBytes &kept) {
            return below(point, kept);
          }))
        continue;
      llvm::erase_if(candidates, [&](const runtime::HeldBytes &kept) {
        return below(kept, point);
      });
      candidates.push_back(point);
    }
    return candidates;
  }

  LogicalResult partition(func::FuncOp main) {
    Block &body = main.getBody().front();
    if (main->hasAttr(kStageCostsAttrName))
      return main.emitError("the program is already partitioned");
    if (failed(checkFlatProgram(main)))
      return failure();
    FailureOr<StageLayout> layout = stageLayout(main);
    if (failed(layout))
      return failure();
    Rates rates{flopRate, byteRate, linkRate};
    if (rates.flops <= 0 || rates.bytes <= 0 || rates.link <= 0)
      return main.emitError("flop-rate, byte-rate and link-rate must be "
                            "positive, got ")
             << rates.flops << ", " << rates.bytes << " and " << rates.link;

    // A program without nodes (its outputs are inputs or constants) is one
    // stage.
    FailureOr<RecomputeCandidates> candidates = recomputeCandidates(main);
    if (failed(candidates))
      return failure();
    const NodeSequence &nodes = candidates->sequences.front();

    int64_t numStages = layout->stageRanks.size();
    int64_t numNodes = nodes.size();
    if (numStages > std::max<int64_t>(numNodes, 1))
      return main.emitError("cannot split ")
             << numNodes << " nodes into " << numStages
             << " stages: every stage needs at least one node; use at most "
             << std::max<int64_t>(numNodes, 1) << " stages";

    FailureOr<SmallVector<size_t>> starts =
        stageStarts(main, *candidates, *layout, rates);
    if (failed(starts))
      return failure();
    SmallVector<size_t> choices =
        recomputeChoices(*candidates, *starts, *layout);
    ArrayRef<StringAttr> order = nodes.names;

    llvm::DenseMap<StringAttr, int64_t> stageOfNode;
    for (size_t i = 0, stage = 0; i < order.size(); ++i) {
      while (stage + 1 < starts->size() && (*starts)[stage + 1] <= i)
        ++stage;
      stageOfNode[order[i]] = stage;
    }
    assignStages(main, stageOfNode);
    if (failed(checkGradientStages(main)) || failed(checkScheduleOrder(body)))
      return failure();
    FailureOr<MeshOp> mesh = declareMesh(*layout);
    if (failed(mesh))
      return failure();
    orderByStage(body);
    formStages(main, *mesh);
    report(main, *candidates, *starts, choices, *layout, rates);
    return success();
  }

  /// The recomputation policies a stage may take, the least recomputing
  /// (fastest) first, each with the nodes as counted under it: the one
  /// `recompute` and `recompute-ops` name, or none, selective and full for
  /// `recompute=auto`.
  struct RecomputeCandidates {
    SmallVector<RecomputePolicy> policies;
    std::vector<NodeSequence> sequences;
  };

  FailureOr<RecomputeCandidates> recomputeCandidates(func::FuncOp main) {
    SmallVector<StringRef> kinds = {recompute};
    if (recompute == "auto") {
      if (!recomputeOps.empty())
        return main.emitError("recompute=auto chooses between none, "
                              "selective and full per stage; drop "
                              "recompute-ops '")
               << recomputeOps << "' or name a granularity";
      if (memoryLimit <= 0)
        return main.emitError("recompute=auto recomputes, per stage, as "
                              "little as memory-limit allows; give "
                              "memory-limit=BYTES (without a limit nothing "
                              "needs recomputing), or name a granularity");
      kinds = {"none", "selective", "full"};
    }
    RecomputeCandidates candidates;
    for (StringRef kind : kinds) {
      FailureOr<RecomputePolicy> policy =
          RecomputePolicy::parse(kind, recomputeOps, main);
      if (failed(policy))
        return failure();
      candidates.sequences.push_back(collectNodes(main, *policy));
      candidates.policies.push_back(std::move(*policy));
    }
    return candidates;
  }

  /// The bytes stage `stage` may hold: the memory limit shared evenly by
  /// the stages of its rank (0: no limit).
  double stageBudget(const StageLayout &layout, size_t stage) const {
    int64_t rank = layout.stageRanks[stage];
    return memoryLimit / llvm::count(layout.stageRanks, rank);
  }

  /// The candidate stage `stage` takes with `parameters` and `trainable`
  /// bytes and `saved(c)` bytes per microbatch under candidate c: the
  /// least recomputing one that fits its budget, else the one that
  /// recomputes most.
  size_t chooseCandidate(const StageLayout &layout, size_t stage,
                         size_t numCandidates, double parameters,
                         double trainable,
                         llvm::function_ref<double(size_t)> saved) const {
    double budget = stageBudget(layout, stage);
    for (size_t c = 0; c + 1 < numCandidates; ++c)
      if (budget <= 0 ||
          layout.stageBytes(stage, parameters, trainable, saved(c)) <= budget)
        return c;
    return numCandidates - 1;
  }

  /// The candidate each stage of the cut at `starts` takes.
  SmallVector<size_t> recomputeChoices(const RecomputeCandidates &candidates,
                                       ArrayRef<size_t> starts,
                                       const StageLayout &layout) const {
    const NodeSequence &nodes = candidates.sequences.front();
    SmallVector<size_t> choices;
    for (size_t stage = 0; stage < starts.size(); ++stage) {
      size_t begin = starts[stage];
      size_t end = stage + 1 < starts.size() ? starts[stage + 1] : nodes.size();
      choices.push_back(chooseCandidate(
          layout, stage, candidates.sequences.size(),
          NodeSequence::heldBytes(nodes.parameters, begin, end),
          NodeSequence::heldBytes(nodes.trainable, begin, end),
          [&](size_t c) {
            return NodeSequence::heldBytes(candidates.sequences[c].saved,
                                           begin, end);
          }));
    }
    return choices;
  }

  /// The ranks, the rank of each stage and its in-flight microbatches, from
  /// the options.
  FailureOr<StageLayout> stageLayout(func::FuncOp main) {
    int64_t virtual_ = virtualStages;
    if (virtual_ < 1)
      return main.emitError("virtual-stages must be at least 1, got ")
             << virtual_;
    std::optional<runtime::Placement> placed =
        runtime::parsePlacement(placement);
    if (!placed)
      return main.emitError("placement must be loop or v, got '")
             << placement << "'";
    if (*placed == runtime::Placement::V && virtual_ != 2)
      return main.emitError("placement=v puts two stages on each rank; "
                            "give virtual-stages=2, not ")
             << virtual_;
    std::optional<runtime::ScheduleKind> kind =
        schedule.empty() ? usualSchedule(virtual_, *placed)
                         : runtime::parseScheduleKind(schedule);
    if (!kind || *kind == runtime::ScheduleKind::Eval)
      return main.emitError("unknown schedule '")
             << schedule << "'; use one of gpipe, 1f1b, interleaved-1f1b, "
             << "zb-h1, zb-v";
    int64_t ranks = stages;
    if (ranks == 0) {
      int64_t cut = splitPoints.size() + 1;
      if (cut % virtual_ != 0)
        return main.emitError("split-points makes ")
               << cut << " stages, which is not " << virtual_
               << " (virtual-stages) per rank; name "
               << (cut / virtual_ + 1) * virtual_ - 1 << " split points";
      ranks = cut / virtual_;
    }
    if (ranks < 1)
      return main.emitError("stages must be at least 1, got ") << ranks;
    if (microbatches < 0)
      return main.emitError("microbatches must be positive, got ")
             << microbatches;
    if (memoryLimit < 0)
      return main.emitError("memory-limit must be positive (or 0 for no "
                            "limit), got ")
             << memoryLimit;
    int64_t perStep = microbatches ? static_cast<int64_t>(microbatches) : ranks;
    // The activations in flight are counted on the action table the
    // runtime runs (the same generator and the same count), not on a
    // formula of the compiler's own.
    runtime::PipelineLayout table;
    table.ranks = ranks;
    table.stageRanks = runtime::placeStages(ranks, virtual_, *placed);
    table.microbatches = perStep;
    std::string problem =
        runtime::scheduleProblem(*kind, table, /*splitBackward=*/true);
    if (!problem.empty())
      return main.emitError("schedule=")
             << runtime::scheduleName(*kind) << " (the schedule whose "
             << "in-flight microbatches the memory estimate counts): "
             << problem;
    // (Clamped into int: out of range stays out of range.)
    runtime::DataParallelism dp{
        dataParallel, static_cast<int>(std::clamp<int64_t>(
                          zeroLevel, -1, runtime::kMaxZeroLevel + 1))};
    if (std::string problem = runtime::dataParallelProblem(dp);
        !problem.empty())
      return main.emitError("data-parallel=")
             << static_cast<int64_t>(dataParallel)
             << " zero=" << static_cast<int64_t>(zeroLevel) << ": " << problem;
    if (optimizerState < 0)
      return main.emitError("optimizer-state must be 0 or more bytes per "
                            "trainable byte, got ")
             << optimizerState;
    runtime::MessageGraph messages = runtime::chainMessages(table.stages());
    runtime::ScheduleTable actions =
        runtime::buildSchedule(*kind, table, messages, /*splitBackward=*/true);
    if (offloadActivations)
      runtime::addOffloadActions(actions, table);
    runtime::addDataParallelActions(actions, table, dp);
    // One byte of everything per stage: what the simulated stages hold
    // is then what they hold per byte.
    runtime::StageCosts perByte =
        runtime::StageCosts::uniform(table.stages(), 1, 1, 1);
    perByte.parameterBytes.assign(table.stages(), 1);
    perByte.trainableBytes.assign(table.stages(), 1);
    perByte.optimizerStatePerByte = optimizerState;
    perByte.dataParallel = dp;
    runtime::SimulatedStep step =
        runtime::simulateSchedule(actions, table, messages, perByte);
    StageLayout layout{ranks, {}, {}, runtime::scheduleName(*kind), dp, {}};
    for (int64_t stage = 0; stage < table.stages(); ++stage) {
      int64_t rank = table.stageRanks[stage];
      layout.stageRanks.push_back(rank);
      layout.inFlight.push_back(
          runtime::inFlightMicrobatches(actions[rank], stage));
      layout.heldPerByte.push_back(peakCandidates(step.stageMemory[stage]));
    }
    return layout;
  }

  /// ", ZeRO-L over D data-parallel replicas" when there are several.
  static std::string dataParallelClause(const StageLayout &layout) {
    if (layout.dataParallel.degree < 2)
      return "";
    return ", ZeRO-" + std::to_string(layout.dataParallel.zeroLevel) +
           " over " + std::to_string(layout.dataParallel.degree) +
           " data-parallel replicas";
  }

  /// The backward ops whose results only flow into parameter gradients
  /// within their node (the weight-gradient work a zero-bubble schedule
  /// defers); a result another node's backward uses is an input gradient.
  static llvm::DenseSet<Operation *> weightGradientOps(func::FuncOp main) {
    Block &body = main.getBody().front();
    Operation *terminator = body.getTerminator();
    llvm::DenseSet<Operation *> weight;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (!isBackward(&op) || op.getNumResults() == 0)
        continue;
      bool onlyGradients = llvm::all_of(op.getUses(), [&](OpOperand &use) {
        if (use.getOwner() != terminator)
          return weight.contains(use.getOwner()) &&
                 getNode(use.getOwner()) == getNode(&op);
        DictionaryAttr attrs =
            main.getResultAttrDict(use.getOperandNumber());
        auto role = attrs ? attrs.getAs<StringAttr>(kRoleAttrName) : nullptr;
        return role && role.getValue() == kRoleGradient;
      });
      if (onlyGradients && !op.use_empty())
        weight.insert(&op);
    }
    return weight;
  }

  /// The model's nodes in program order: the forward and backward work of
  /// each (the backward's including what it recomputes under `policy`),
  /// which of its results later nodes use, what its backward saves and
  /// which parameters it uses.
  static NodeSequence collectNodes(func::FuncOp main,
                                   const RecomputePolicy &policy) {
    Block &body = main.getBody().front();
    NodeSequence nodes;
    llvm::DenseMap<StringAttr, size_t> index;
    // Constants belong to no node: upstream canonicalization hoists and
    // merges them, and each stage gets its own copy (formStages).
    for (Operation &op : body.without_terminator())
      if (StringAttr node = getNode(&op);
          node && !isBackward(&op) && !isConstant(&op) &&
          index.try_emplace(node, index.size()).second)
        nodes.names.push_back(node);
    size_t n = nodes.size();
    nodes.forward.resize(n);
    nodes.backwardInput.resize(n);
    nodes.backwardWeight.resize(n);
    nodes.crossing.resize(n);
    llvm::DenseSet<Operation *> weight = weightGradientOps(main);
    llvm::DenseSet<Operation *> recomputed = policy.recomputedOps(main);
    for (Operation &op : body.without_terminator()) {
      StringAttr node = getNode(&op);
      if (!node || !index.count(node) || isConstant(&op))
        continue;
      size_t at = index[node];
      OpCost cost = estimateCost(&op);
      if (recomputed.contains(&op))
        nodes.backwardInput[at] += cost;
      if (isBackward(&op)) {
        (weight.contains(&op) ? nodes.backwardWeight
                              : nodes.backwardInput)[at] += cost;
        continue;
      }
      nodes.forward[at] += cost;
      for (Value result : op.getResults()) {
        size_t lastUser = at;
        for (Operation *user : result.getUsers())
          if (StringAttr userNode = getNode(user);
              userNode && !isBackward(user) && index.count(userNode))
            lastUser = std::max(lastUser, index[userNode]);
        if (lastUser > at) {
          SmallVector<CrossingValue> &sent = nodes.crossing[at];
          std::string name = node.str();
          if (!sent.empty())
            name += "." + std::to_string(sent.size());
          sent.push_back({lastUser, bytesOf(result.getType()), name});
        }
        collectSaved(result, index, recomputed, nodes);
      }
    }
    for (BlockArgument arg : body.getArguments()) {
      unsigned number = arg.getArgNumber();
      if (argumentRole(main, number) == kRoleInput)
        collectSaved(arg, index, recomputed, nodes);
      if (!isModelParameter(main, number))
        continue;
      // Where assignStages places it: with its forward users, else its
      // backward ones.
      bool forwardUse = llvm::any_of(
          arg.getUsers(), [](Operation *user) { return !isBackward(user); });
      HeldValue parameter{bytesOf(arg.getType()),
                          nn::staticElementCount(arg.getType()),
                          {}};
      for (Operation *user : arg.getUsers())
        if (StringAttr node = getNode(user);
            node && index.count(node) && (!forwardUse || !isBackward(user)))
          parameter.users.push_back(index.lookup(node));
      nodes.parameters.push_back(parameter);
      if (argumentRole(main, number) == kRoleParameter)
        nodes.trainable.push_back(parameter);
    }
    return nodes;
  }

  /// Records `value` as saved when backward ops of nodes, or the forward
  /// ops they recompute, use it; one that is itself `recomputed` has its
  /// producer's node.
  static void collectSaved(Value value,
                           const llvm::DenseMap<StringAttr, size_t> &index,
                           const llvm::DenseSet<Operation *> &recomputed,
                           NodeSequence &nodes) {
    HeldValue saved{bytesOf(value.getType()),
                    nn::staticElementCount(value.getType()),
                    {}};
    if (Operation *producer = value.getDefiningOp();
        producer && recomputed.contains(producer))
      saved.producer = index.lookup(getNode(producer));
    for (Operation *user : value.getUsers())
      if (StringAttr node = getNode(user);
          node && (isBackward(user) || recomputed.contains(user)) &&
          index.count(node))
        saved.users.push_back(index.lookup(node));
    if (!saved.users.empty())
      nodes.saved.push_back(std::move(saved));
  }

  /// The index of the first node of each stage.
  FailureOr<SmallVector<size_t>>
  stageStarts(func::FuncOp main, const RecomputeCandidates &candidates,
              const StageLayout &layout, const Rates &rates) {
    ArrayRef<StringAttr> order = candidates.sequences.front().names;
    int64_t numStages = layout.stageRanks.size();
    if (order.empty())
      return SmallVector<size_t>{0};
    if (splitPoints.empty())
      return balancedStageStarts(main, candidates, layout, rates);
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

  /// The seconds of the stage of blocks [begin, end) (Rates::stageSeconds):
  /// per first block, one sweep over the later nodes keeps the bytes sent
  /// onward, adding each node's crossing results and dropping those whose
  /// last user it passes; work comes from prefix sums (of integer counts,
  /// so exact).
  static BlockTable stageSecondsTable(const NodeSequence &nodes,
                                      const Rates &rates,
                                      ArrayRef<size_t> boundaries) {
    size_t n = nodes.size(), numBlocks = boundaries.size() - 1;
    std::vector<OpCost> prefix(n + 1);
    // The producers and bytes of the results each node is the last user
    // of.
    std::vector<SmallVector<std::pair<size_t, double>>> lastUsedBy(n);
    for (size_t node = 0; node < n; ++node) {
      prefix[node + 1] = prefix[node];
      prefix[node + 1] += nodes.work(node, node + 1);
      for (const CrossingValue &value : nodes.crossing[node])
        lastUsedBy[value.lastUser].push_back({node, value.bytes});
    }
    BlockTable table(numBlocks);
    for (size_t begin = 0; begin < numBlocks; ++begin) {
      double sent = 0;
      size_t end = begin + 1;
      for (size_t node = boundaries[begin]; node < n; ++node) {
        // From the stage ending before `node` to the one ending after it.
        for (const CrossingValue &value : nodes.crossing[node])
          sent += value.bytes;
        for (auto [producer, bytes] : lastUsedBy[node])
          if (producer >= boundaries[begin])
            sent -= bytes;
        if (node + 1 != boundaries[end])
          continue;
        OpCost work = prefix[node + 1];
        work.flops -= prefix[boundaries[begin]].flops;
        work.bytes -= prefix[boundaries[begin]].bytes;
        table.at(begin, end++) = rates.stageSeconds(work, sent);
      }
    }
    return table;
  }

  /// The first node of each stage of the cut that minimizes the busiest
  /// rank's time within the memory limit (PartitionSolver), the cuts
  /// between blocks of nodes (blockBoundaries) past kMaxPartitionBlocks
  /// nodes (kMaxPartitionBlocksVirtual with virtual stages).
  FailureOr<SmallVector<size_t>>
  balancedStageStarts(func::FuncOp main,
                      const RecomputeCandidates &candidates,
                      const StageLayout &layout, const Rates &rates) {
    // The least recomputing candidate's work bounds every candidate's.
    const NodeSequence &nodes = candidates.sequences.front();
    size_t n = nodes.size();
    std::vector<double> nodeSeconds;
    for (size_t node = 0; node < n; ++node)
      nodeSeconds.push_back(rates.seconds(nodes.work(node, node + 1)));
    bool virtualStages =
        static_cast<int64_t>(layout.stageRanks.size()) > layout.ranks;
    std::vector<size_t> boundaries =
        blockBoundaries(nodeSeconds, virtualStages ? kMaxPartitionBlocksVirtual
                                                   : kMaxPartitionBlocks);
    size_t numBlocks = boundaries.size() - 1;
    std::vector<size_t> blockOf(n);
    for (size_t block = 0; block < numBlocks; ++block)
      std::fill(blockOf.begin() + boundaries[block],
                blockOf.begin() + boundaries[block + 1], block);
    SmallVector<BlockTable> seconds, saved;
    for (const NodeSequence &sequence : candidates.sequences) {
      seconds.push_back(stageSecondsTable(sequence, rates, boundaries));
      saved.push_back(heldBytesTable(sequence.saved, boundaries, blockOf));
    }
    BlockTable parameters =
        heldBytesTable(nodes.parameters, boundaries, blockOf);
    BlockTable trainable = heldBytesTable(nodes.trainable, boundaries, blockOf);
    // The candidate each stage would take.
    auto choice = [&](size_t stage, size_t begin, size_t end) {
      return chooseCandidate(layout, stage, saved.size(),
                             parameters.at(begin, end),
                             trainable.at(begin, end), [&](size_t c) {
                               return saved[c].at(begin, end);
                             });
    };

    PartitionProblem problem;
    problem.numNodes = numBlocks;
    problem.stageRanks.assign(layout.stageRanks.begin(),
                              layout.stageRanks.end());
    problem.seconds = [&](size_t stage, size_t begin, size_t end) {
      return seconds[choice(stage, begin, end)].at(begin, end);
    };
    for (size_t block = 0; block < numBlocks; ++block)
      problem.nodeSecondsLowerBound.push_back(
          rates.seconds(nodes.work(boundaries[block], boundaries[block + 1])));
    // Parameters, the gradients and optimizer state of the trainable ones,
    // and the activations of the microbatches in flight, as the simulated
    // table has the stage hold them.
    problem.bytes = [&](size_t stage, size_t begin, size_t end) {
      return layout.stageBytes(
          stage, parameters.at(begin, end), trainable.at(begin, end),
          saved[choice(stage, begin, end)].at(begin, end));
    };
    problem.memoryLimit = memoryLimit;
    if (std::optional<PartitionSolution> solution = solvePartition(problem))
      return SmallVector<size_t>(llvm::map_range(
          solution->starts, [&](size_t block) { return boundaries[block]; }));
    std::optional<PartitionSolution> smallest =
        solveSmallestPeakMemory(problem);
    double peak = *llvm::max_element(smallest->rankBytes);
    return main.emitError("no partition into ")
           << problem.stageRanks.size() << " stages on " << layout.ranks
           << " ranks fits memory-limit=" << formatBytes(memoryLimit)
           << " per rank (parameters, optimizer state, gradients and "
           << layout.inFlight.front() << " in-flight microbatches of "
           << "activations under " << layout.schedule
           << (offloadActivations ? " offloading the rest" : "")
           << dataParallelClause(layout) << recomputeClause()
           << "): the smallest achievable peak is " << formatBytes(peak)
           << ", per rank "
           << llvm::join(llvm::map_range(smallest->rankBytes,
                                         [](double bytes) {
                                           return llvm::formatv(
                                                      "{0}", llvm::format(
                                                                 "%.0f", bytes))
                                               .str();
                                         }),
                         ", ")
           << "; use more stages, a smaller microbatch or fewer "
           << "microbatches in flight"
           << (recompute == "auto" || recompute == "full"
                   ? ""
                   : ", recompute activations (recompute=auto or full)")
           << (offloadActivations || *llvm::max_element(layout.inFlight) <= 2
                   ? ""
                   : ", offload them (offload-activations=true)")
           << ", or allow at least that much memory";
  }

  /// How the activations were counted, for the memory error: ", recomputing
  /// ..." under a recompute policy, else "".
  std::string recomputeClause() const {
    if (recompute == "auto")
      return ", each stage recomputing as little as fits (recompute=auto; "
             "at most its whole forward)";
    if (recompute != "none")
      return ", recomputing under recompute=" + recompute;
    if (!recomputeOps.empty())
      return ", recomputing recompute-ops=" + recomputeOps;
    return "";
  }

  /// Sets `pp.stage` on every op and places each parameter on the stages
  /// that use it: `pp.stage` is the first of them (the owner) and, for a
  /// parameter used on several (tied weights), `pp.holder_stages` lists
  /// them all.
  void assignStages(func::FuncOp main,
               llvm::DenseMap<StringAttr, int64_t> &stageOfNode) {
    Block &body = main.getBody().front();
    Builder builder(main.getContext());
    SmallVector<Operation *> unplaced;
    for (Operation &op : body.without_terminator()) {
      StringAttr node = getNode(&op);
      if (node && stageOfNode.count(node) && !isConstant(&op))
        op.setAttr(kStageAttrName,
                   builder.getI64IntegerAttr(stageOfNode[node]));
      else
        unplaced.push_back(&op);
    }
    // Ops outside every node run on the latest stage their operands come
    // from (in their own phase). Constants are copied into every stage that
    // uses them (formStages); their stage only keeps the order below.
    for (Operation *op : unplaced) {
      int64_t stage = 0;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && !isConstant(def))
          stage = std::max(stage, getStage(def).value_or(0));
      op->setAttr(kStageAttrName, builder.getI64IntegerAttr(stage));
    }
    for (BlockArgument arg : body.getArguments()) {
      if (!isModelParameter(main, arg.getArgNumber()))
        continue;
      // A parameter lives where its forward users are, or, when only
      // backward ops use it, where they are.
      bool forwardUse = llvm::any_of(
          arg.getUsers(), [](Operation *user) { return !isBackward(user); });
      std::set<int64_t> holders;
      for (Operation *user : arg.getUsers())
        if (!forwardUse || !isBackward(user))
          holders.insert(*getStage(user));
      main.setArgAttr(
          arg.getArgNumber(), kStageAttrName,
          builder.getI64IntegerAttr(holders.empty() ? 0 : *holders.begin()));
      if (holders.size() < 2)
        continue;
      main.setArgAttr(arg.getArgNumber(), kHolderStagesAttrName,
                      builder.getDenseI64ArrayAttr(SmallVector<int64_t>(
                          holders.begin(), holders.end())));
    }
  }

  /// Every parameter gradient (or part of one: pp-autodiff returns one per
  /// node using the parameter) is computed on a stage holding the
  /// parameter, which returns it.
  static LogicalResult checkGradientStages(func::FuncOp main) {
    Block &body = main.getBody().front();
    llvm::StringMap<unsigned> parameterByName;
    for (BlockArgument arg : body.getArguments())
      if (isModelParameter(main, arg.getArgNumber()))
        parameterByName[argumentName(main, arg.getArgNumber())] =
            arg.getArgNumber();
    for (auto [index, result] :
         llvm::enumerate(body.getTerminator()->getOperands())) {
      auto role = main.getResultAttrOfType<StringAttr>(index, kRoleAttrName);
      auto name = main.getResultAttrOfType<StringAttr>(index, kNameAttrName);
      Operation *def = result.getDefiningOp();
      auto parameter = name ? parameterByName.find(name.getValue())
                            : parameterByName.end();
      if (!role || role.getValue() != kRoleGradient || !def ||
          isConstant(def) || parameter == parameterByName.end())
        continue;
      auto holders = main.getArgAttrOfType<DenseI64ArrayAttr>(
          parameter->second, kHolderStagesAttrName);
      SmallVector<int64_t> holding =
          holders ? llvm::to_vector(holders.asArrayRef())
                  : SmallVector<int64_t>{
                        getParameterStage(main, parameter->second)};
      int64_t stage = *getStage(def);
      if (llvm::is_contained(holding, stage))
        continue;
      return main.emitError("the gradient of the parameter '")
             << name.getValue() << "' is computed on stage " << stage
             << ", which does not hold it (holders: "
             << llvm::join(llvm::map_range(holding,
                                           [](int64_t h) {
                                             return std::to_string(h);
                                           }),
                           ", ")
             << "); place the node computing it with a user of the "
             << "parameter (split-points)";
    }
    return success();
  }

  /// Where an op runs in a step: forward ops by ascending stage, then
  /// backward ops by descending stage.
  static std::pair<int, int64_t> scheduleKey(Operation *op) {
    int64_t stage = *getStage(op);
    return isBackward(op) ? std::make_pair(1, -stage)
                          : std::make_pair(0, stage);
  }

  /// Every value is computed no later in the schedule than its users: a
  /// node whose ops are not contiguous in program order, or a backward value
  /// feeding a forward op, cannot be pipelined.
  static LogicalResult checkScheduleOrder(Block &body) {
    for (Operation &op : body.without_terminator())
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || isConstant(def) || scheduleKey(def) <= scheduleKey(&op))
          continue;
        auto describe = [](Operation *at) {
          std::string text;
          llvm::raw_string_ostream os(text);
          os << "'" << at->getName() << "'";
          if (StringAttr node = getNode(at))
            os << " of node '" << node.getValue() << "'";
          os << " (stage " << *getStage(at) << ", "
             << (isBackward(at) ? "backward" : "forward") << ")";
          return text;
        };
        return op.emitOpError()
               << "uses the result of " << describe(def) << ", which runs "
               << "later in the pipeline than " << describe(&op)
               << "; a node's ops must be contiguous in program order and "
               << "forward ops may not use backward values";
      }
    return success();
  }

  /// Orders the ops stage by stage in schedule order. checkScheduleOrder
  /// has made sure that this stable order keeps every def before its uses.
  static void orderByStage(Block &body) {
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    llvm::stable_sort(ops, [&](Operation *a, Operation *b) {
      return scheduleKey(a) < scheduleKey(b);
    });
    Operation *terminator = body.getTerminator();
    for (Operation *op : ops)
      op->moveBefore(terminator);
  }

  /// The pipeline mesh: declared here, or an existing one whose pipeline
  /// axis has `layout.ranks` devices; its `stage_ranks` places the stages
  /// (absent when each rank runs one stage).
  FailureOr<MeshOp> declareMesh(const StageLayout &layout) {
    ModuleOp module = getOperation();
    Builder builder(module.getContext());
    DenseI64ArrayAttr stageRanks;
    if (static_cast<int64_t>(layout.stageRanks.size()) != layout.ranks)
      stageRanks = builder.getDenseI64ArrayAttr(layout.stageRanks);
    if (auto mesh = module.lookupSymbol<MeshOp>(kPipelineMeshName)) {
      MeshAxisAttr axis = mesh.getPipelineAxis();
      if (!axis)
        return mesh.emitError("the module already declares @")
               << kPipelineMeshName << " without a pipeline axis; remove it "
               << "or give it one of " << layout.ranks << " ranks";
      if (axis.getSize() != layout.ranks)
        return mesh.emitError("the module already declares @")
               << kPipelineMeshName << " with a pipeline axis of "
               << axis.getSize() << " ranks, but the partition has "
               << layout.ranks << "; remove the mesh or partition onto "
               << axis.getSize() << " ranks (stages=" << axis.getSize()
               << ")";
      mesh.setStageRanksAttr(stageRanks);
      return mesh;
    }
    OpBuilder atStart = OpBuilder::atBlockBegin(module.getBody());
    auto axis = MeshAxisAttr::get(builder.getContext(), "pp", layout.ranks,
                                  AxisKind::pipeline);
    return MeshOp::create(atStart, module.getLoc(), kPipelineMeshName,
                          builder.getArrayAttr({axis}), stageRanks);
  }

  /// Moves the ops of each (stage, phase) into one `pp.stage` op, in
  /// schedule order. The regions are isolated from above, so membership is
  /// structural: upstream passes cannot move a value or merge a constant
  /// across stages. Values cross only as the stage ops' operands and
  /// results; constants are copied into every stage that uses them; a
  /// parameter no forward op uses enters its stage's forward, so that it
  /// stays a parameter of the package.
  void formStages(func::FuncOp main, MeshOp mesh) {
    Block &body = main.getBody().front();
    using Group = std::pair<int64_t, unsigned>; // (stage, is backward)
    llvm::MapVector<Group, SmallVector<Operation *>> groups;
    SmallVector<Operation *> constants;
    for (Operation &op : body.without_terminator()) {
      if (isConstant(&op)) {
        constants.push_back(&op);
        continue;
      }
      groups[{*getStage(&op), isBackward(&op) ? 1u : 0u}].push_back(&op);
    }
    // Parameters no forward op uses enter their stage's forward anyway, so
    // that every parameter is an argument of a forward function.
    llvm::DenseMap<int64_t, SmallVector<Value>> forwardless;
    for (BlockArgument arg : body.getArguments())
      if (isModelParameter(main, arg.getArgNumber()) &&
          llvm::all_of(arg.getUsers(), isBackward))
        forwardless[getParameterStage(main, arg.getArgNumber())].push_back(
            arg);

    // Results of the program that no op computes (a forward-only model's
    // inputs or constants it returns as outputs: Identity, Shape) pass
    // through the first stage's forward, which returns them; a program
    // without nodes is that stage alone.
    Operation *terminator = body.getTerminator();
    llvm::SetVector<Value> passed;
    for (Value result : terminator->getOperands())
      if (isa<BlockArgument>(result) || isConstant(result.getDefiningOp()))
        passed.insert(result);
    const Group passingGroup = {0, 0u};
    if (!passed.empty())
      groups[passingGroup];

    OpBuilder builder(terminator);
    for (auto &[group, ops] : groups) {
      int64_t stage = group.first;
      bool backward = group.second != 0;
      bool passing = group == passingGroup && !passed.empty();
      llvm::SetVector<Value> inputs;
      llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
      for (Operation *op : ops)
        for (Value operand : op->getOperands())
          if (!members.contains(operand.getDefiningOp()) &&
              !isConstant(operand.getDefiningOp()))
            inputs.insert(operand);
      if (!backward)
        inputs.insert(forwardless[stage].begin(), forwardless[stage].end());
      if (passing)
        for (Value value : passed)
          if (isa<BlockArgument>(value))
            inputs.insert(value);
      SmallVector<Value> outputs;
      for (Operation *op : ops)
        for (Value result : op->getResults())
          if (llvm::any_of(result.getUsers(), [&](Operation *user) {
                return !members.contains(user);
              }))
            outputs.push_back(result);
      SmallVector<Type> resultTypes = llvm::to_vector(TypeRange(outputs));
      if (passing)
        llvm::append_range(resultTypes, TypeRange(passed.getArrayRef()));

      auto stageOp = StageOp::create(
          builder, ops.empty() ? main.getLoc() : ops.front()->getLoc(),
          resultTypes,
          FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
          builder.getI64IntegerAttr(stage),
          StagePhaseAttr::get(&getContext(), backward ? StagePhase::backward
                                                      : StagePhase::forward),
          inputs.getArrayRef());
      Block *block = builder.createBlock(&stageOp.getBody());
      for (Value input : inputs)
        block->addArgument(input.getType(), input.getLoc());
      OpBuilder inner = OpBuilder::atBlockEnd(block);
      // Each constant a member uses, copied once into the stage.
      IRMapping copies;
      for (Operation *op : ops) {
        for (Value operand : op->getOperands())
          if (isConstant(operand.getDefiningOp()) &&
              !copies.contains(operand)) {
            OpBuilder::InsertionGuard guard(inner);
            inner.setInsertionPointToStart(block);
            Operation *copy = inner.clone(*operand.getDefiningOp(), copies);
            copy->removeAttr(kStageAttrName);
            copy->removeAttr(kPhaseAttrName);
          }
        op->moveBefore(block, block->end());
        op->removeAttr(kStageAttrName);
        op->removeAttr(kPhaseAttrName);
      }
      for (Operation &op : *block)
        for (OpOperand &use : op.getOpOperands())
          if (Value copy = copies.lookupOrNull(use.get()))
            use.set(copy);
      for (auto [input, arg] : llvm::zip(inputs, block->getArguments()))
        Value(input).replaceUsesWithIf(arg, [&](OpOperand &use) {
          return use.getOwner()->getBlock() == block;
        });
      inner.setInsertionPointToEnd(block);
      SmallVector<Value> yielded = outputs;
      if (passing)
        for (Value value : passed) {
          if (isa<BlockArgument>(value)) {
            yielded.push_back(
                block->getArgument(llvm::find(inputs, value) - inputs.begin()));
          } else if (Value copy = copies.lookupOrNull(value)) {
            yielded.push_back(copy);
          } else {
            Operation *constant = inner.clone(*value.getDefiningOp());
            constant->removeAttr(kStageAttrName);
            yielded.push_back(constant->getResult(0));
          }
        }
      YieldOp::create(inner, stageOp.getLoc(), yielded);
      for (auto [output, result] : llvm::zip(outputs, stageOp.getResults()))
        output.replaceUsesWithIf(result, [&](OpOperand &use) {
          return use.getOwner()->getBlock() != block;
        });
      if (passing)
        for (auto [value, result] :
             llvm::zip(passed, stageOp.getResults().drop_front(outputs.size())))
          terminator->replaceUsesOfWith(value, result);
      builder.setInsertionPointAfter(stageOp);
    }
    // Copies took the uses inside stages; one outside (a constant the
    // program returns) keeps the original.
    for (Operation *constant : constants)
      if (constant->use_empty())
        constant->erase();
      else
        constant->removeAttr(kStageAttrName);
  }

  /// Records each stage's costs in `pp.stage_costs` on @main (Passes.td
  /// lists the fields) and reports them as remarks.
  void report(func::FuncOp main, const RecomputeCandidates &candidates,
              ArrayRef<size_t> starts, ArrayRef<size_t> choices,
              const StageLayout &layout, const Rates &rates) {
    ArrayRef<StringAttr> order = candidates.sequences.front().names;
    Builder builder(main.getContext());
    auto number = [&](double value) { return builder.getF64FloatAttr(value); };
    auto micros = [&](const OpCost &cost) {
      return number(1e6 * rates.seconds(cost));
    };
    auto sum = [](ArrayRef<const HeldValue *> values, auto field) {
      double total = 0;
      for (const HeldValue *value : values)
        total += value->*field;
      return total;
    };
    SmallVector<Attribute> summaries;
    for (size_t stage = 0; stage < starts.size(); ++stage) {
      size_t begin = starts[stage];
      size_t end = stage + 1 < starts.size() ? starts[stage + 1] : order.size();
      const NodeSequence &nodes = candidates.sequences[choices[stage]];
      OpCost cost = nodes.work(begin, end), forward, input, weight;
      for (size_t i = begin; i < end; ++i) {
        forward += nodes.forward[i];
        input += nodes.backwardInput[i];
        weight += nodes.backwardWeight[i];
      }
      SmallVector<Attribute> boundary;
      double sent = 0;
      for (const CrossingValue *value : nodes.sentOnward(begin, end)) {
        sent += value->bytes;
        boundary.push_back(builder.getDictionaryAttr(
            {builder.getNamedAttr("name", builder.getStringAttr(value->name)),
             builder.getNamedAttr("bytes", number(value->bytes))}));
      }
      SmallVector<const HeldValue *> parameters =
          NodeSequence::heldBy(nodes.parameters, begin, end);
      double trainableBytes =
          NodeSequence::heldBytes(nodes.trainable, begin, end);
      double parameterBytes = sum(parameters, &HeldValue::bytes);
      double savedBytes = NodeSequence::heldBytes(nodes.saved, begin, end);
      double estimated = 1e6 * rates.stageSeconds(cost, sent);
      SmallVector<NamedAttribute> summary = {
          builder.getNamedAttr("rank",
                               builder.getI64IntegerAttr(
                                   layout.stageRanks[stage])),
          builder.getNamedAttr("flops", number(cost.flops)),
          builder.getNamedAttr("bytes", number(cost.bytes)),
          builder.getNamedAttr("sent_bytes", number(sent)),
          builder.getNamedAttr("boundary", builder.getArrayAttr(boundary)),
          builder.getNamedAttr("saved_bytes", number(savedBytes)),
          builder.getNamedAttr("in_flight", builder.getI64IntegerAttr(
                                                layout.inFlight[stage])),
          builder.getNamedAttr(
              "parameter_count",
              number(sum(parameters, &HeldValue::elements))),
          builder.getNamedAttr("parameter_bytes", number(parameterBytes)),
          builder.getNamedAttr("gradient_bytes", number(trainableBytes)),
          builder.getNamedAttr("optimizer_bytes",
                               number(optimizerState * trainableBytes)),
          builder.getNamedAttr("data_parallel",
                               builder.getI64IntegerAttr(
                                   layout.dataParallel.degree)),
          builder.getNamedAttr("zero_level",
                               builder.getI64IntegerAttr(
                                   layout.dataParallel.zeroLevel)),
          builder.getNamedAttr(
              "peak_bytes",
              number(layout.stageBytes(stage, parameterBytes, trainableBytes,
                                       savedBytes))),
          builder.getNamedAttr("estimated_us", number(estimated)),
          builder.getNamedAttr("forward_us", micros(forward)),
          builder.getNamedAttr("backward_input_us", micros(input)),
          builder.getNamedAttr("backward_weight_us", micros(weight)),
          builder.getNamedAttr("schedule",
                               builder.getStringAttr(layout.schedule)),
          builder.getNamedAttr(
              "microbatches",
              builder.getI64IntegerAttr(microbatches ? microbatches
                                                     : layout.ranks))};
      Location remarkLoc =
          FileLineColLoc::get(builder.getStringAttr("pp-partition"), 0, 0);
      if (begin == end) {
        // Only a program without nodes has an empty (single) stage.
        mlir::emitRemark(remarkLoc, "stage 0: no nodes (the outputs are "
                                    "inputs or constants)");
        summaries.push_back(builder.getDictionaryAttr(summary));
        continue;
      }
      mlir::emitRemark(
          remarkLoc,
          llvm::formatv(
              "stage {0}: nodes {1} .. {2} ({3} nodes), {4} MFLOP, {5} MB "
              "moved, {7} MB sent on, estimated {6} us per microbatch, on "
              "rank {8}",
              stage, order[begin].getValue(), order[end - 1].getValue(),
              end - begin, llvm::format("%.3f", cost.flops / 1e6),
              llvm::format("%.3f", cost.bytes / 1e6),
              llvm::format("%.2f", estimated), llvm::format("%.3f", sent / 1e6),
              layout.stageRanks[stage]));
      summary.append(
          candidates.policies[choices[stage]].stageAttributes(builder));
      summary.push_back(builder.getNamedAttr("first_node", order[begin]));
      summary.push_back(builder.getNamedAttr("last_node", order[end - 1]));
      summaries.push_back(builder.getDictionaryAttr(summary));
    }
    main->setAttr(kStageCostsAttrName, builder.getArrayAttr(summaries));
  }
};

} // namespace
