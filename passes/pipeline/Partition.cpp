//===- Partition.cpp - pp-partition ---------------------------------------===//
//
// Balanced contiguous partitioning of the model's nodes (Alpa-style dynamic
// programming over the program order, minimizing the bottleneck stage).
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/CostModel.h"
#include "passes/pipeline/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>
#include <map>
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

/// A result of a node that later nodes use: the index of its last user and
/// its size.
struct CrossingValue {
  size_t lastUser;
  double bytes;
};

/// A value a backward op takes from the forward: the activation a stage
/// keeps per microbatch in flight until its backward (OutlineStages' saved
/// values), with the nodes whose backward ops use it.
struct SavedValue {
  double bytes;
  SmallVector<size_t> backwardUsers;
};

/// The model's nodes in program order with what partitioning needs.
struct NodeSequence {
  SmallVector<StringAttr> names;
  /// Forward and backward work of each node.
  SmallVector<OpCost> work;
  /// The results of each node used by later nodes.
  SmallVector<SmallVector<CrossingValue>> crossing;
  /// Forward results and graph inputs that backward ops use.
  SmallVector<SavedValue> saved;

  /// Bytes the stage of nodes [begin, end) saves per microbatch for its
  /// backward: each value its nodes' backward ops take from the forward,
  /// once.
  double savedBytes(size_t begin, size_t end) const {
    double bytes = 0;
    for (const SavedValue &value : saved)
      if (llvm::any_of(value.backwardUsers, [&](size_t node) {
            return node >= begin && node < end;
          }))
        bytes += value.bytes;
    return bytes;
  }

  /// Bytes that leave the stage of nodes [begin, end) for later stages.
  double bytesSentOnward(size_t begin, size_t end) const {
    double bytes = 0;
    for (size_t node = begin; node < end; ++node)
      bytes += bytesSentFrom(node, end);
    return bytes;
  }
  /// Bytes of `node`'s results used at or after node `end`.
  double bytesSentFrom(size_t node, size_t end) const {
    double bytes = 0;
    for (const CrossingValue &value : crossing[node])
      if (value.lastUser >= end)
        bytes += value.bytes;
    return bytes;
  }
  /// Estimated seconds of a stage of nodes [begin, end): its compute plus
  /// sending its outgoing activations and receiving their gradients.
  double stageSeconds(double work, double sentBytes) const {
    return work + 2 * sentBytes / kLinkBytesPerSecond;
  }
};

/// The index of the first node of each of `stages` contiguous stages that
/// minimize the most expensive stage (compute plus boundary traffic).
SmallVector<size_t> balancedStageStarts(const NodeSequence &nodes,
                                        int64_t stages) {
  size_t n = nodes.names.size();
  SmallVector<double> seconds;
  for (const OpCost &work : nodes.work)
    seconds.push_back(work.seconds(kCpuFlopsPerSecond, kCpuBytesPerSecond));
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the bottleneck of the first i nodes in k stages; from[k][i]
  // the start of the last of those stages.
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> from(stages + 1,
                                        std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= stages; ++k)
    for (size_t i = k; i <= n; ++i) {
      // Grow the last stage [j, i) leftwards.
      double work = 0, sent = 0;
      for (size_t j = i; j-- > static_cast<size_t>(k - 1);) {
        work += seconds[j];
        sent += nodes.bytesSentFrom(j, i);
        double candidate =
            std::max(best[k - 1][j], nodes.stageSeconds(work, sent));
        if (candidate < best[k][i]) {
          best[k][i] = candidate;
          from[k][i] = j;
        }
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
    if (failed(checkFlatProgram(main)))
      return failure();

    // A program without nodes (its outputs are inputs or constants) is one
    // stage.
    NodeSequence nodes = collectNodes(body);

    int64_t numStages = stages;
    if (numStages == 0)
      numStages = splitPoints.empty() ? 1 : splitPoints.size() + 1;
    if (numStages < 1)
      return main.emitError("stages must be at least 1, got ") << numStages;
    int64_t numNodes = nodes.names.size();
    if (numStages > std::max<int64_t>(numNodes, 1))
      return main.emitError("cannot split ")
             << numNodes << " nodes into " << numStages
             << " stages: every stage needs at least one node; use at most "
             << std::max<int64_t>(numNodes, 1) << " stages";

    FailureOr<SmallVector<size_t>> starts = stageStarts(main, nodes, numStages);
    if (failed(starts))
      return failure();
    ArrayRef<StringAttr> order = nodes.names;

    llvm::DenseMap<StringAttr, int64_t> stageOfNode;
    for (size_t i = 0, stage = 0; i < order.size(); ++i) {
      while (stage + 1 < starts->size() && (*starts)[stage + 1] <= i)
        ++stage;
      stageOfNode[order[i]] = stage;
    }
    FailureOr<SmallVector<BlockArgument>> tied =
        assignStages(main, stageOfNode);
    if (failed(tied) || failed(splitTiedGradients(main, *tied)) ||
        failed(checkScheduleOrder(body)))
      return failure();
    FailureOr<MeshOp> mesh = declareMesh(numStages);
    if (failed(mesh))
      return failure();
    orderByStage(body);
    formStages(main, *mesh);
    report(main, nodes, *starts);
    return success();
  }

  /// The model's nodes in program order: the forward and backward work of
  /// each, and which of its results later nodes use.
  static NodeSequence collectNodes(Block &body) {
    NodeSequence nodes;
    llvm::DenseMap<StringAttr, size_t> index;
    // Constants belong to no node: upstream canonicalization hoists and
    // merges them, and each stage gets its own copy (formStages).
    for (Operation &op : body.without_terminator())
      if (StringAttr node = getNode(&op);
          node && !isBackward(&op) && !isConstant(&op) &&
          index.try_emplace(node, index.size()).second)
        nodes.names.push_back(node);
    nodes.work.resize(nodes.names.size());
    nodes.crossing.resize(nodes.names.size());
    for (Operation &op : body.without_terminator()) {
      StringAttr node = getNode(&op);
      if (!node || !index.count(node) || isConstant(&op))
        continue;
      size_t at = index[node];
      nodes.work[at] += estimateCost(&op);
      if (isBackward(&op))
        continue;
      for (Value result : op.getResults()) {
        size_t lastUser = at;
        for (Operation *user : result.getUsers())
          if (StringAttr userNode = getNode(user);
              userNode && !isBackward(user) && index.count(userNode))
            lastUser = std::max(lastUser, index[userNode]);
        if (lastUser > at)
          nodes.crossing[at].push_back({lastUser, bytesOf(result.getType())});
        collectSaved(result, index, nodes);
      }
    }
    auto main = cast<func::FuncOp>(body.getParentOp());
    for (BlockArgument arg : body.getArguments())
      if (argumentRole(main, arg.getArgNumber()) == kRoleInput)
        collectSaved(arg, index, nodes);
    return nodes;
  }

  /// Records `value` as saved when backward ops of nodes use it.
  static void collectSaved(Value value,
                           const llvm::DenseMap<StringAttr, size_t> &index,
                           NodeSequence &nodes) {
    SavedValue saved{bytesOf(value.getType()), {}};
    for (Operation *user : value.getUsers())
      if (StringAttr node = getNode(user);
          node && isBackward(user) && index.count(node))
        saved.backwardUsers.push_back(index.lookup(node));
    if (!saved.backwardUsers.empty())
      nodes.saved.push_back(std::move(saved));
  }

  /// The index of the first node of each stage.
  FailureOr<SmallVector<size_t>>
  stageStarts(func::FuncOp main, const NodeSequence &nodes, int64_t numStages) {
    ArrayRef<StringAttr> order = nodes.names;
    if (splitPoints.empty())
      return balancedStageStarts(nodes, numStages);
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

  /// Sets `pp.stage` on every op and places each parameter on the stages
  /// that use it: `pp.stage` is the first of them (the owner) and, for a
  /// parameter used on several (tied weights), `pp.holder_stages` lists
  /// them all. Returns the tied parameters.
  FailureOr<SmallVector<BlockArgument>>
  assignStages(func::FuncOp main,
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
    SmallVector<BlockArgument> tied;
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
      tied.push_back(arg);
    }
    return tied;
  }

  /// The terms of `gradient` computed on different stages: the operands of
  /// the `nn.add` tree that sums them (autodiff's accumulation), down to
  /// the values whose terms all come from one stage; `expanded` gets the
  /// adds taken apart, each before its operands' adds.
  static void collectStageTerms(Value gradient, SmallVector<Value> &terms,
                                SmallVector<Operation *> &expanded) {
    auto add = gradient.getDefiningOp<nn::AddOp>();
    if (add && isBackward(add) && add.getLhs().getType() == add.getType() &&
        add.getRhs().getType() == add.getType() && spansStages(gradient)) {
      expanded.push_back(add);
      collectStageTerms(add.getLhs(), terms, expanded);
      collectStageTerms(add.getRhs(), terms, expanded);
      return;
    }
    terms.push_back(gradient);
  }

  /// True when the tree of backward `nn.add`s computing `value` has ops on
  /// two stages.
  static bool spansStages(Value value) {
    std::set<int64_t> seen;
    SmallVector<Value> pending = {value};
    while (!pending.empty()) {
      Operation *def = pending.pop_back_val().getDefiningOp();
      if (!def || isConstant(def))
        continue;
      seen.insert(*getStage(def));
      if (isa<nn::AddOp>(def) && isBackward(def))
        llvm::append_range(pending, def->getOperands());
    }
    return seen.size() > 1;
  }

  /// Replaces the program's gradient of each tied parameter by one per
  /// holder stage, the sum of the terms computed there, so that every
  /// holder's backward returns its part and no partial gradient travels
  /// between stages; the runtime sums the parts over the holders.
  LogicalResult splitTiedGradients(func::FuncOp main,
                                   ArrayRef<BlockArgument> tied) {
    if (tied.empty())
      return success();
    auto returnOp =
        cast<func::ReturnOp>(main.getBody().front().getTerminator());
    llvm::StringMap<BlockArgument> tiedByName;
    for (BlockArgument arg : tied)
      tiedByName[argumentName(main, arg.getArgNumber())] = arg;
    SmallVector<Value> results;
    SmallVector<Attribute> resultAttrs;
    SmallVector<Operation *> expanded;
    OpBuilder builder(returnOp);
    for (auto [index, result] : llvm::enumerate(returnOp.getOperands())) {
      DictionaryAttr attrs = main.getResultAttrDict(index);
      auto role = attrs ? attrs.getAs<StringAttr>(kRoleAttrName) : nullptr;
      auto name = attrs ? attrs.getAs<StringAttr>(kNameAttrName) : nullptr;
      auto it = role && role.getValue() == kRoleGradient && name
                    ? tiedByName.find(name.getValue())
                    : tiedByName.end();
      if (it == tiedByName.end()) {
        results.push_back(result);
        resultAttrs.push_back(attrs);
        continue;
      }
      ArrayRef<int64_t> holders =
          main.getArgAttrOfType<DenseI64ArrayAttr>(it->second.getArgNumber(),
                                                   kHolderStagesAttrName)
              .asArrayRef();
      SmallVector<Value> terms;
      collectStageTerms(result, terms, expanded);
      std::map<int64_t, Value> partOf;
      for (Value term : terms) {
        int64_t stage = *getStage(term.getDefiningOp());
        if (!llvm::is_contained(holders, stage))
          return main.emitError("the gradient of the tied parameter '")
                 << name.getValue() << "' has a term computed on stage "
                 << stage << ", which does not hold it (holders: "
                 << llvm::join(llvm::map_range(
                                   holders,
                                   [](int64_t h) { return std::to_string(h); }),
                               ", ")
                 << "); place the node computing it with a user of the "
                 << "parameter (split-points)";
        auto [part, first] = partOf.try_emplace(stage, term);
        if (first)
          continue;
        auto sum =
            nn::AddOp::create(builder, term.getLoc(), part->second, term);
        sum->setAttr(kStageAttrName, builder.getI64IntegerAttr(stage));
        setBackward(sum);
        if (StringAttr node = getNode(term.getDefiningOp()))
          sum->setAttr(kNodeAttrName, node);
        part->second = sum;
      }
      for (auto &[stage, part] : partOf) {
        results.push_back(part);
        resultAttrs.push_back(attrs);
      }
    }
    func::ReturnOp::create(builder, returnOp.getLoc(), results);
    returnOp.erase();
    main.setType(FunctionType::get(main.getContext(), main.getArgumentTypes(),
                                   TypeRange(ValueRange(results))));
    main.setAllResultAttrs(resultAttrs);
    // The sums the parts replaced, each before the sums it adds up.
    for (Operation *add : expanded)
      if (add->use_empty())
        add->erase();
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
  /// axis has `numStages` devices.
  FailureOr<MeshOp> declareMesh(int64_t numStages) {
    ModuleOp module = getOperation();
    if (auto mesh = module.lookupSymbol<MeshOp>(kPipelineMeshName)) {
      MeshAxisAttr axis = mesh.getPipelineAxis();
      if (axis && axis.getSize() == numStages)
        return mesh;
      if (!axis)
        return mesh.emitError("the module already declares @")
               << kPipelineMeshName << " without a pipeline axis; remove it "
               << "or give it one of " << numStages << " stages";
      return mesh.emitError("the module already declares @")
             << kPipelineMeshName << " with a pipeline axis of "
             << axis.getSize() << ", but the partition has " << numStages
             << " stages; remove the mesh or partition into "
             << axis.getSize() << " stages";
    }
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    auto axis = MeshAxisAttr::get(builder.getContext(), "pp", numStages,
                                  AxisKind::pipeline);
    return MeshOp::create(builder, module.getLoc(), kPipelineMeshName,
                          builder.getArrayAttr({axis}));
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

  static void report(func::FuncOp main, const NodeSequence &nodes,
                     ArrayRef<size_t> starts) {
    ArrayRef<StringAttr> order = nodes.names;
    Builder builder(main.getContext());
    SmallVector<Attribute> summaries;
    for (size_t stage = 0; stage < starts.size(); ++stage) {
      size_t begin = starts[stage];
      size_t end = stage + 1 < starts.size() ? starts[stage + 1] : order.size();
      OpCost cost;
      for (size_t i = begin; i < end; ++i)
        cost += nodes.work[i];
      double sent = nodes.bytesSentOnward(begin, end);
      double micros =
          1e6 * nodes.stageSeconds(
                    cost.seconds(kCpuFlopsPerSecond, kCpuBytesPerSecond), sent);
      Location remarkLoc =
          FileLineColLoc::get(builder.getStringAttr("pp-partition"), 0, 0);
      SmallVector<NamedAttribute> summary = {
          builder.getNamedAttr("flops", builder.getF64FloatAttr(cost.flops)),
          builder.getNamedAttr("bytes", builder.getF64FloatAttr(cost.bytes)),
          builder.getNamedAttr("sent_bytes", builder.getF64FloatAttr(sent)),
          builder.getNamedAttr(
              "saved_bytes",
              builder.getF64FloatAttr(nodes.savedBytes(begin, end))),
          builder.getNamedAttr("estimated_us",
                               builder.getF64FloatAttr(micros))};
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
              "moved, "
              "{7} MB sent on, estimated {6} us per microbatch",
              stage, order[begin].getValue(), order[end - 1].getValue(),
              end - begin, llvm::format("%.3f", cost.flops / 1e6),
              llvm::format("%.3f", cost.bytes / 1e6),
              llvm::format("%.2f", micros), llvm::format("%.3f", sent / 1e6)));
      summary.push_back(builder.getNamedAttr("first_node", order[begin]));
      summary.push_back(builder.getNamedAttr("last_node", order[end - 1]));
      summaries.push_back(builder.getDictionaryAttr(summary));
    }
    main->setAttr(kStageCostsAttrName, builder.getArrayAttr(summaries));
  }
};

} // namespace
