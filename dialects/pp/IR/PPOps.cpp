//===- PPOps.cpp - pp dialect ops -------------------------------*- C++ -*-===//
//
// Verifiers of the pp ops. Checks that need the mesh (stage numbers, axis
// names, group sizes) run in verifySymbolUses, once the mesh symbol resolves.
//
//===----------------------------------------------------------------------===//

#include "dialects/pp/IR/PPOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/SmallBitVector.h"
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

/// Checks that `stage` is a pipeline stage of the mesh.
static LogicalResult verifyStageIndex(Operation *op, MeshOp mesh,
                                      StringRef what, int64_t stage) {
  if (!mesh.getPipelineAxis())
    return op->emitOpError() << "refers to pipeline stages but mesh @"
                             << mesh.getSymName() << " has no pipeline axis";
  if (stage < 0 || stage >= mesh.getNumStages())
    return op->emitOpError()
           << what << " " << stage << " is out of range: mesh @"
           << mesh.getSymName() << " has " << mesh.getNumStages()
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
/// scales that dimension by `numerator / denominator` (which divides it:
/// verifyBlocks) has type `result`.
static LogicalResult verifyScaledDim(Operation *op, RankedTensorType input,
                                     RankedTensorType result, int64_t dim,
                                     int64_t numerator, int64_t denominator) {
  if (dim < 0 || dim >= input.getRank())
    return op->emitOpError()
           << "dim " << dim << " is out of range for " << input;
  int64_t size = input.getDimSize(dim);
  SmallVector<int64_t> shape(input.getShape());
  if (!ShapedType::isDynamic(size))
    shape[dim] = size * numerator / denominator;
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
  std::optional<ArrayRef<int64_t>> stageRanks = getStageRanks();
  if (!stageRanks)
    return success();
  if (!pipeline)
    return emitOpError() << "has stage_ranks but no pipeline axis to place "
                            "the stages on; add one or drop stage_ranks";
  llvm::SmallBitVector used(pipeline.getSize());
  for (auto [stage, rank] : llvm::enumerate(*stageRanks)) {
    if (rank < 0 || rank >= pipeline.getSize())
      return emitOpError() << "places stage " << stage << " on rank " << rank
                           << ", outside the " << pipeline.getSize()
                           << " ranks of pipeline axis \""
                           << pipeline.getName() << "\"";
    used.set(rank);
  }
  if (!used.all())
    return emitOpError() << "places no stage on rank " << used.find_first_unset()
                         << " of pipeline axis \"" << pipeline.getName()
                         << "\"; every rank needs a stage";
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

int64_t MeshOp::getNumStages() {
  if (std::optional<ArrayRef<int64_t>> stageRanks = getStageRanks())
    return stageRanks->size();
  MeshAxisAttr pipeline = getPipelineAxis();
  return pipeline ? pipeline.getSize() : 0;
}

int64_t MeshOp::getStageRank(int64_t stage) {
  if (std::optional<ArrayRef<int64_t>> stageRanks = getStageRanks())
    return (*stageRanks)[stage];
  return stage;
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

/// Checks that dimension `dim` of `whole` (the side holding the whole
/// tensor) splits into `blocks` blocks of `group` pieces each.
static LogicalResult verifyBlocks(Operation *op, RankedTensorType whole,
                                  int64_t dim, int64_t blocks, int64_t group) {
  if (blocks < 1)
    return op->emitOpError() << "has blocks = " << blocks
                             << "; a dimension has at least 1 block";
  if (dim < 0 || dim >= whole.getRank())
    return success(); // verifyScaledDim reports it.
  int64_t size = whole.getDimSize(dim);
  if (ShapedType::isDynamic(size) || size % (blocks * group) == 0)
    return success();
  InFlightDiagnostic error = op->emitOpError()
                             << "dimension " << dim << " of size " << size
                             << " does not divide evenly over the " << group
                             << " devices of the group";
  if (blocks > 1)
    error << " in each of " << blocks << " blocks";
  return error << "; pad it to a multiple of " << blocks * group;
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group =
      verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
  if (failed(group) ||
      failed(verifyScaledDim(*this, getInput().getType(),
                             getResult().getType(), getDim(), *group, 1)))
    return failure();
  return verifyBlocks(*this, getResult().getType(), getDim(), getBlocks(),
                      *group);
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group =
      verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
  if (failed(group) ||
      failed(verifyBlocks(*this, getInput().getType(), getDim(), getBlocks(),
                          *group)))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getResult().getType(),
                         getDim(), 1, *group);
}

LogicalResult ShardSliceOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> group =
      verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
  if (failed(group) ||
      failed(verifyBlocks(*this, getInput().getType(), getDim(), getBlocks(),
                          *group)))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getResult().getType(),
                         getDim(), 1, *group);
}

//===----------------------------------------------------------------------===//
// Sharded gather and cross-entropy
//===----------------------------------------------------------------------===//

/// The shape of gathering `indices` from data of `dataShape` along `axis`:
/// the axis replaced by the indices' shape.
static SmallVector<int64_t> gatheredShape(ArrayRef<int64_t> dataShape,
                                          ArrayRef<int64_t> indices,
                                          int64_t axis) {
  SmallVector<int64_t> shape(dataShape.take_front(axis));
  llvm::append_range(shape, indices);
  llvm::append_range(shape, dataShape.drop_front(axis + 1));
  return shape;
}

/// Checks a sharded gather's (or its gradient's) data, indices and axis.
static LogicalResult verifyShardedGather(Operation *op,
                                         RankedTensorType data,
                                         RankedTensorType indices,
                                         RankedTensorType gathered,
                                         int64_t axis) {
  if (!indices.getElementType().isSignlessInteger())
    return op->emitOpError() << "indices must be signless integers, got "
                             << indices;
  if (axis < 0 || axis >= data.getRank())
    return op->emitOpError() << "axis " << axis << " is out of range for "
                             << data;
  SmallVector<int64_t> expected =
      gatheredShape(data.getShape(), indices.getShape(), axis);
  if (gathered.getShape() != ArrayRef<int64_t>(expected) ||
      gathered.getElementType() != data.getElementType())
    return op->emitOpError()
           << "gathering " << indices << " from " << data << " along axis "
           << axis << " gives " << data.getElementType() << " of shape ["
           << llvm::make_range(expected.begin(), expected.end()) << "], not "
           << gathered;
  return success();
}

LogicalResult ShardedGatherOp::verify() {
  return verifyShardedGather(*this, getData().getType(), getIndices().getType(),
                             getResult().getType(), getAxis());
}

LogicalResult ShardedGatherOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
}

LogicalResult ShardedGatherGradOp::verify() {
  auto data = getResult().getType();
  if (data.getShape() != getDataShape())
    return emitOpError() << "result " << data << " does not have data_shape ["
                         << getDataShape() << "]";
  return verifyShardedGather(*this, data, getIndices().getType(),
                             getGrad().getType(), getAxis());
}

LogicalResult
ShardedGatherGradOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
}

/// Checks the logits, labels and (for the gradient) loss gradient of a
/// sharded cross-entropy.
static LogicalResult verifyShardedLoss(Operation *op, RankedTensorType logits,
                                       RankedTensorType labels) {
  if (!isa<FloatType>(logits.getElementType()) || logits.getRank() < 1)
    return op->emitOpError() << "logits must be floats with a class "
                                "dimension, got "
                             << logits;
  if (!labels.getElementType().isSignlessInteger() ||
      labels.getShape() != logits.getShape().drop_back())
    return op->emitOpError()
           << "labels " << labels
           << " must be integers shaped like the logits without their class "
              "dimension ("
           << logits << ")";
  return success();
}

LogicalResult ShardedCrossEntropyOp::verify() {
  if (failed(verifyShardedLoss(*this, getLogits().getType(),
                               getLabels().getType())))
    return failure();
  auto loss = RankedTensorType::get({}, getLogits().getType().getElementType());
  if (getResult().getType() != loss)
    return emitOpError() << "returns the summed loss as " << loss << ", not "
                         << getResult().getType();
  return success();
}

LogicalResult
ShardedCrossEntropyOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
}

LogicalResult ShardedCrossEntropyGradOp::verify() {
  if (failed(verifyShardedLoss(*this, getLogits().getType(),
                               getLabels().getType())))
    return failure();
  auto loss = RankedTensorType::get({}, getLogits().getType().getElementType());
  if (getGrad().getType() != loss)
    return emitOpError() << "takes the gradient of the summed loss as " << loss
                         << ", not " << getGrad().getType();
  if (getResult().getType() != getLogits().getType())
    return emitOpError() << "result " << getResult().getType()
                         << " must have the logits' type "
                         << getLogits().getType();
  return success();
}

LogicalResult
ShardedCrossEntropyGradOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyCollectiveGroup(*this, getMeshAttr(), getAxes(), table);
}
