//===- MarkOutputs.cpp - pp-mark-outputs ----------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/pp/IR/PPDialect.h"
#include "llvm/ADT/StringSet.h"

namespace pp {
#define GEN_PASS_DEF_MARKOUTPUTS
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

struct MarkOutputsPass : public pp::impl::MarkOutputsBase<MarkOutputsPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> program = getProgram(getOperation());
    if (failed(program))
      return signalPassFailure();
    func::FuncOp main = *program;
    if (main->hasAttr(kLossAttrName)) {
      main.emitError("the program has a loss; a forward-only program keeps "
                     "the model's outputs (compile it without pp-attach-loss)");
      return signalPassFailure();
    }
    if (main.getNumResults() == 0) {
      main.emitError("the model has no outputs to compute");
      return signalPassFailure();
    }
    if (failed(checkBatchDimension(main, microbatchSize, std::nullopt)))
      return signalPassFailure();

    MLIRContext *context = &getContext();
    Builder builder(context);
    SmallVector<Attribute> outputs;
    llvm::StringSet<> seen;
    for (unsigned i = 0; i < main.getNumResults(); ++i) {
      auto name = main.getResultAttrOfType<StringAttr>(i, kNameAttrName);
      std::string output = name ? name.str() : "output_" + std::to_string(i);
      if (!seen.insert(output).second) {
        main.emitError("two outputs of the model are named '")
            << output << "'; a forward-only run writes them by name";
        return signalPassFailure();
      }
      main.setResultAttrs(i, getNameAndRoleAttrs(context, output, kRoleOutput));
      outputs.push_back(builder.getStringAttr(output));
    }
    SmallVector<Attribute> inputs;
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (argumentRole(main, i) == kRoleInput)
        inputs.push_back(builder.getDictionaryAttr(
            {builder.getNamedAttr("name",
                                  builder.getStringAttr(argumentName(main, i))),
             builder.getNamedAttr(
                 "type", TypeAttr::get(main.getArgumentTypes()[i]))}));
    main->setAttr(kForwardOnlyAttrName,
                  builder.getDictionaryAttr(
                      {builder.getNamedAttr("inputs",
                                            builder.getArrayAttr(inputs)),
                       builder.getNamedAttr("outputs",
                                            builder.getArrayAttr(outputs))}));
  }
};

} // namespace
