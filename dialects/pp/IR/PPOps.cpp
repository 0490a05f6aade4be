//===- PPOps.cpp - pp dialect ops -------------------------------*- C++ -*-===//
//
// Verifiers of the pp ops. Checks that need the mesh (stage numbers, axis
// names, group sizes) run in verifySymbolUses, once the mesh symbol resolves.
//
//===----------------------------------------------------------------------===//

#include "dialects/pp/IR/PPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace pp;

#define GET_OP_CLASSES
#include "dialects/pp/IR/PPOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

/// Resolves the mesh an op refers to.
static FailureOr<MeshOp> lookupMesh(Operation *op, FlatSymbolRefAttr ref,
                                    SymbolTableCollection &symbolTable) {
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(op, ref.getAttr());
  if (!mesh)
    return op->emitOpError() << ref << " does not name a pp.mesh";
  return mesh;
}

/// Checks that `stage` is a coordinate of the mesh's pipeline axis.
static LogicalResult verifyStageIndex(Operation *op, MeshOp mesh,
                                      StringRef what, int64_t stage) {
  MeshAxisAttr pipeline = mesh.getPipelineAxis();
  if (!pipeline)
    return op->emitOpError() << "refers to pipeline stages but mesh @"
                             << mesh.getSymName() << " has no pipeline axis";
  if (stage < 0 || stage >= pipeline.getSize())
    return op->emitOpError()
           << what << " " << stage << " is out of range: mesh @"
           << mesh.getSymName() << " has " << pipeline.getSize()
           << " pipeline stages";
  return success();
}

/// Checks that point-to-point traffic names each of its `count` tensors once.
static LogicalResult verifyTensorNames(Operation *op, ArrayAttr names,
                                       size_t count) {
  if (count == 0)
    return op->emitOpError() << "must carry at least one tensor";
  if (names.size() != count)
    return op->emitOpError()
           << "carries " << count << " tensors but names " << names.size();
  llvm::StringSet<> seen;
  for (Attribute name : names) {
    StringRef text = cast<StringAttr>(name).getValue();
    if (text.empty())
      return op->emitOpError() << "tensor names must not be empty";
    if (!seen.insert(text).second)
      return op->emitOpError() << "names tensor \"" << text << "\" twice";
  }
  return success();
}

/// Checks the mesh axes of a collective and returns the group size.
static FailureOr<int64_t> verifyCollectiveGroup(Operation *op,
                                                FlatSymbolRefAttr meshRef,
                                                ArrayAttr axes,
                                                SymbolTableCollection &table) {
  FailureOr<MeshOp> mesh = lookupMesh(op, meshRef, table);
  if (failed(mesh))
    return failure();
  if (axes.empty())
    return op->emitOpError() << "needs at least one mesh axis";
  int64_t size = 1;
  llvm::StringSet<> seen;
  for (Attribute attr : axes) {
    StringRef name = cast<StringAttr>(attr).getValue();
    MeshAxisAttr axis = mesh->lookupAxis(name);
    if (!axis)
      return op->emitOpError() << "mesh @" << mesh->getSymName()
                               << " has no axis \"" << name << "\"";
    if (!seen.insert(name).second)
      return op->emitOpError() << "names mesh axis \"" << name << "\" twice";
    if (axis.getKind() == AxisKind::pipeline)
      return op->emitOpError() << "cannot run over the pipeline axis \"" << name
                               << "\"; stages exchange values with pp.transfer";
    size *= axis.getSize();
  }
  return size;
}

/// Checks that `dim` indexes `type` and that the result of a collective that
/// scales that dimension by `numerator / denominator` has type `result`.
static LogicalResult verifyScaledDim(Operation *op, RankedTensorType input,
                                     RankedTensorType result, int64_t dim,
                                     int64_t numerator, int64_t denominator) {
  if (dim < 0 || dim >= input.getRank())
    return op->emitOpError()
           << "dim " << dim << " is out of range for " << input;
  int64_t size = input.getDimSize(dim);
  SmallVector<int64_t> shape(input.getShape());
  if (!ShapedType::isDynamic(size)) {
    if ((size * numerator) % denominator != 0)
      return op->emitOpError()
             << "dimension " << dim << " of size " << size
             << " does not divide evenly over the " << denominator
             << " devices of the group; pad it to a multiple of "
             << denominator;
    shape[dim] = size * numerator / denominator;
  }
  auto expected = RankedTensorType::get(shape, input.getElementType());
  if (result != expected)
    return op->emitOpError()
           << "result type " << result << " should be " << expected;
  return success();
}

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  if (getAxes().empty())
    return emitOpError() << "needs at least one axis";
  llvm::StringSet<> names;
  MeshAxisAttr pipeline;
  for (MeshAxisAttr axis : getAxes().getAsRange<MeshAxisAttr>()) {
    if (!names.insert(axis.getName()).second)
      return emitOpError() << "has two axes named \"" << axis.getName() << "\"";
    if (axis.getKind() != AxisKind::pipeline)
      continue;
    if (pipeline)
      return emitOpError() << "has two pipeline axes, \"" << pipeline.getName()
                           << "\" and \"" << axis.getName() << "\"";
    pipeline = axis;
  }
  return success();
}

MeshAxisAttr MeshOp::lookupAxis(StringRef name) {
  for (MeshAxisAttr axis : getAxes().getAsRange<MeshAxisAttr>())
    if (axis.getName() == name)
      return axis;
  return {};
}

MeshAxisAttr MeshOp::getPipelineAxis() {
  for (MeshAxisAttr axis : getAxes().getAsRange<MeshAxisAttr>())
    if (axis.getKind() == AxisKind::pipeline)
      return axis;
  return {};
}

int64_t MeshOp::getNumDevices() {
  int64_t count = 1;
  for (MeshAxisAttr axis : getAxes().getAsRange<MeshAxisAttr>())
    count *= axis.getSize();
  return count;
}

//===----------------------------------------------------------------------===//
// StageOp
//===----------------------------------------------------------------------===//

LogicalResult StageOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError() << "block argument types " << body.getArgumentTypes()
                         << " must match the input types "
                         << getInputs().getTypes();
  // Nested verification has already checked that the block ends in a
  // terminator; any but pp.yield is foreign here.
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end with pp.yield, found '"
                         << body.getTerminator()->getName() << "'";
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().getTypes()
                         << " but the stage returns " << getResultTypes();
  return success();
}

LogicalResult StageOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<MeshOp> mesh = lookupMesh(*this, getMeshAttr(), symbolTable);
  if (failed(mesh))
    return failure();
  return verifyStageIndex(*this, *mesh, "stage", getStage());
}

//===----------------------------------------------------------------------===//
// Point-to-point ops
//===----------------------------------------------------------------------===//

LogicalResult TransferOp::verify() {
  if (getFrom() == getTo())
    return emitOpError() << "moves values from stage " << getFrom()
                         << " to itself";
  return verifyTensorNames(*this, getNames(), getValues().size());
}

LogicalResult TransferOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<MeshOp> mesh = lookupMesh(*this, getMeshAttr(), table);
  if (failed(mesh) ||
      failed(verifyStageIndex(*this, *mesh, "source stage", getFrom())))
    return failure();
  return verifyStageIndex(*this, *mesh, "destination stage", getTo());
}

LogicalResult SendOp::verify() {
  return verifyTensorNames(*this, getNames(), getValues().size());
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<MeshOp> mesh = lookupMesh(*this, getMeshAttr(), table);
  if (failed(mesh))
    return failure();
  return verifyStageIndex(*this, *mesh, "destination stage", getTo());
}

LogicalResult RecvOp::verify() {
  return verifyTensorNames(*this, getNames(), getResults().size());
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<MeshOp> mesh = lookupMesh(*this, getMeshAttr(), table);
  if (failed(mesh))
    return failure();
  return verifyStageIndex(*this, *mesh, "source stage", getFrom());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group =
      verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
  if (failed(group))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getResult().getType(),
                         getDim(), *group, 1);
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group =
      verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
  if (failed(group))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getResult().getType(),
                         getDim(), 1, *group);
}
