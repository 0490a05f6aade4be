//===- PPAttrs.cpp - pp dialect attributes ----------------------*- C++ -*-===//

#include "dialects/pp/IR/PPDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pp;

#define GET_ATTRDEF_CLASSES
#include "dialects/pp/IR/PPAttrs.cpp.inc"

void PPDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/pp/IR/PPAttrs.cpp.inc"
      >();
}

LogicalResult MeshAxisAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   StringRef name, int64_t size,
                                   AxisKind kind) {
  if (name.empty())
    return emitError() << "mesh axis name must not be empty";
  if (size < 1)
    return emitError() << "mesh axis \"" << name << "\" has size " << size
                       << "; sizes must be at least 1";
  return success();
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayAttr dims, DenseI64ArrayAttr blocks,
                                   ArrayAttr partial) {
  llvm::StringSet<> used;
  auto checkAxisName = [&](Attribute axis, const Twine &where) {
    auto name = dyn_cast<StringAttr>(axis);
    if (!name || name.getValue().empty())
      return emitError() << where << " names axis " << axis
                         << "; axis names are non-empty strings",
             failure();
    if (!used.insert(name.getValue()).second)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" appears twice in a sharding; an axis shards "
                            "one dimension or holds one pending sum",
             failure();
    return success();
  };
  for (auto [index, dim] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "sharding of dimension " << index
                         << " must be a list of axis names, got " << dim;
    for (Attribute axis : axes)
      if (failed(checkAxisName(axis, "sharding of dimension " +
                                         Twine(index))))
        return failure();
  }
  if (blocks) {
    if (static_cast<size_t>(blocks.size()) != dims.size())
      return emitError() << "sharding has " << blocks.size()
                         << " block counts for " << dims.size()
                         << " dimensions; give one per dimension";
    for (auto [index, count] : llvm::enumerate(blocks.asArrayRef()))
      if (count < 1)
        return emitError() << "dimension " << index << " has block count "
                           << count << "; counts are at least 1";
  }
  if (partial)
    for (Attribute axis : partial)
      if (failed(checkAxisName(axis, "the partial axes")))
        return failure();
  return success();
}

int64_t ShardingAttr::getBlockCount(int64_t dim) const {
  DenseI64ArrayAttr blocks = getBlocks();
  return blocks ? blocks[dim] : 1;
}

std::string ShardingAttr::problemWith(
    RankedTensorType type, function_ref<int64_t(StringRef)> axisSize) const {
  std::string problem;
  llvm::raw_string_ostream os(problem);
  if (static_cast<int64_t>(getDims().size()) != type.getRank()) {
    os << "sharding " << *this << " has " << getDims().size()
       << " dimensions but annotates " << type;
    return problem;
  }
  auto checkAxis = [&](Attribute axis) {
    StringRef name = cast<StringAttr>(axis).getValue();
    if (axisSize(name) == 0)
      os << "sharding " << *this << " names axis \"" << name
         << "\", which the mesh does not have";
    return axisSize(name);
  };
  for (auto [index, dim] : llvm::enumerate(getDims())) {
    int64_t devices = 1;
    for (Attribute axis : cast<ArrayAttr>(dim))
      devices *= checkAxis(axis);
    if (!problem.empty())
      return problem;
    int64_t size = type.getDimSize(index);
    int64_t pieces = devices * getBlockCount(index);
    if (!ShapedType::isDynamic(size) && size % pieces != 0)
      os << "dimension " << index << " of " << type << " (size " << size
         << ") does not split into " << getBlockCount(index) << " block(s) x "
         << devices << " device(s)";
    if (!problem.empty())
      return problem;
  }
  if (getPartial())
    for (Attribute axis : getPartial())
      checkAxis(axis);
  return problem;
}

SmallVector<int64_t> ShardingAttr::getGlobalShape(
    ArrayRef<int64_t> local, function_ref<int64_t(StringRef)> axisSize) const {
  SmallVector<int64_t> global(local);
  for (auto [index, dim] : llvm::enumerate(getDims()))
    for (Attribute axis : cast<ArrayAttr>(dim))
      if (index < global.size() && !ShapedType::isDynamic(global[index]))
        global[index] *= axisSize(cast<StringAttr>(axis).getValue());
  return global;
}

Attribute PlacementAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> stages;
  if (parser.parseLess() || parser.parseKeyword("stages") ||
      parser.parseEqual() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&] { return parser.parseInteger(stages.emplace_back()); }) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    stages);
}

void PlacementAttr::print(AsmPrinter &printer) const {
  printer << "<stages = [";
  llvm::interleaveComma(getStages(), printer);
  printer << "]>";
}

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      ArrayRef<int64_t> stages) {
  if (stages.empty())
    return emitError() << "placement needs at least one stage";
  for (auto [index, stage] : llvm::enumerate(stages)) {
    if (stage < 0)
      return emitError() << "placement stage " << stage
                         << " must not be negative";
    if (llvm::is_contained(stages.take_front(index), stage))
      return emitError() << "placement lists stage " << stage << " twice";
  }
  return success();
}
