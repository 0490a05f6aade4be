//===- RecomputePolicy.cpp - what a stage's backward recomputes -----------===//
//
// The rules of RecomputePolicy.h: which forward ops each granularity
// recomputes, how a policy is parsed, recorded in a stage's
// `pp.stage_costs` entry and read back.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/RecomputePolicy.h"

#include "passes/ProgramUtils.h"
#include "passes/pipeline/CostModel.h"

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace pp;

static constexpr llvm::StringLiteral kRecomputeKey = "recompute";
static constexpr llvm::StringLiteral kRecomputeOpsKey = "recompute_ops";

/// Each granularity's name, as options and `pp.stage_costs` spell it.
static constexpr std::pair<llvm::StringLiteral, RecomputeGranularity>
    kGranularityNames[] = {{"none", RecomputeGranularity::none},
                           {"full", RecomputeGranularity::full},
                           {"selective", RecomputeGranularity::selective},
                           {"ops", RecomputeGranularity::ops}};

/// The granularity named `name`, if any.
static std::optional<RecomputeGranularity> granularityNamed(StringRef name) {
  for (auto [spelling, kind] : kGranularityNames)
    if (spelling == name)
      return kind;
  return std::nullopt;
}

/// The name of `kind`.
static StringRef nameOf(RecomputeGranularity kind) {
  for (auto [spelling, named] : kGranularityNames)
    if (named == kind)
      return spelling;
  llvm_unreachable("every granularity has a name");
}

/// The forward ops of the nn dialect in `program`: the ones a policy may
/// recompute (constants are copied into every stage, never saved).
static SmallVector<Operation *> forwardModelOps(func::FuncOp program) {
  SmallVector<Operation *> ops;
  for (Operation &op : program.getBody().front().without_terminator())
    if (!isBackward(&op) && isa<nn::NNDialect>(op.getDialect()))
      ops.push_back(&op);
  return ops;
}

/// `value` as the unpartitioned program has it: looking through stage
/// boundaries, a stage's argument is the value the stage takes and a
/// stage's result the value its body yields.
static Value programValue(Value value) {
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      auto stage = dyn_cast<StageOp>(arg.getOwner()->getParentOp());
      if (!stage)
        return value;
      value = stage.getInputs()[arg.getArgNumber()];
      continue;
    }
    auto stage = dyn_cast<StageOp>(value.getDefiningOp());
    if (!stage)
      return value;
    value = stage.getBody().front().getTerminator()->getOperand(
        cast<OpResult>(value).getResultNumber());
  }
}

/// Appends the ops that read `value` (a value of the unpartitioned program,
/// programValue's) through stage boundaries: a value a stage yields or
/// takes is read by the readers of what it becomes in the stages.
static void collectReaders(Value value, SmallVectorImpl<Operation *> &readers) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isa<YieldOp>(user))
      collectReaders(user->getParentOp()->getResult(use.getOperandNumber()),
                     readers);
    else if (auto stage = dyn_cast<StageOp>(user))
      collectReaders(
          stage.getBody().front().getArgument(use.getOperandNumber()), readers);
    else
      readers.push_back(user);
  }
}

/// The ops of the unpartitioned program that read `value`, in whichever
/// stages they are.
static SmallVector<Operation *> programReaders(Value value) {
  SmallVector<Operation *> readers;
  collectReaders(programValue(value), readers);
  return readers;
}

/// Whether `value` is a model parameter, or made from parameters and
/// constants alone (a cast to the compute type, a transpose, a bias scaled
/// by a constant), in the program or inside a stage that takes it.
static bool isWeight(Value value) {
  while (true) {
    if (Operation *producer = value.getDefiningOp()) {
      if (isa<StageOp>(producer))
        return false;
      bool weighted = false;
      for (Value operand : producer->getOperands()) {
        if (Operation *made = operand.getDefiningOp();
            made && made->hasTrait<OpTrait::ConstantLike>())
          continue;
        if (!isWeight(operand))
          return false;
        weighted = true;
      }
      return weighted;
    }
    auto arg = cast<BlockArgument>(value);
    Operation *owner = arg.getOwner()->getParentOp();
    if (auto stage = dyn_cast<StageOp>(owner)) {
      value = stage.getInputs()[arg.getArgNumber()];
      continue;
    }
    auto program = dyn_cast<func::FuncOp>(owner);
    return program && isModelParameter(program, arg.getArgNumber());
  }
}

/// Whether `op` multiplies by a weight: it reads one and does more than a
/// few operations per result element (a matrix product with a weight, not
/// a normalization's scale or an embedding's gather).
static bool multipliesByWeight(Operation *op) {
  auto costed = dyn_cast<nn::CostOpInterface>(op);
  if (!costed || !llvm::any_of(op->getOperands(), isWeight))
    return false;
  double elements = 0;
  for (Type type : op->getResultTypes())
    elements += nn::staticElementCount(type);
  return costed.estimateFlops() > 2 * elements;
}

/// The one operand of `op` that is neither a weight nor a constant, if it
/// has exactly one.
static Value soleActivation(Operation *op) {
  Value activation;
  for (Value operand : op->getOperands()) {
    Operation *producer = operand.getDefiningOp();
    if (isWeight(operand) ||
        (producer && producer->hasTrait<OpTrait::ConstantLike>()))
      continue;
    if (activation)
      return Value();
    activation = operand;
  }
  return activation;
}

/// The bytes of `types`.
static double bytesOf(TypeRange types) {
  double bytes = 0;
  for (Type type : types)
    bytes += pp::bytesOf(type);
  return bytes;
}

/// Whether `op`, a forward op of the model, only carries on the one value
/// it reads (a bias add, a split, a transpose, an activation function): its
/// results are as large as that value, which nothing else reads. Keeping
/// its results rather than that value holds as many bytes.
static bool carriesOn(Operation *op) {
  if (isBackward(op) || !isa<nn::NNDialect>(op->getDialect()) ||
      op->hasTrait<OpTrait::ConstantLike>() || multipliesByWeight(op))
    return false;
  Value read = soleActivation(op);
  if (!read || pp::bytesOf(read.getType()) != bytesOf(op->getResultTypes()))
    return false;
  SmallVector<Operation *> readers = programReaders(read);
  return readers.size() == 1 && readers.front() == op;
}

/// Whether recomputing `op` would free nothing: it carries on the result
/// of a product with a weight, which selective keeps, or of an op that
/// carries on one (the bias add after a product, the split, reshapes and
/// transposes after that), so the kept value would be held in its place,
/// as large. A bias add is kept in the product's place; the tanh after it
/// too when its gradient reads its result, not when the gradient reads
/// the bias add's (then the bias add's result has two readers).
static bool keptForFree(Operation *op) {
  if (!carriesOn(op))
    return false;
  Operation *producer = programValue(soleActivation(op)).getDefiningOp();
  return producer && !isBackward(producer) &&
         (multipliesByWeight(producer) || keptForFree(producer));
}

FailureOr<RecomputePolicy> RecomputePolicy::parse(StringRef granularity,
                                                  StringRef ops,
                                                  func::FuncOp program) {
  RecomputePolicy policy;
  // `ops` is named by a pattern, not by its name.
  std::optional<RecomputeGranularity> kind = granularityNamed(granularity);
  if (!kind || *kind == RecomputeGranularity::ops)
    return program.emitError("recompute '")
           << granularity << "' is not one of none, full, selective, auto";
  policy.kind = *kind;
  if (ops.empty())
    return policy;
  if (policy.kind != RecomputeGranularity::none)
    return program.emitError("recompute=")
           << granularity << " chooses the recomputed ops itself; "
           << "recompute-ops '" << ops
           << "' would name them instead: drop one of the two";
  policy.kind = RecomputeGranularity::ops;
  policy.setPattern(ops);
  std::string problem;
  if (!policy.matcher->isValid(problem))
    return program.emitError("recompute-ops '")
           << ops << "' is not a regular expression: " << problem;
  llvm::StringSet<> names;
  for (Operation *op : forwardModelOps(program))
    names.insert(op->getName().getStringRef());
  if (llvm::none_of(names.keys(), [&](StringRef name) {
        return policy.matcher->match(name);
      })) {
    SmallVector<StringRef> sorted(names.keys());
    llvm::sort(sorted);
    return program.emitError("recompute-ops '")
           << ops << "' matches no op of the model's forward, whose ops are "
           << llvm::join(sorted, ", ")
           << " (a whole name, e.g. 'nn\\.(softmax|erf)')";
  }
  return policy;
}

RecomputePolicy RecomputePolicy::ofStage(DictionaryAttr stageCost) {
  RecomputePolicy policy;
  auto granularity =
      stageCost ? stageCost.getAs<StringAttr>(kRecomputeKey) : StringAttr();
  if (!granularity)
    return policy;
  policy.kind = granularityNamed(granularity.getValue())
                    .value_or(RecomputeGranularity::none);
  if (auto ops = stageCost.getAs<StringAttr>(kRecomputeOpsKey))
    policy.setPattern(ops);
  return policy;
}

void RecomputePolicy::setPattern(StringRef ops) {
  pattern = ops.str();
  matcher = std::make_shared<llvm::Regex>(("^(" + ops + ")$").str());
}

SmallVector<NamedAttribute>
RecomputePolicy::stageAttributes(Builder &builder) const {
  if (recomputesNothing())
    return {};
  SmallVector<NamedAttribute> attributes = {builder.getNamedAttr(
      kRecomputeKey, builder.getStringAttr(nameOf(kind)))};
  if (kind == RecomputeGranularity::ops)
    attributes.push_back(builder.getNamedAttr(
        kRecomputeOpsKey, builder.getStringAttr(pattern)));
  return attributes;
}

bool RecomputePolicy::recomputes(Operation *op) const {
  if (isBackward(op) || recomputesNothing())
    return false;
  if (op->hasTrait<OpTrait::ConstantLike>())
    return true;
  if (!isa<nn::NNDialect>(op->getDialect()))
    return false;
  switch (kind) {
  case RecomputeGranularity::none:
    return false;
  case RecomputeGranularity::full:
    return true;
  case RecomputeGranularity::selective:
    return !multipliesByWeight(op) && !keptForFree(op);
  case RecomputeGranularity::ops:
    return matcher && matcher->match(op->getName().getStringRef());
  }
  llvm_unreachable("a recompute granularity");
}

llvm::DenseSet<Operation *>
RecomputePolicy::recomputedOps(func::FuncOp program) const {
  llvm::DenseSet<Operation *> recomputed;
  if (recomputesNothing())
    return recomputed;
  // Latest first: an op's readers are decided before it.
  SmallVector<Operation *> ops = forwardModelOps(program);
  for (Operation *op : llvm::reverse(ops)) {
    if (!recomputes(op))
      continue;
    bool read = llvm::any_of(op->getUsers(), [&](Operation *user) {
      return isBackward(user) || recomputed.contains(user);
    });
    if (read)
      recomputed.insert(op);
  }
  return recomputed;
}
