//===- AttachLoss.cpp - pp-attach-loss ------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace pp {
#define GEN_PASS_DEF_ATTACHLOSS
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

struct AttachLossPass : public pp::impl::AttachLossBase<AttachLossPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> main = getProgram(getOperation());
    if (failed(main))
      return signalPassFailure();
    if (failed(attach(*main)))
      signalPassFailure();
  }

  /// Removes what no longer reaches a result: outputs the loss does not
  /// use and everything computed only for them. Parameters stay arguments
  /// (they keep their values and stay in the checkpoint, as in PyTorch).
  static void eraseDeadOps(Block &body) {
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (isOpTriviallyDead(op))
        op->erase();
  }

  LogicalResult attach(func::FuncOp main) {
    auto [kind, output] = StringRef(loss).split(':');
    if (kind.empty() || output.empty())
      return main.emitError("pp-attach-loss needs loss=KIND:OUTPUT (KIND is "
                            "mse or cross_entropy), got '")
             << loss << "'";
    if (kind != "mse" && kind != "cross_entropy")
      return main.emitError("unknown loss kind '")
             << kind << "'; use mse or cross_entropy";
    if (main->hasAttr(kLossAttrName))
      return main.emitError("the program already has a loss");

    std::optional<unsigned> index;
    SmallVector<std::string> names;
    for (unsigned i = 0; i < main.getNumResults(); ++i) {
      auto name = main.getResultAttrOfType<StringAttr>(i, kNameAttrName);
      names.push_back(name ? name.str() : "#" + std::to_string(i));
      if (name && name.getValue() == output)
        index = i;
    }
    if (!index)
      return main.emitError("the loss is on output '")
             << output << "', but the model has no output of that name; its "
             << "outputs are: " << llvm::join(names, ", ");

    if (failed(checkBatchDimension(main, microbatchSize, *index)))
      return failure();
    auto returnOp =
        cast<func::ReturnOp>(main.getBody().front().getTerminator());
    Value prediction = returnOp.getOperand(*index);
    auto predictionType = cast<RankedTensorType>(prediction.getType());
    OpBuilder builder(returnOp);
    Location loc = NameLoc::get(builder.getStringAttr("loss"), main.getLoc());

    RankedTensorType labelType = predictionType;
    if (kind == "cross_entropy") {
      if (predictionType.getRank() < 1)
        return main.emitError("cross_entropy needs logits of rank 1 or more "
                              "(classes last); output '")
               << output << "' is " << predictionType;
      labelType = RankedTensorType::get(predictionType.getShape().drop_back(),
                                        builder.getI64Type());
    }
    unsigned labelIndex = main.getNumArguments();
    if (failed(main.insertArgument(
            labelIndex, labelType,
            getNameAndRoleAttrs(builder.getContext(),
                                uniqueArgumentName(main, "labels"), kRoleLabel),
            loc)))
      return failure();
    Value labels = main.getArgument(labelIndex);

    Value lossValue;
    if (kind == "mse")
      lossValue = nn::MseLossOp::create(builder, loc, prediction, labels,
                                        nn::LossReduction::sum);
    else
      lossValue = nn::CrossEntropyOp::create(builder, loc, prediction, labels,
                                             nn::LossReduction::sum,
                                             /*ignore_index=*/-100);
    lossValue.getDefiningOp()->setAttr(kNodeAttrName,
                                       builder.getStringAttr("loss"));

    func::ReturnOp::create(builder, returnOp.getLoc(), lossValue);
    returnOp.erase();
    eraseDeadOps(main.getBody().front());
    main.setType(
        builder.getFunctionType(main.getArgumentTypes(), lossValue.getType()));
    main.setResultAttrs(
        0, getNameAndRoleAttrs(builder.getContext(), "loss", kRoleLoss));
    SmallVector<NamedAttribute> lossFields = {
        builder.getNamedAttr("kind", builder.getStringAttr(kind)),
        builder.getNamedAttr("output", builder.getStringAttr(output)),
        builder.getNamedAttr("ignore_index", builder.getI64IntegerAttr(-100))};
    if (kind == "cross_entropy")
      lossFields.push_back(builder.getNamedAttr(
          "classes",
          builder.getI64IntegerAttr(predictionType.getShape().back())));
    main->setAttr(kLossAttrName, builder.getDictionaryAttr(lossFields));
    return success();
  }
};

} // namespace
