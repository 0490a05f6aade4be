//===- InsertSendRecv.cpp - pp-insert-send-recv ---------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/pipeline/Passes.h"

#include "dialects/pp/IR/PPOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

namespace pp {
#define GEN_PASS_DEF_INSERTSENDRECV
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// Values that travel from one stage to another in one phase.
struct Route {
  int64_t from;
  int64_t to;
  bool backward;
  auto key() const { return std::make_tuple(from, to, backward); }
  bool operator<(const Route &other) const { return key() < other.key(); }
};

struct InsertSendRecvPass
    : public pp::impl::InsertSendRecvBase<InsertSendRecvPass> {
  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main) || failed(insert(*main)))
      signalPassFailure();
  }

  LogicalResult insert(func::FuncOp main) {
    Block &body = main.getBody().front();
    auto mesh = getOperation().lookupSymbol<MeshOp>(kPipelineMeshName);
    if (!mesh)
      return main.emitError("no pipeline mesh @")
             << kPipelineMeshName << "; run pp-partition first";

    // Every value with uses on another stage, grouped by route in program
    // order; the last op of each stage and phase, where its transfers go.
    std::map<Route, SmallVector<Value>> routes;
    std::map<std::pair<int64_t, bool>, Operation *> lastOfStage;
    SmallVector<Route> routeOrder;
    for (Operation &op : body.without_terminator()) {
      if (isa<TransferOp>(op))
        return main.emitError("the program already has pp.transfer ops");
      std::optional<int64_t> from = getStage(&op);
      if (!from)
        return op.emitOpError("has no pp.stage; run pp-partition first");
      lastOfStage[{*from, isBackward(&op)}] = &op;
      for (Value result : op.getResults()) {
        llvm::SmallSetVector<int64_t, 4> targets;
        for (Operation *user : result.getUsers())
          if (std::optional<int64_t> to = getStage(user); to && *to != *from)
            targets.insert(*to);
        for (int64_t to : targets) {
          Route route{*from, to, isBackward(&op)};
          if (route.backward ? to > *from : to < *from)
            return op.emitOpError("sends a ")
                   << (route.backward ? "gradient to later"
                                      : "value to earlier")
                   << " stage " << to << " from stage " << *from
                   << "; the partition is not in program order";
          if (!routes.count(route))
            routeOrder.push_back(route);
          routes[route].push_back(result);
        }
      }
    }

    llvm::StringSet<> usedNames;
    llvm::DenseMap<Value, StringAttr> nameOf;
    for (const Route &route : routeOrder) {
      SmallVector<Value> &values = routes[route];
      SmallVector<Attribute> names;
      for (Value value : values) {
        StringAttr &name = nameOf[value];
        if (!name)
          name = StringAttr::get(&getContext(), uniqueName(value, usedNames));
        names.push_back(name);
      }
      Operation *sender = lastOfStage[{route.from, route.backward}];
      OpBuilder builder(sender->getContext());
      builder.setInsertionPointAfter(sender);
      auto transfer = TransferOp::create(
          builder, values.front().getLoc(), TypeRange(ValueRange(values)),
          FlatSymbolRefAttr::get(mesh.getSymNameAttr()), values,
          builder.getI64IntegerAttr(route.from),
          builder.getI64IntegerAttr(route.to), builder.getArrayAttr(names));
      if (route.backward)
        setBackward(transfer);
      for (auto [value, received] : llvm::zip(values, transfer.getResults()))
        value.replaceUsesWithIf(received, [&](OpOperand &use) {
          return getStage(use.getOwner()) == route.to;
        });
    }
    return success();
  }

  /// A name for `value` on the wire, unique in the program: the node that
  /// produces it (with a `.grad` suffix for gradients).
  static std::string uniqueName(Value value, llvm::StringSet<> &used) {
    Operation *def = value.getDefiningOp();
    StringAttr node = getNode(def);
    std::string base = node ? node.str() : def->getName().getStringRef().str();
    if (isBackward(def))
      base += ".grad";
    std::string name = base;
    for (int suffix = 1; used.contains(name); ++suffix)
      name = base + "." + std::to_string(suffix);
    used.insert(name);
    return name;
  }
};

} // namespace
