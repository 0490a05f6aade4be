//===- LayoutPropagation.cpp - layouts through a pipeline program ---------===//

#include "passes/parallel/LayoutPropagation.h"
#include "passes/parallel/ShardingAttr.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPOps.h"
#include "passes/ProgramUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace pp;

namespace {

using Layout = nn::TensorLayout;
using nn::ShardingPlan;

std::string nodeOf(Operation *op) {
  if (isa<YieldOp>(op))
    return "the stage's result";
  if (StringAttr node = getNode(op))
    return "node '" + node.getValue().str() + "' (" +
           op->getName().getStringRef().str() + ")";
  return op->getName().getStringRef().str();
}

class Propagation {
public:
  Propagation(func::FuncOp main, int64_t devices, bool sequenceParallel,
              const ParameterLayouts &seeds, bool rewrite)
      : main(main), devices(devices), sequenceParallel(sequenceParallel),
        rewrite(rewrite), parameterLayouts(seeds),
        builder(main.getContext()) {
    for (BlockArgument arg : main.getArguments()) {
      StringRef role = argumentRole(main, arg.getArgNumber());
      if (role == kRoleParameter || role == kRoleFrozen) {
        parameterOf[arg] = arg.getArgNumber();
        parameterByName[argumentName(main, arg.getArgNumber())] =
            arg.getArgNumber();
      }
    }
    if (rewrite)
      for (auto [index, layout] : seeds)
        retypeParameter(index, main.getArgument(index));
  }

  /// Walks the program; fails (after an error) only when the rewrite
  /// cannot express a layout.
  LogicalResult run() {
    for (Operation &op : llvm::make_early_inc_range(main.getBody().front())) {
      if (auto stage = dyn_cast<StageOp>(op)) {
        if (failed(walkStage(stage)))
          return failure();
      } else if (auto transfer = dyn_cast<TransferOp>(op)) {
        for (auto [value, result] :
             llvm::zip(transfer.getValues(), transfer.getResults())) {
          layouts[result] = layoutOf(value);
          globals[result] = globalOf(value);
          if (rewrite)
            result.setType(value.getType());
        }
      }
    }
    if (rewrite)
      finishSignature();
    return success();
  }

private:
  func::FuncOp main;
  int64_t devices;
  bool sequenceParallel;
  bool rewrite;

public:
  /// The layout of every parameter fixed so far, by @main argument.
  ParameterLayouts parameterLayouts;
  /// All-gathers (or re-shardings) the layouts needed.
  int64_t gathers = 0;
  /// Where the first of them is, for error messages.
  std::string firstGather;
  /// Why the first of them is needed when the reason is a size the tensor
  /// axis does not divide (attention heads), else "".
  std::string sizeProblem;

private:
  OpBuilder builder;
  DenseMap<Value, Layout> layouts;
  /// Global types of values whose type the rewrite made per-device.
  DenseMap<Value, RankedTensorType> globals;
  /// Values that are a parameter (@main's argument and the stage block
  /// arguments it becomes), to the argument number.
  DenseMap<Value, unsigned> parameterOf;
  /// Copies of a parameter in another element type (convertedOperand), to
  /// the argument number: their users lay them out as the parameter.
  DenseMap<Value, unsigned> copyOf;
  /// The copies of each open parameter in the stage being walked: walked
  /// when the parameter is laid out, so that the copy's users choose the
  /// layout as they would for the parameter itself.
  llvm::MapVector<unsigned, SmallVector<Operation *>> pendingCopies;
  llvm::StringMap<unsigned> parameterByName;
  /// In a trial, pending sums that a user summed: their layout from then on.
  DenseMap<Value, Layout> resolved;
  /// Conversions made in the rewrite, by value and target layout.
  DenseMap<std::pair<Value, std::tuple<int, int64_t, int64_t>>, Value>
      conversions;

  Layout layoutOf(Value value) const {
    auto sum = resolved.find(value);
    if (sum != resolved.end())
      return sum->second;
    auto parameter = parameterOf.find(value);
    if (parameter != parameterOf.end())
      return parameterLayouts.lookup(parameter->second);
    return layouts.lookup(value);
  }
  RankedTensorType globalOf(Value value) const {
    if (RankedTensorType type = globals.lookup(value))
      return type;
    return cast<RankedTensorType>(value.getType());
  }
  /// The parameter `value` is, when its layout is not fixed yet.
  std::optional<unsigned> openParameter(Value value) const {
    std::optional<unsigned> parameter = parameterBehind(value);
    if (!parameter || parameterLayouts.count(*parameter))
      return std::nullopt;
    return parameter;
  }
  /// The parameter `value` is or copies, if any.
  std::optional<unsigned> parameterBehind(Value value) const {
    for (const DenseMap<Value, unsigned> *map : {&parameterOf, &copyOf}) {
      auto parameter = map->find(value);
      if (parameter != map->end())
        return parameter->second;
    }
    return std::nullopt;
  }

  //===--------------------------------------------------------------------===//
  // Requirements at the program's results
  //===--------------------------------------------------------------------===//

  /// The layout a stage result must leave its stage in: a parameter's
  /// gradient has its parameter's layout; the loss and model outputs are
  /// replicated; other values (activations, saved values) go as they are.
  std::optional<Layout> requirement(Value result) {
    for (OpOperand &use : result.getUses()) {
      Operation *user = use.getOwner();
      if (auto transfer = dyn_cast<TransferOp>(user)) {
        if (auto wanted = requirement(
                transfer.getResults()[use.getOperandNumber()]))
          return wanted;
        continue;
      }
      if (!isa<func::ReturnOp>(user))
        continue;
      unsigned index = use.getOperandNumber();
      auto role = main.getResultAttrOfType<StringAttr>(index, kRoleAttrName);
      if (role && role.getValue() == kRoleGradient) {
        auto name = main.getResultAttrOfType<StringAttr>(index, kNameAttrName);
        auto parameter = parameterByName.find(name ? name.getValue() : "");
        if (parameter != parameterByName.end())
          return parameterLayouts.lookup(parameter->second);
      }
      return Layout::replicated();
    }
    return std::nullopt;
  }

  /// Layouts the values of `body` should preferably get: what the stage's
  /// results require, passed back to operands by each op's rule (the terms
  /// of a gradient's sum).
  DenseMap<Value, Layout> resultHints(StageOp stage) {
    DenseMap<Value, Layout> hints;
    Block &body = stage.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [value, result] :
         llvm::zip(yield.getValues(), stage.getResults()))
      if (auto wanted = requirement(result))
        hints.try_emplace(value, *wanted);
    for (Operation &op : llvm::reverse(body)) {
      auto rule = dyn_cast<nn::ShardingRuleOpInterface>(op);
      if (!rule)
        continue;
      auto hint = hints.find(op.getResult(0));
      if (hint == hints.end())
        continue;
      for (auto [operand, wanted] :
           llvm::zip(op.getOperands(), rule.operandHints(hint->second)))
        if (wanted)
          hints.try_emplace(operand, *wanted);
    }
    return hints;
  }

  //===--------------------------------------------------------------------===//
  // The walk
  //===--------------------------------------------------------------------===//

  LogicalResult walkStage(StageOp stage) {
    Block &body = stage.getBody().front();
    for (auto [operand, arg] :
         llvm::zip(stage.getInputs(), body.getArguments())) {
      auto parameter = parameterOf.find(operand);
      if (parameter != parameterOf.end())
        parameterOf[arg] = parameter->second;
      else
        layouts[arg] = layoutOf(operand);
      globals[arg] = globalOf(operand);
      if (rewrite)
        arg.setType(operand.getType());
    }
    DenseMap<Value, Layout> hints = resultHints(stage);
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
      if (failed(walkOp(&op, hints)))
        return failure();
    // A copy that no op of the stage reads (the stage's results at most)
    // leaves its parameter replicated.
    for (unsigned parameter : llvm::to_vector(pendingCopies.keys()))
      if (failed(layOutParameter(parameter, Layout::replicated(),
                                 /*asking=*/nullptr, hints)))
        return failure();
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [index, result] : llvm::enumerate(stage.getResults())) {
      Value value = yield.getValues()[index];
      Layout layout = layoutOf(value);
      if (auto wanted = requirement(result); wanted && *wanted != layout) {
        value = convert(value, layout, *wanted, yield);
        layout = *wanted;
        if (rewrite)
          yield->setOperand(index, value);
      }
      layouts[result] = layout;
      globals[result] = globalOf(yield.getValues()[index]);
      if (rewrite)
        result.setType(value.getType());
    }
    return success();
  }

  /// Walks `op`, or defers it when it copies an open parameter.
  LogicalResult walkOp(Operation *op, const DenseMap<Value, Layout> &hints) {
    if (Value converted = convertedOperand(op)) {
      auto parameter = parameterOf.find(converted);
      if (parameter != parameterOf.end()) {
        copyOf[op->getResult(0)] = parameter->second;
        if (!parameterLayouts.count(parameter->second)) {
          pendingCopies[parameter->second].push_back(op);
          return success();
        }
      }
    }
    return planOp(op, hints);
  }

  /// Gives `op` its layouts by its rule, converting its operands as needed.
  LogicalResult planOp(Operation *op, const DenseMap<Value, Layout> &hints) {
    SmallVector<Layout> current;
    SmallVector<RankedTensorType> types;
    SmallVector<bool> parameters;
    for (Value operand : op->getOperands()) {
      current.push_back(layoutOf(operand));
      types.push_back(globalOf(operand));
      parameters.push_back(parameterBehind(operand).has_value());
    }
    SmallVector<std::optional<Layout>> resultHints;
    for (Value result : op->getResults()) {
      auto hint = hints.find(result);
      resultHints.push_back(hint == hints.end()
                                ? std::nullopt
                                : std::optional<Layout>(hint->second));
    }
    nn::ShardingContext context{devices, sequenceParallel, types, parameters,
                                resultHints};
    // An op without a rule (arith.constant, nn.dropout, a loss with no
    // sharded form) runs replicated.
    auto rule = dyn_cast<nn::ShardingRuleOpInterface>(op);
    ShardingPlan plan =
        rule ? rule.planSharding(current, context)
             : ShardingPlan::replicated(op->getNumOperands(),
                                        op->getNumResults());
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value operand = op->getOperand(i);
      Layout wanted = plan.operands[i];
      if (auto parameter = openParameter(operand)) {
        if (failed(layOutParameter(*parameter, wanted, operand, hints)))
          return failure();
        current[i] = layoutOf(operand);
      }
      if (current[i] == wanted)
        continue;
      Value converted =
          convert(operand, current[i], wanted, op, plan.sizeProblem);
      if (rewrite)
        op->setOperand(i, converted);
    }
    SmallVector<RankedTensorType> resultTypes;
    for (Value result : op->getResults())
      resultTypes.push_back(cast<RankedTensorType>(result.getType()));
    if (rewrite) {
      FailureOr<Operation *> rewritten = localize(op, plan, resultTypes);
      if (failed(rewritten))
        return failure();
      op = *rewritten;
    }
    for (auto [result, layout, type] :
         llvm::zip(op->getResults(), plan.results, resultTypes)) {
      layouts[result] = layout;
      globals[result] = type;
    }
    return success();
  }

  /// Lays the open parameter `index` out as `layout`, which `asking` (a
  /// stage argument of it, a copy of it or null) needs, and walks its
  /// pending copies.
  LogicalResult layOutParameter(unsigned index, Layout layout, Value asking,
                                const DenseMap<Value, Layout> &hints) {
    parameterLayouts[index] = layout;
    SmallVector<Operation *> copies = pendingCopies.lookup(index);
    pendingCopies.erase(index);
    if (rewrite && isa_and_nonnull<BlockArgument>(asking))
      retypeParameter(index, asking);
    for (Operation *copy : copies) {
      if (rewrite)
        retypeParameter(index, copy->getOperand(0));
      if (failed(planOp(copy, hints)))
        return failure();
    }
    return success();
  }

  /// Gives parameter `index` (now laid out) its per-device type on @main
  /// and on `value`, the stage argument that asked.
  void retypeParameter(unsigned index, Value value) {
    BlockArgument arg = main.getArgument(index);
    RankedTensorType global = globalOf(arg);
    globals[arg] = global;
    Layout layout = parameterLayouts[index];
    RankedTensorType local = localType(global, layout, devices);
    arg.setType(local);
    value.setType(local);
    if (layout.isSharded())
      main.setArgAttr(index, kShardingAttrName,
                      shardingAttr(main.getContext(), layout,
                                   global.getRank(), kTensorAxis));
  }

  //===--------------------------------------------------------------------===//
  // Collectives
  //===--------------------------------------------------------------------===//

  /// `value` (laid out as `from`) in layout `to`, converted just before
  /// `user`: the same value in a trial. `userSizeProblem` is why `user`
  /// needs the conversion when a size does not split (ShardingPlan).
  Value convert(Value value, Layout from, Layout to, Operation *user,
                StringRef userSizeProblem = "") {
    if (from.isSharded()) {
      if (gathers++ == 0) {
        firstGather = nodeOf(user) + " needs " + to.describe() +
                      " where its operand is " + from.describe();
        sizeProblem = userSizeProblem.empty()
                          ? ""
                          : nodeOf(user) + " " + userSizeProblem.str();
      }
    }
    if (!rewrite) {
      if (from.isPartial())
        resolved[value] = to;
      return value;
    }
    auto key = std::make_pair(
        value, std::make_tuple(static_cast<int>(to.kind), to.dim, to.blocks));
    if (Value done = conversions.lookup(key))
      return done;
    builder.setInsertionPoint(user);
    Location loc = user->getLoc();
    RankedTensorType global = globalOf(value);
    ArrayAttr axes = builder.getStrArrayAttr({kTensorAxis});
    SmallVector<Operation *> made;
    if (from.isPartial()) {
      if (to.isReplicated())
        made.push_back(AllReduceOp::create(builder, loc, value.getType(),
                                           kPipelineMeshName, value, axes,
                                           ReductionKind::sum));
      else
        made.push_back(ReduceScatterOp::create(
            builder, loc, localType(global, to, devices), kPipelineMeshName,
            value, axes, to.dim, to.blocks, ReductionKind::sum));
    } else {
      if (from.isSharded())
        made.push_back(AllGatherOp::create(builder, loc, global,
                                           kPipelineMeshName, value, axes,
                                           from.dim, from.blocks));
      if (to.isSharded())
        made.push_back(ShardSliceOp::create(
            builder, loc, localType(global, to, devices), kPipelineMeshName,
            made.empty() ? value : made.back()->getResult(0), axes, to.dim,
            to.blocks));
    }
    for (Operation *collective : made)
      for (StringRef name : {kNodeAttrName.data(), kStageAttrName.data()})
        if (Attribute attr = user->getAttr(name))
          collective->setAttr(name, attr);
    Value converted = made.back()->getResult(0);
    globals[converted] = global;
    conversions[key] = converted;
    // A pending sum is summed once: every later user takes the sum.
    if (from.isPartial()) {
      Operation *sum = made.back();
      value.replaceUsesWithIf(converted, [&](OpOperand &use) {
        return use.getOwner() != sum &&
               use.getOwner()->getBlock() == sum->getBlock() &&
               sum->isBeforeInBlock(use.getOwner());
      });
      layouts[converted] = to;
    }
    return converted;
  }

  //===--------------------------------------------------------------------===//
  // Per-device ops
  //===--------------------------------------------------------------------===//

  /// Rewrites `op` (its operands already per-device) to compute its
  /// device's part: per-device shape attributes and result types, or the
  /// pp op the plan names. Returns the op now computing the results.
  FailureOr<Operation *> localize(Operation *op, const ShardingPlan &plan,
                                  ArrayRef<RankedTensorType> globalResults) {
    SmallVector<Type> locals;
    for (auto [type, layout] : llvm::zip(globalResults, plan.results))
      locals.push_back(nn::localType(type, layout, devices));
    if (plan.replacement != ShardingPlan::Replacement::None)
      return replace(op, plan, locals[0]);
    for (auto [value, type] : llvm::zip(op->getResults(), locals))
      value.setType(type);
    if (auto rule = dyn_cast<nn::ShardingRuleOpInterface>(op))
      rule.localizeShapeAttributes(plan.results, devices);
    annotate(op, plan.results, globalResults);
    return op;
  }

  /// Records the layouts of `op`'s results when any is not replicated.
  void annotate(Operation *op, ArrayRef<Layout> results,
                ArrayRef<RankedTensorType> globalResults) {
    if (llvm::all_of(results, [](Layout l) { return l.isReplicated(); }))
      return;
    SmallVector<Attribute> shardings;
    for (auto [layout, type] : llvm::zip(results, globalResults))
      shardings.push_back(shardingAttr(op->getContext(), layout,
                                       type.getRank(), kTensorAxis));
    op->setAttr(kShardingAttrName, builder.getArrayAttr(shardings));
  }

  /// Replaces `op` by the pp op `plan` names, on `op`'s operands in order,
  /// whose result has the per-device type `type`.
  Operation *replace(Operation *op, const ShardingPlan &plan, Type type) {
    builder.setInsertionPoint(op);
    Location loc = op->getLoc();
    ArrayAttr axes = builder.getStrArrayAttr({kTensorAxis});
    OperandRange in = op->getOperands();
    Operation *made = nullptr;
    switch (plan.replacement) {
    case ShardingPlan::Replacement::ShardedGather:
      made = ShardedGatherOp::create(builder, loc, type, kPipelineMeshName,
                                     in[0], in[1], axes, plan.gatherAxis);
      break;
    case ShardingPlan::Replacement::ShardedGatherGrad:
      made = ShardedGatherGradOp::create(
          builder, loc, type, kPipelineMeshName, in[0], in[1], axes,
          plan.gatherAxis, cast<RankedTensorType>(type).getShape());
      break;
    case ShardingPlan::Replacement::ShardedCrossEntropy:
      made = ShardedCrossEntropyOp::create(builder, loc, type,
                                           kPipelineMeshName, in[0], in[1],
                                           axes, plan.ignoreIndex);
      break;
    case ShardingPlan::Replacement::ShardedCrossEntropyGrad:
      made = ShardedCrossEntropyGradOp::create(
          builder, loc, type, kPipelineMeshName, in[0], in[1], in[2], axes,
          plan.ignoreIndex);
      break;
    case ShardingPlan::Replacement::None:
      llvm_unreachable("nothing to replace");
    }
    made->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    op->replaceAllUsesWith(made);
    op->erase();
    return made;
  }

  /// @main's type from its (per-device) arguments and returned values.
  void finishSignature() {
    Operation *terminator = main.getBody().front().getTerminator();
    main.setType(FunctionType::get(main.getContext(),
                                   main.getBody().front().getArgumentTypes(),
                                   terminator->getOperandTypes()));
  }
};

} // namespace

Value pp::convertedOperand(Operation *op) {
  if (op->getNumOperands() != 1 || op->getNumResults() != 1)
    return {};
  auto from = dyn_cast<ShapedType>(op->getOperand(0).getType());
  auto to = dyn_cast<ShapedType>(op->getResult(0).getType());
  if (!from || !to || from.getElementType() == to.getElementType() ||
      from.getShape() != to.getShape())
    return {};
  return op->getOperand(0);
}

FailureOr<PropagationResult>
pp::propagateLayouts(func::FuncOp main, int64_t devices, bool sequenceParallel,
                     const ParameterLayouts &seeds, bool rewrite) {
  Propagation propagation(main, devices, sequenceParallel, seeds, rewrite);
  if (failed(propagation.run()))
    return failure();
  return PropagationResult{propagation.parameterLayouts, propagation.gathers,
                           propagation.firstGather, propagation.sizeProblem};
}
