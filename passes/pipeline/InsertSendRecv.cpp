//===- InsertSendRecv.cpp - pp-insert-send-recv ---------------------------===//
//
// Every value one `pp.stage` op hands to a stage op of another stage becomes
// an explicit `pp.transfer`: one per (from stage, to stage, phase), right
// after the stage op that computes its values, carrying all of them under
// the names of the nodes that compute them.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace pp {
#define GEN_PASS_DEF_INSERTSENDRECV
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

struct InsertSendRecvPass
    : public pp::impl::InsertSendRecvBase<InsertSendRecvPass> {
  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main) || failed(insert(*main)))
      signalPassFailure();
  }

  LogicalResult insert(func::FuncOp main) {
    Block &body = main.getBody().front();
    if (body.getOps<StageOp>().empty())
      return main.emitError("the program has no pp.stage ops; run "
                            "pp-partition first");

    // The values each producing stage op sends to each other stage, in
    // program order.
    using Route = std::pair<StageOp, int64_t>;
    llvm::MapVector<Route, llvm::SetVector<Value>> routes;
    for (Operation &op : body.without_terminator()) {
      if (isa<TransferOp>(op))
        return main.emitError("the program already has pp.transfer ops");
      auto consumer = dyn_cast<StageOp>(op);
      // A constant the program returns stays outside the stages.
      if (!consumer && op.hasTrait<OpTrait::ConstantLike>())
        continue;
      if (!consumer)
        return op.emitOpError("is outside every pp.stage; run pp-partition "
                              "on the whole program");
      for (Value operand : consumer.getInputs()) {
        auto producer = operand.getDefiningOp<StageOp>();
        if (!producer)
          continue;
        bool forward = producer.getPhase() == StagePhase::forward;
        if (!forward && consumer.getPhase() == StagePhase::forward)
          return consumer.emitOpError("is a forward stage but takes a value ")
                 << "of stage " << producer.getStage() << " in phase "
                 << stringifyStagePhase(producer.getPhase())
                 << "; forward stages run before every backward one";
        if (producer.getStage() == consumer.getStage())
          continue;
        if (forward ? producer.getStage() > consumer.getStage()
                    : producer.getStage() < consumer.getStage())
          return consumer.emitOpError("takes a value from stage ")
                 << producer.getStage() << " in phase "
                 << stringifyStagePhase(producer.getPhase())
                 << ", against the pipeline's direction; the partition is "
                 << "not in program order";
        routes[{producer, static_cast<int64_t>(consumer.getStage())}].insert(
            operand);
      }
    }

    // One name per value, whichever stages it goes to; each producer's
    // transfers follow it in route order.
    llvm::StringSet<> usedNames;
    llvm::DenseMap<Value, StringAttr> nameOf;
    llvm::DenseMap<Operation *, Operation *> lastAfter;
    for (auto &[route, values] : routes) {
      auto [producer, to] = route;
      SmallVector<Attribute> names;
      for (Value value : values) {
        StringAttr &name = nameOf[value];
        if (!name)
          name = StringAttr::get(
              &getContext(),
              uniqueName(producer, cast<OpResult>(value), usedNames));
        names.push_back(name);
      }
      Operation *&after = lastAfter[producer];
      if (!after)
        after = producer;
      OpBuilder builder = OpBuilder::atBlockEnd(&body);
      builder.setInsertionPointAfter(after);
      auto transfer = TransferOp::create(
          builder, producer.getLoc(),
          TypeRange(ValueRange(values.getArrayRef())), producer.getMesh(),
          values.getArrayRef(), producer.getStage(), to,
          builder.getArrayAttr(names));
      after = transfer;
      for (auto [value, received] : llvm::zip(values, transfer.getResults()))
        Value(value).replaceUsesWithIf(received, [&](OpOperand &use) {
          auto consumer = dyn_cast<StageOp>(use.getOwner());
          return consumer && static_cast<int64_t>(consumer.getStage()) == to;
        });
    }
    return success();
  }

  /// A name for `result` on the wire, unique in the program: the node that
  /// computes it (with a `.grad` suffix in the backward phases).
  static std::string uniqueName(StageOp producer, OpResult result,
                                llvm::StringSet<> &used) {
    Value yielded =
        producer.getBody().front().getTerminator()->getOperand(
            result.getResultNumber());
    std::string base = "stage" + std::to_string(producer.getStage());
    if (Operation *def = yielded.getDefiningOp())
      base = getNode(def) ? getNode(def).str()
                          : def->getName().getStringRef().str();
    if (producer.getPhase() != StagePhase::forward)
      base += ".grad";
    std::string name = base;
    for (int suffix = 1; used.contains(name); ++suffix)
      name = base + "." + std::to_string(suffix);
    used.insert(name);
    return name;
  }
};

} // namespace
