//===- PPDialect.cpp - pp dialect registration ------------------*- C++ -*-===//
//
// Registers the pp dialect and verifies the discardable pp.sharding and
// pp.placement attributes where they annotate function arguments and results.
//
//===----------------------------------------------------------------------===//

#include "dialects/pp/IR/PPDialect.h"

#include "dialects/pp/IR/PPOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pp;

#include "dialects/pp/IR/PPDialect.cpp.inc"
#include "dialects/pp/IR/PPEnums.cpp.inc"

void PPDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/pp/IR/PPOps.cpp.inc"
      >();
}

/// Checks a pp.sharding or pp.placement attribute on a value of `type`.
/// True when `init`, a parameter's whole (global) value, can be the initial
/// value of an argument of per-device type `type` that `sharding` splits:
/// the same but for a multiple of the size along the sharded dimensions.
static bool isShardedInit(ShapedType init, Type type, ShardingAttr sharding) {
  auto local = dyn_cast<RankedTensorType>(type);
  if (!local || !init.hasRank() || init.getRank() != local.getRank() ||
      init.getElementType() != local.getElementType() ||
      static_cast<int64_t>(sharding.getDims().size()) != local.getRank())
    return false;
  for (int64_t d = 0; d < local.getRank(); ++d) {
    bool split = !cast<ArrayAttr>(sharding.getDims()[d]).empty();
    int64_t whole = init.getDimSize(d), piece = local.getDimSize(d);
    if (split ? piece == 0 || whole % piece != 0 : whole != piece)
      return false;
  }
  return true;
}

static LogicalResult verifyValueAttribute(Operation *op, StringRef where,
                                          Type type, NamedAttribute attr,
                                          DictionaryAttr siblings = {}) {
  if (attr.getName() == kPlacementAttrName) {
    if (!isa<PlacementAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kPlacementAttrName << "' on " << where
             << " must be a #pp.placement, got " << attr.getValue();
    return success();
  }
  StringRef name = attr.getName().getValue();
  if (name == kNameAttrName || name == kRoleAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' on " << where
                             << " must be a string, got " << attr.getValue();
    return success();
  }
  if (name == kStageAttrName) {
    if (!isa<IntegerAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' on " << where
                             << " must be an integer, got " << attr.getValue();
    return success();
  }
  if (name == kHolderStagesAttrName) {
    auto holders = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!holders || holders.size() < 2 ||
        !llvm::is_sorted(holders.asArrayRef(), std::less_equal<int64_t>()))
      return op->emitError()
             << "'" << name << "' on " << where
             << " must be an array<i64> of two or more increasing stages, got "
             << attr.getValue();
    return success();
  }
  if (name == kInitAttrName) {
    auto value = dyn_cast<ElementsAttr>(attr.getValue());
    auto sharding =
        siblings ? siblings.getAs<ShardingAttr>(kShardingAttrName) : nullptr;
    if (value && sharding && isShardedInit(value.getShapedType(), type, sharding))
      return success();
    if (!value || value.getType() != type)
      return op->emitError() << "'" << name << "' on " << where
                             << " must be an elements attribute of type "
                             << type
                             << (sharding ? " (or of its whole type, which "
                                            "its pp.sharding splits)"
                                          : "")
                             << ", got " << attr.getValue();
    return success();
  }
  if (name != kShardingAttrName)
    return op->emitError() << "unknown pp attribute '" << name << "' on "
                           << where << " (expected one of '" << kNameAttrName
                           << "', '" << kRoleAttrName << "', '" << kInitAttrName
                           << "', '" << kStageAttrName << "', '"
                           << kHolderStagesAttrName << "', '"
                           << kShardingAttrName << "', '" << kPlacementAttrName
                           << "')";
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << "'" << kShardingAttrName << "' on " << where
                           << " must be a #pp.sharding, got "
                           << attr.getValue();
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitError() << "'" << kShardingAttrName << "' on " << where
                           << " needs a ranked tensor, got " << type;
  if (static_cast<int64_t>(sharding.getDims().size()) != tensor.getRank())
    return op->emitError() << "'" << kShardingAttrName << "' on " << where
                           << " lists " << sharding.getDims().size()
                           << " dimensions but " << tensor << " has rank "
                           << tensor.getRank();
  return success();
}

LogicalResult PPDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  Type type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  DictionaryAttr siblings;
  if (auto function = dyn_cast<FunctionOpInterface>(op))
    siblings = function.getArgAttrDict(argIndex);
  return verifyValueAttribute(op, "argument " + std::to_string(argIndex), type,
                              attr, siblings);
}

LogicalResult PPDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  // Only function-like ops carry result attributes.
  auto function = cast<FunctionOpInterface>(op);
  return verifyValueAttribute(op, "result " + std::to_string(resultIndex),
                              function.getResultTypes()[resultIndex], attr);
}

DictionaryAttr pp::getNameAndRoleAttrs(MLIRContext *context, StringRef name,
                                       StringRef role) {
  Builder builder(context);
  return builder.getDictionaryAttr(
      {builder.getNamedAttr(kNameAttrName, builder.getStringAttr(name)),
       builder.getNamedAttr(kRoleAttrName, builder.getStringAttr(role))});
}
