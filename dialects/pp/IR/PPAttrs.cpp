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
                                   ArrayAttr dims) {
  llvm::StringSet<> used;
  for (auto [index, dim] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "sharding of dimension " << index
                         << " must be a list of axis names, got " << dim;
    for (Attribute axis : axes) {
      auto name = dyn_cast<StringAttr>(axis);
      if (!name || name.getValue().empty())
        return emitError() << "sharding of dimension " << index
                           << " names axis " << axis
                           << "; axis names are non-empty strings";
      if (!used.insert(name.getValue()).second)
        return emitError() << "mesh axis \"" << name.getValue()
                           << "\" shards more than one dimension";
    }
  }
  return success();
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
