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

/// Checks the pp.init `init` of an argument of `type` (a device's shard)
/// that carries `sharding`: its type is the whole tensor's on the mesh
/// @pipeline, of which the argument is a shard.
static LogicalResult verifyShardedInit(Operation *op, StringRef where,
                                       Type type, ShardingAttr sharding,
                                       ElementsAttr init) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      op, StringAttr::get(op->getContext(), kPipelineMeshName));
  if (!mesh)
    return op->emitError() << "'" << kInitAttrName << "' on " << where
                           << " has type " << init.getType()
                           << ", not the argument's " << type
                           << "; a sharded argument's whole initial value "
                              "needs the mesh @"
                           << kPipelineMeshName << " to relate the two";
  auto axisSize = [&](StringRef name) -> int64_t {
    MeshAxisAttr axis = mesh.lookupAxis(name);
    return axis ? axis.getSize() : 0;
  };
  auto local = cast<RankedTensorType>(type);
  auto whole = RankedTensorType::get(
      sharding.getGlobalShape(local.getShape(), axisSize),
      local.getElementType());
  if (std::string problem = sharding.problemWith(whole, axisSize);
      !problem.empty())
    return op->emitError() << "'" << kInitAttrName << "' on " << where
                           << ": " << problem;
  if (init.getType() != whole)
    return op->emitError() << "'" << kInitAttrName << "' on " << where
                           << " must be the whole tensor " << whole
                           << " of which the argument " << type
                           << " is the shard " << sharding
                           << " says, got " << init.getType();
  return success();
}

/// Checks a pp.* attribute on a value of `type` whose attributes are
/// `siblings` (null where the value has no attribute dictionary).
static LogicalResult verifyValueAttribute(Operation *op, StringRef where,
                                          Type type, NamedAttribute attr,
                                          DictionaryAttr siblings) {
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
  if (name == kGradientPartAttrName) {
    auto part = dyn_cast<IntegerAttr>(attr.getValue());
    if (!part || part.getInt() < 0)
      return op->emitError() << "'" << name << "' on " << where
                             << " must be a non-negative integer, got "
                             << attr.getValue();
    auto role = siblings ? siblings.getAs<StringAttr>(kRoleAttrName)
                         : StringAttr();
    if (!role || role.getValue() != kRoleGradient)
      return op->emitError() << "'" << name << "' on " << where
                             << " belongs on a value of role '"
                             << kRoleGradient << "', not on one of role '"
                             << (role ? role.getValue() : "") << "'";
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
  if (name == kModelDtypeAttrName) {
    auto stored = dyn_cast<TypeAttr>(attr.getValue());
    if (!stored || !(stored.getValue().isBF16() || stored.getValue().isF16()))
      return op->emitError() << "'" << name << "' on " << where
                             << " must be bf16 or f16 (the type a model "
                             << "stores a weight trained as an f32 master "
                             << "copy in), got " << attr.getValue();
    return success();
  }
  if (name == kInitAttrName) {
    // A sharded argument (a device's shard) keeps the whole initial value.
    auto value = dyn_cast<ElementsAttr>(attr.getValue());
    auto sharding = siblings ? siblings.getAs<ShardingAttr>(kShardingAttrName)
                             : ShardingAttr();
    if (value && value.getType() != type && sharding &&
        isa<RankedTensorType>(type) &&
        static_cast<int64_t>(sharding.getDims().size()) ==
            cast<RankedTensorType>(type).getRank())
      return verifyShardedInit(op, where, type, sharding, value);
    if (!value || value.getType() != type)
      return op->emitError() << "'" << name << "' on " << where
                             << " must be an elements attribute of type "
                             << type << ", got " << attr.getValue();
    return success();
  }
  if (name != kShardingAttrName)
    return op->emitError() << "unknown pp attribute '" << name << "' on "
                           << where << " (expected one of '" << kNameAttrName
                           << "', '" << kRoleAttrName << "', '" << kInitAttrName
                           << "', '" << kStageAttrName << "', '"
                           << kHolderStagesAttrName << "', '"
                           << kGradientPartAttrName << "', '"
                           << kShardingAttrName << "', '" << kPlacementAttrName
                           << "', '" << kModelDtypeAttrName << "')";
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

/// `pp.import_record` (kImportRecordAttrName): on a module, a dictionary
/// of at most `trained` and `held`, each mapping names to element counts,
/// and `folded`, mapping names to the parameters they were folded from.
static LogicalResult verifyImportRecord(Operation *op, Attribute value) {
  auto fail = [&]() {
    return op->emitError()
           << "'" << kImportRecordAttrName
           << "' must be a dictionary {trained = {NAME = ELEMENTS : i64, "
              "...}, held = {...}, folded = {NAME = \"PARAMETER\", ...}} on "
              "a module, got "
           << value;
  };
  auto record = dyn_cast<DictionaryAttr>(value);
  if (!isa<ModuleOp>(op) || !record)
    return fail();
  for (NamedAttribute kind : record) {
    auto entries = dyn_cast<DictionaryAttr>(kind.getValue());
    bool folded = kind.getName() == "folded";
    if (!entries ||
        (!folded && kind.getName() != "trained" && kind.getName() != "held"))
      return fail();
    for (NamedAttribute entry : entries) {
      if (folded) {
        if (!isa<StringAttr>(entry.getValue()))
          return fail();
        continue;
      }
      auto count = dyn_cast<IntegerAttr>(entry.getValue());
      if (!count || count.getType().getIntOrFloatBitWidth() != 64 ||
          count.getInt() < 0)
        return fail();
    }
  }
  return success();
}

LogicalResult PPDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  if (attr.getName() == kImportRecordAttrName)
    return verifyImportRecord(op, attr.getValue());
  return success();
}

LogicalResult PPDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  Type type = op->getRegion(regionIndex).getArgument(argIndex).getType();
  auto function = dyn_cast<FunctionOpInterface>(op);
  return verifyValueAttribute(op, "argument " + std::to_string(argIndex), type,
                              attr,
                              function ? function.getArgAttrDict(argIndex)
                                       : DictionaryAttr());
}

LogicalResult PPDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  // Only function-like ops carry result attributes.
  auto function = cast<FunctionOpInterface>(op);
  return verifyValueAttribute(op, "result " + std::to_string(resultIndex),
                              function.getResultTypes()[resultIndex], attr,
                              function.getResultAttrDict(resultIndex));
}

DictionaryAttr pp::getNameAndRoleAttrs(MLIRContext *context, StringRef name,
                                       StringRef role) {
  Builder builder(context);
  return builder.getDictionaryAttr(
      {builder.getNamedAttr(kNameAttrName, builder.getStringAttr(name)),
       builder.getNamedAttr(kRoleAttrName, builder.getStringAttr(role))});
}
