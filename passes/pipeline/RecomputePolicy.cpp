//===- RecomputePolicy.cpp - what a stage's backward recomputes -----------===//
//
// The rules of RecomputePolicy.h: which forward ops each granularity
// recomputes, how a policy is parsed, recorded in a stage's
// `pp.stage_costs` entry and read back.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/RecomputePolicy.h"

#include "passes/ProgramUtils.h"

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

/// Whether `value` is a model parameter, or made from one by ops of one
/// operand (a cast to the compute type, a transpose, a reshape), in the
/// program or inside a stage that takes it.
static bool isWeight(Value value) {
  while (true) {
    if (Operation *producer = value.getDefiningOp()) {
      if (producer->getNumOperands() != 1)
        return false;
      value = producer->getOperand(0);
      continue;
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
    return !multipliesByWeight(op);
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
