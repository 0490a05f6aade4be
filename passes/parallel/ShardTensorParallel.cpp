//===- ShardTensorParallel.cpp - pp-shard-tensor-parallel -----------------===//
//
// Splits the pipeline program's stages over a tensor axis: seeds
// parameter shardings (column-parallel projections, vocabulary-parallel
// embeddings and LM heads, kept only when they need no more all-gathers),
// propagates layouts through every op by its sharding rule, inserts the
// collectives where a user needs another layout than its producer gives,
// and rewrites the program to per-device types.
//
//===----------------------------------------------------------------------===//

#include "passes/parallel/Passes.h"
#include "passes/parallel/ShardingRules.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPOps.h"
#include "passes/ProgramUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pp-shard-tensor-parallel"

namespace pp {
#define GEN_PASS_DEF_SHARDTENSORPARALLEL
#include "passes/parallel/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// The tensor axis the pass adds to the pipeline mesh.
constexpr llvm::StringLiteral kTensorAxis = "tp";

using Layout = TensorLayout;
using LayoutMap = llvm::DenseMap<unsigned, Layout>;

std::string nodeOf(Operation *op) {
  if (isa<YieldOp>(op))
    return "the stage's result";
  if (StringAttr node = getNode(op))
    return "node '" + node.getValue().str() + "' (" +
           op->getName().getStringRef().str() + ")";
  return op->getName().getStringRef().str();
}

/// One walk over the program that gives every value a layout. A trial
/// (`rewrite` false) only counts the all-gathers the layouts need; the
/// final walk rewrites the program.
class Propagation {
public:
  Propagation(func::FuncOp main, int64_t devices, bool sequenceParallel,
              const LayoutMap &seeds, bool rewrite)
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
  LayoutMap parameterLayouts;
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
    auto parameter = parameterOf.find(value);
    if (parameter == parameterOf.end() ||
        parameterLayouts.count(parameter->second))
      return std::nullopt;
    return parameter->second;
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
  /// results require, passed back through sums (the terms of a gradient).
  DenseMap<Value, Layout> resultHints(StageOp stage) {
    DenseMap<Value, Layout> hints;
    Block &body = stage.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [value, result] :
         llvm::zip(yield.getValues(), stage.getResults()))
      if (auto wanted = requirement(result))
        hints.try_emplace(value, *wanted);
    for (Operation &op : llvm::reverse(body)) {
      if (!isa<nn::AddOp>(op))
        continue;
      auto hint = hints.find(op.getResult(0));
      if (hint == hints.end())
        continue;
      Layout wanted = hint->second;
      for (Value operand : op.getOperands())
        if (operand.getType() == op.getResult(0).getType())
          hints.try_emplace(operand, wanted);
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

  LogicalResult walkOp(Operation *op, const DenseMap<Value, Layout> &hints) {
    SmallVector<Layout> current;
    SmallVector<RankedTensorType> types;
    SmallVector<bool> parameters;
    for (Value operand : op->getOperands()) {
      current.push_back(layoutOf(operand));
      types.push_back(globalOf(operand));
      parameters.push_back(parameterOf.count(operand));
    }
    SmallVector<std::optional<Layout>> resultHints;
    for (Value result : op->getResults()) {
      auto hint = hints.find(result);
      resultHints.push_back(hint == hints.end()
                                ? std::nullopt
                                : std::optional<Layout>(hint->second));
    }
    ShardingContext context{devices, sequenceParallel, types, parameters,
                            resultHints};
    ShardingPlan plan = planSharding(op, current, context);
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value operand = op->getOperand(i);
      Layout wanted = plan.operands[i];
      if (auto parameter = openParameter(operand)) {
        parameterLayouts[*parameter] = wanted;
        if (rewrite)
          retypeParameter(*parameter, operand);
        continue;
      }
      if (current[i] == wanted)
        continue;
      Value converted = convert(operand, current[i], wanted, op);
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

  /// When `user` is a reshape that cannot keep `value`'s sharding `from`
  /// because the devices do not divide the dimension that receives the
  /// major part of the sharded one (a hidden dimension split into attention
  /// heads), says so.
  std::string reshapeSizeProblem(Operation *user, Value value, Layout from) {
    auto reshape = dyn_cast<nn::ReshapeOp>(user);
    if (!reshape)
      return "";
    ArrayRef<int64_t> in = globalOf(value).getShape();
    ArrayRef<int64_t> out =
        cast<RankedTensorType>(reshape.getType()).getShape();
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
      if (out[d] % devices == 0)
        return "";
      std::string text;
      llvm::raw_string_ostream os(text);
      os << nodeOf(user) << " splits dimension " << from.dim << " (size "
         << in[from.dim] << ") into dimension " << d << " of [";
      llvm::interleaveComma(out, os);
      os << "], whose " << out[d]
         << " entries (attention heads) do not split over " << devices
         << " devices";
      return text;
    }
    return "";
  }

  //===--------------------------------------------------------------------===//
  // Collectives
  //===--------------------------------------------------------------------===//

  /// `value` (laid out as `from`) in layout `to`, converted just before
  /// `user`: the same value in a trial.
  Value convert(Value value, Layout from, Layout to, Operation *user) {
    if (from.isSharded()) {
      if (gathers++ == 0) {
        firstGather = nodeOf(user) + " needs " + to.describe() +
                      " where its operand is " + from.describe();
        sizeProblem = reshapeSizeProblem(user, value, from);
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
      locals.push_back(localType(type, layout, devices));
    if (plan.replacement != ShardingPlan::Replacement::None)
      return replace(op, plan.replacement, locals);
    auto local = [&](unsigned i) {
      return cast<RankedTensorType>(locals[i]).getShape();
    };
    Layout result = plan.results.empty() ? Layout() : plan.results[0];
    auto scaled = [&](ArrayRef<int64_t> values, int64_t dim) {
      SmallVector<int64_t> scaledValues(values);
      scaledValues[dim] /= devices;
      return scaledValues;
    };
    if (auto reshape = dyn_cast<nn::ReshapeOp>(op))
      reshape.setShape(local(0));
    else if (auto broadcast = dyn_cast<nn::BroadcastToOp>(op))
      broadcast.setShape(local(0));
    else if (auto sumTo = dyn_cast<nn::SumToOp>(op))
      sumTo.setShape(local(0));
    else if (auto grad = dyn_cast<nn::GatherGradOp>(op))
      grad.setDataShape(local(0));
    else if (auto grad = dyn_cast<nn::ReduceSumGradOp>(op))
      grad.setInputShape(local(0));
    else if (auto split = dyn_cast<nn::SplitOp>(op);
             split && result.isSharded() &&
             result.dim ==
                 (static_cast<int64_t>(split.getAxis()) +
                  globalResults[0].getRank()) %
                     globalResults[0].getRank()) {
      SmallVector<int64_t> sizes;
      for (int64_t size : split.getSizes())
        sizes.push_back(size / devices);
      split.setSizes(sizes);
    } else if (auto slice = dyn_cast<nn::SliceOp>(op); slice &&
                                                       result.isSharded()) {
      slice.setLimits(scaled(slice.getLimits(), result.dim));
    } else if (auto grad = dyn_cast<nn::SliceGradOp>(op);
               grad && result.isSharded()) {
      grad.setInputShape(local(0));
      grad.setStarts(scaled(grad.getStarts(), result.dim));
      grad.setLimits(scaled(grad.getLimits(), result.dim));
    }
    for (auto [value, type] : llvm::zip(op->getResults(), locals))
      value.setType(type);
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

  Operation *replace(Operation *op, ShardingPlan::Replacement kind,
                     ArrayRef<Type> locals) {
    builder.setInsertionPoint(op);
    Location loc = op->getLoc();
    ArrayAttr axes = builder.getStrArrayAttr({kTensorAxis});
    Type type = locals[0];
    Operation *made = nullptr;
    switch (kind) {
    case ShardingPlan::Replacement::ShardedGather: {
      auto gather = cast<nn::GatherOp>(op);
      made = ShardedGatherOp::create(builder, loc, type, kPipelineMeshName,
                                     gather.getData(), gather.getIndices(),
                                     axes, gather.getAxis());
      break;
    }
    case ShardingPlan::Replacement::ShardedGatherGrad: {
      auto grad = cast<nn::GatherGradOp>(op);
      made = ShardedGatherGradOp::create(
          builder, loc, type, kPipelineMeshName, grad.getGrad(),
          grad.getIndices(), axes, grad.getAxis(),
          cast<RankedTensorType>(type).getShape());
      break;
    }
    case ShardingPlan::Replacement::ShardedCrossEntropy: {
      auto loss = cast<nn::CrossEntropyOp>(op);
      made = ShardedCrossEntropyOp::create(
          builder, loc, type, kPipelineMeshName, loss.getLogits(),
          loss.getLabels(), axes, loss.getIgnoreIndex());
      break;
    }
    case ShardingPlan::Replacement::ShardedCrossEntropyGrad: {
      auto grad = cast<nn::CrossEntropyGradOp>(op);
      made = ShardedCrossEntropyGradOp::create(
          builder, loc, type, kPipelineMeshName, grad.getGrad(),
          grad.getLogits(), grad.getLabels(), axes, grad.getIgnoreIndex());
      break;
    }
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

struct ShardTensorParallelPass
    : public pp::impl::ShardTensorParallelBase<ShardTensorParallelPass> {
  using ShardTensorParallelBase::ShardTensorParallelBase;

  void runOnOperation() override {
    if (tp == 1)
      return;
    ModuleOp module = getOperation();
    if (tp < 1) {
      module.emitError() << "pp-shard-tensor-parallel: tp=" << tp.getValue()
                         << " devices; give tp >= 1";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> program = getProgram(module);
    if (failed(program))
      return signalPassFailure();
    main = *program;
    auto mesh = module.lookupSymbol<MeshOp>(kPipelineMeshName);
    if (!mesh || main.getBody().front().getOps<StageOp>().empty()) {
      module.emitError("pp-shard-tensor-parallel: the program has no "
                       "pipeline stages; run pp-partition and "
                       "pp-insert-send-recv first (or use --pp-compile)");
      return signalPassFailure();
    }
    if (mesh.lookupAxis(kTensorAxis)) {
      mesh.emitError() << "pp-shard-tensor-parallel: the mesh already has an "
                          "axis \"" << kTensorAxis << "\"";
      return signalPassFailure();
    }
    LayoutMap seeds;
    if (failed(checkSequenceLength()) || failed(handShardings(seeds)) ||
        failed(chooseSeeds(seeds)))
      return signalPassFailure();
    Propagation final(main, tp, sequenceParallel, seeds, /*rewrite=*/true);
    if (failed(final.run()))
      return signalPassFailure();
    SmallVector<Attribute> axes(mesh.getAxes().begin(), mesh.getAxes().end());
    axes.push_back(
        MeshAxisAttr::get(&getContext(), kTensorAxis, tp, AxisKind::tensor));
    mesh.setAxesAttr(ArrayAttr::get(&getContext(), axes));
    updateSavedBytes();
    reportParameters(final.parameterLayouts);
  }

private:
  func::FuncOp main;

  /// Under sequence parallelism, the sequence (dimension 1 of every input
  /// of rank 2 or more) must split over the tensor axis.
  LogicalResult checkSequenceLength() {
    if (!sequenceParallel)
      return success();
    for (BlockArgument arg : main.getArguments()) {
      if (argumentRole(main, arg.getArgNumber()) != kRoleInput)
        continue;
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() < 2 || type.getDimSize(1) % tp == 0)
        continue;
      int64_t length = type.getDimSize(1);
      int64_t padded = (length + tp - 1) / tp * tp;
      return main.emitError()
             << "pp-shard-tensor-parallel: sequence parallelism (sp=true) "
                "splits the sequence over tp = "
             << tp.getValue() << " devices, but input '"
             << argumentName(main, arg.getArgNumber())
             << "' has sequence length " << length << " (dimension 1), which "
             << tp.getValue() << " does not divide; pad the sequence to "
             << padded
             << " with pp-run --pad-sequence (or compile for a padded length "
                "and pad the data), or use a tp that divides "
             << length << ", or drop sp";
    }
    return success();
  }

  /// `shard=NAME=DIM` seeds.
  LogicalResult handShardings(LayoutMap &seeds) {
    for (const std::string &entry : shard) {
      StringRef text = entry;
      auto [name, dimText] = text.rsplit('=');
      int64_t dim = 0;
      if (dimText.empty() || name.empty() || dimText.getAsInteger(10, dim))
        return main.emitError()
               << "pp-shard-tensor-parallel: shard=" << entry
               << " is not NAME=DIM (a parameter name and a dimension)";
      std::optional<unsigned> index;
      for (BlockArgument arg : main.getArguments())
        if (argumentName(main, arg.getArgNumber()) == name &&
            (argumentRole(main, arg.getArgNumber()) == kRoleParameter ||
             argumentRole(main, arg.getArgNumber()) == kRoleFrozen))
          index = arg.getArgNumber();
      if (!index)
        return main.emitError()
               << "pp-shard-tensor-parallel: shard=" << entry
               << ": the model has no parameter named '" << name
               << "' (pp-opt --pp-compile=... --mlir-print-ir-after-all "
                  "lists them)";
      auto type = cast<RankedTensorType>(main.getArgument(*index).getType());
      Layout layout = Layout::sharded(dim);
      if (dim < 0 || dim >= type.getRank())
        return main.emitError()
               << "pp-shard-tensor-parallel: shard=" << entry
               << ": parameter '" << name << "' of type " << type
               << " has no dimension " << dim;
      if (!layoutFits(type, layout, tp))
        return main.emitError()
               << "pp-shard-tensor-parallel: shard=" << entry
               << ": dimension " << dim << " of parameter '" << name << "' ("
               << type << ") has size " << type.getDimSize(dim)
               << ", which tp = " << tp.getValue()
               << " does not divide; shard another dimension or use a tp "
                  "that divides it";
      seeds[*index] = layout;
    }
    return success();
  }

  /// A candidate seed: parameters sharded together (the projections of one
  /// input: q, k and v, or a gated MLP's gate and up projections), each
  /// along its output dimension, in one of `blockCounts` block counts.
  struct Candidate {
    /// (@main argument, dimension) of each parameter.
    SmallVector<std::pair<unsigned, int64_t>> members;
    SmallVector<int64_t> blockCounts;
    /// A token embedding or an LM head: its dimension is the vocabulary.
    bool vocabulary = false;

    /// `seeds` with every member laid out in `blocks` blocks.
    LayoutMap seeded(const LayoutMap &seeds, int64_t blocks) const {
      LayoutMap tried = seeds;
      for (auto [parameter, dim] : members)
        tried[parameter] = Layout::sharded(dim, blocks);
      return tried;
    }
  };

  /// True when `value` reaches a cross-entropy's logits through reshapes.
  static bool feedsLogits(Value value) {
    for (Operation *user : value.getUsers()) {
      if (auto loss = dyn_cast<nn::CrossEntropyOp>(user))
        if (loss.getLogits() == value)
          return true;
      if (isa<nn::ReshapeOp>(user) && feedsLogits(user->getResult(0)))
        return true;
    }
    return false;
  }

  /// The parameter `value` (a stage block argument) is, if any.
  std::optional<unsigned> parameterArgument(StageOp stage, Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner() != &stage.getBody().front())
      return std::nullopt;
    auto outer = dyn_cast<BlockArgument>(stage.getInputs()[arg.getArgNumber()]);
    if (!outer || outer.getOwner() != &main.getBody().front() ||
        !isModelParameter(main, outer.getArgNumber()) ||
        argumentRole(main, outer.getArgNumber()) == kRoleConstant)
      return std::nullopt;
    return outer.getArgNumber();
  }

  /// Token embeddings and column-parallel projections (grouped by their
  /// input) of the forward stages, in program order, each parameter once.
  SmallVector<Candidate> candidates(const LayoutMap &fixed) {
    SmallVector<Candidate> found;
    llvm::DenseSet<unsigned> seen;
    DenseMap<Value, size_t> byInput;
    for (auto [index, layout] : fixed)
      seen.insert(index);
    for (StageOp stage : main.getBody().front().getOps<StageOp>()) {
      if (stage.getPhase() != StagePhase::forward)
        continue;
      stage.getBody().walk([&](Operation *op) {
        if (auto gather = dyn_cast<nn::GatherOp>(op)) {
          auto parameter = parameterArgument(stage, gather.getData());
          if (parameter && gather.getAxis() == 0 &&
              !gather.getIndices().getDefiningOp<arith::ConstantOp>() &&
              seen.insert(*parameter).second)
            found.push_back({{{*parameter, 0}}, {1}, true});
          return;
        }
        auto matmul = dyn_cast<nn::MatmulOp>(op);
        if (!matmul || parameterArgument(stage, matmul.getLhs()))
          return;
        auto parameter = parameterArgument(stage, matmul.getRhs());
        if (!parameter || matmul.getRhs().getType().getRank() != 2 ||
            !seen.insert(*parameter).second)
          return;
        std::pair<unsigned, int64_t> member = {
            *parameter, matmul.getTransposeRhs() ? 0 : 1};
        auto group = byInput.find(matmul.getLhs());
        if (group != byInput.end()) {
          found[group->second].members.push_back(member);
          return;
        }
        byInput[matmul.getLhs()] = found.size();
        found.push_back(
            {{member}, {1, 2, 3}, feedsLogits(matmul.getResult())});
      });
    }
    return found;
  }

  /// All-gathers a propagation with `seeds` needs on `devices` devices,
  /// without sequence parallelism (whose all-gathers before each
  /// column-parallel block are its design, not a sign of a bad seed).
  Propagation trial(const LayoutMap &seeds, int64_t devices) {
    Propagation propagation(main, devices, /*sequenceParallel=*/false, seeds,
                            /*rewrite=*/false);
    (void)propagation.run();
    LLVM_DEBUG({
      llvm::dbgs() << "trial on " << devices << " devices, seeds:";
      for (auto [index, layout] : seeds)
        llvm::dbgs() << " " << argumentName(main, index) << "="
                     << layout.describe();
      llvm::dbgs() << ": " << propagation.gathers << " all-gathers "
                   << propagation.firstGather << "\n";
    });
    return propagation;
  }

  /// Keeps each candidate whose sharding needs no more all-gathers than
  /// the program without it. A vocabulary (token embedding, LM head) or
  /// attention heads that the tensor axis does not divide are errors.
  LogicalResult chooseSeeds(LayoutMap &seeds) {
    int64_t baseline = trial(seeds, tp).gathers;
    for (const Candidate &candidate : candidates(seeds)) {
      auto typeOf = [&](unsigned parameter) {
        return cast<RankedTensorType>(main.getArgument(parameter).getType());
      };
      auto fitsAll = [&](int64_t blocks) {
        return llvm::all_of(candidate.members, [&](auto member) {
          return layoutFits(typeOf(member.first),
                            Layout::sharded(member.second, blocks), tp);
        });
      };
      auto [first, dim] = candidate.members.front();
      StringRef name = argumentName(main, first);
      if (candidate.vocabulary && !fitsAll(1)) {
        int64_t size = typeOf(first).getDimSize(dim);
        return main.emitError()
               << "pp-shard-tensor-parallel: the vocabulary (" << size
               << " entries along dimension " << dim << " of parameter '"
               << name << "', " << typeOf(first)
               << ") does not split over tp = " << tp.getValue()
               << " devices; pad the vocabulary to "
               << (size + tp - 1) / tp * tp << " (a multiple of "
               << tp.getValue() << ") or use a tp that divides " << size;
      }
      std::string sizeProblem;
      for (int64_t blocks : candidate.blockCounts) {
        if (!fitsAll(blocks))
          continue;
        LayoutMap tried = candidate.seeded(seeds, blocks);
        Propagation result = trial(tried, tp);
        if (result.gathers <= baseline) {
          seeds = tried;
          baseline = result.gathers;
          sizeProblem.clear();
          break;
        }
        if (sizeProblem.empty())
          sizeProblem = result.sizeProblem;
      }
      if (!sizeProblem.empty())
        return main.emitError()
               << "pp-shard-tensor-parallel: parameter '" << name << "' ("
               << typeOf(first) << ") would be column-parallel, but "
               << sizeProblem
               << "; use a tp that divides the number of attention heads";
    }
    return success();
  }

  /// Recounts each stage's `saved_bytes` in `pp.stage_costs` (what its
  /// backward takes from its forward per microbatch: forward results,
  /// values received in the forward, graph inputs) at the per-device sizes,
  /// for the runtime's activation-memory estimate.
  void updateSavedBytes() {
    auto costs = main->getAttrOfType<ArrayAttr>(kStageCostsAttrName);
    if (!costs)
      return;
    SmallVector<Attribute> updated(costs.begin(), costs.end());
    for (StageOp stage : main.getBody().front().getOps<StageOp>()) {
      int64_t index = stage.getStage();
      if (stage.getPhase() != StagePhase::backward ||
          index >= static_cast<int64_t>(updated.size()))
        continue;
      double bytes = 0;
      llvm::DenseSet<Value> counted;
      for (Value operand : stage.getInputs()) {
        if (!isSavedFromForward(operand, index) ||
            !counted.insert(operand).second)
          continue;
        auto type = cast<RankedTensorType>(operand.getType());
        bytes += static_cast<double>(type.getNumElements()) *
                 std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
      }
      NamedAttrList entry(cast<DictionaryAttr>(updated[index]));
      entry.set("saved_bytes", FloatAttr::get(Float64Type::get(&getContext()),
                                              bytes));
      updated[index] = entry.getDictionary(&getContext());
    }
    main->setAttr(kStageCostsAttrName, ArrayAttr::get(&getContext(), updated));
  }

  /// True when the backward of stage `index` takes `value` from its
  /// forward (pp-outline-stages makes it a `saved` value).
  bool isSavedFromForward(Value value, int64_t index) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return argumentRole(main, arg.getArgNumber()) == kRoleInput;
    if (auto transfer = value.getDefiningOp<TransferOp>()) {
      auto producer = transfer.getValues().front().getDefiningOp<StageOp>();
      return producer && producer.getPhase() == StagePhase::forward;
    }
    auto producer = value.getDefiningOp<StageOp>();
    return producer && static_cast<int64_t>(producer.getStage()) == index &&
           producer.getPhase() == StagePhase::forward;
  }

  /// A remark per sharded parameter.
  void reportParameters(const LayoutMap &layouts) {
    int64_t sharded = 0;
    for (auto [index, layout] : layouts)
      sharded += layout.isSharded();
    main.emitRemark() << "pp-shard-tensor-parallel: tp = " << tp.getValue() << ", "
                      << sharded << " of "
                      << llvm::count_if(main.getArguments(),
                                        [&](BlockArgument arg) {
                                          return isModelParameter(
                                              main, arg.getArgNumber());
                                        })
                      << " parameters sharded";
  }
};

} // namespace
