//===- LowerToRuntime.cpp - pp-lower-to-runtime ---------------------------===//
//
// Every value becomes a `pp_tensor*` that the generated code owns: kernels
// return new tensors, `pp_frame_result` takes ownership of a result, and
// every other owned tensor is destroyed right after its last use. Arguments
// are borrowed from the frame.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "dialects/pp/IR/PPOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdio>

namespace pp {
#define GEN_PASS_DEF_LOWERTORUNTIME
#include "passes/codegen/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// Lowers one stage function.
class StageLowering {
public:
  StageLowering(func::FuncOp source, StringRef kernelPrefix)
      : source(source), builder(source), prefix(kernelPrefix.str()) {
    MLIRContext *context = source.getContext();
    framePtr =
        emitc::PointerType::get(emitc::OpaqueType::get(context, "pp_frame"));
    tensorPtr =
        emitc::PointerType::get(emitc::OpaqueType::get(context, "pp_tensor"));
  }

  LogicalResult lower() {
    auto function =
        func::FuncOp::create(builder, source.getLoc(), source.getSymName(),
                             builder.getFunctionType({framePtr}, {}));
    for (StringRef name : {kStageAttrName, kPhaseAttrName})
      if (Attribute attr = source->getAttr(name))
        function->setAttr(name, attr);
    Block *entry = function.addEntryBlock();
    frame = entry->getArgument(0);
    builder.setInsertionPointToEnd(entry);

    Block &body = source.getBody().front();
    for (BlockArgument arg : body.getArguments())
      values[arg] = call("pp_frame_arg", {}, {integer(arg.getArgNumber())});
    for (Operation &op : body.without_terminator())
      if (failed(lowerOp(&op)))
        return failure();
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    llvm::DenseSet<Value> given;
    for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
      Value tensor = values[value];
      // A result owns its tensor: hand over a copy of borrowed or repeated
      // ones.
      if (isa<BlockArgument>(value) || !given.insert(value).second)
        tensor = call(prefix + "copy", {tensor}, {});
      else
        owned.remove(value);
      callVoid("pp_frame_result", {tensor},
               {integer(static_cast<int64_t>(index))});
    }
    func::ReturnOp::create(builder, source.getLoc());
    releaseAfterLastUse();
    source.erase();
    return success();
  }

private:
  /// A literal argument printed as written.
  Attribute literal(const Twine &text) {
    return emitc::OpaqueAttr::get(builder.getContext(), text.str());
  }
  Attribute integer(int64_t value) { return literal(Twine(value)); }
  Attribute boolean(bool value) { return literal(value ? "1" : "0"); }
  Attribute stringLiteral(StringRef text) {
    std::string escaped;
    llvm::raw_string_ostream os(escaped);
    os << '"';
    llvm::printEscapedString(text, os);
    os << '"';
    return literal(escaped);
  }
  /// `rank, dims` as two literal arguments.
  SmallVector<Attribute> shapeLiterals(ArrayRef<int64_t> shape) {
    std::string dims = "nullptr";
    if (!shape.empty())
      dims = "std::array<int64_t, " + std::to_string(shape.size()) + ">{" +
             llvm::join(llvm::map_range(
                            shape, [](int64_t d) { return std::to_string(d); }),
                        ", ") +
             "}.data()";
    return {integer(static_cast<int64_t>(shape.size())), literal(dims)};
  }
  Attribute dtypeLiteral(Type elementType) {
    return literal(elementType.isF32() ? "PP_DTYPE_F32" : "PP_DTYPE_I64");
  }
  static std::string floatLiteral(float value) {
    // Hexadecimal floats are exact.
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%af", static_cast<double>(value));
    return buffer;
  }

  /// Calls `callee(frame, operands..., literals...)`.
  Operation *emitCall(StringRef callee, ValueRange operands,
                      ArrayRef<Attribute> literals, TypeRange results) {
    SmallVector<Value> allOperands = {frame};
    llvm::append_range(allOperands, operands);
    SmallVector<Attribute> args;
    for (size_t i = 0; i < allOperands.size(); ++i)
      args.push_back(builder.getIndexAttr(i));
    llvm::append_range(args, literals);
    return emitc::CallOpaqueOp::create(builder, source.getLoc(), results,
                                       callee, allOperands,
                                       builder.getArrayAttr(args));
  }
  Value call(StringRef callee, ValueRange operands,
             ArrayRef<Attribute> literals) {
    return emitCall(callee, operands, literals, tensorPtr)->getResult(0);
  }
  void callVoid(StringRef callee, ValueRange operands,
                ArrayRef<Attribute> literals) {
    emitCall(callee, operands, literals, {});
  }

  /// Maps `result` to a new tensor from `callee`, owned by the code.
  void define(Value result, StringRef callee, ValueRange operands,
              ArrayRef<Attribute> literals = {}) {
    SmallVector<Value> mapped;
    for (Value operand : operands)
      mapped.push_back(values.lookup(operand));
    values[result] = call(prefix + callee.str(), mapped, literals);
    owned.insert(result);
  }

  LogicalResult lowerOp(Operation *op) {
    auto reduction = [&](nn::LossReduction kind) {
      return literal(Twine(static_cast<int>(kind)));
    };
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](nn::MatmulOp matmul) {
          define(matmul, "matmul", {matmul.getLhs(), matmul.getRhs()},
                 {boolean(matmul.getTransposeLhs()),
                  boolean(matmul.getTransposeRhs())});
          return success();
        })
        .Case([&](nn::AddOp add) {
          define(add, "add", add->getOperands());
          return success();
        })
        .Case([&](nn::SubOp sub) {
          define(sub, "sub", sub->getOperands());
          return success();
        })
        .Case([&](nn::MulOp mul) {
          define(mul, "mul", mul->getOperands());
          return success();
        })
        .Case<nn::NegOp, nn::ReluOp, nn::SigmoidOp, nn::TanhOp, nn::ReluGradOp,
              nn::SigmoidGradOp, nn::TanhGradOp>([&](Operation *unary) {
          StringRef name = unary->getName().stripDialect();
          define(unary->getResult(0), name, unary->getOperands());
          return success();
        })
        .Case([&](nn::ReshapeOp reshape) {
          define(reshape, "reshape", reshape.getInput(),
                 shapeLiterals(reshape.getShape()));
          return success();
        })
        .Case([&](nn::SumToOp sumTo) {
          define(sumTo, "sum_to", sumTo.getInput(),
                 shapeLiterals(sumTo.getShape()));
          return success();
        })
        .Case([&](nn::MseLossOp mse) {
          define(mse, "mse_loss", mse->getOperands(),
                 {reduction(mse.getReduction())});
          return success();
        })
        .Case([&](nn::MseLossGradOp mse) {
          define(mse, "mse_loss_grad", mse->getOperands(),
                 {reduction(mse.getReduction())});
          return success();
        })
        .Case([&](nn::CrossEntropyOp ce) {
          define(ce, "cross_entropy", ce->getOperands(),
                 {reduction(ce.getReduction()),
                  integer(static_cast<int64_t>(ce.getIgnoreIndex()))});
          return success();
        })
        .Case([&](nn::CrossEntropyGradOp ce) {
          define(ce, "cross_entropy_grad", ce->getOperands(),
                 {reduction(ce.getReduction()),
                  integer(static_cast<int64_t>(ce.getIgnoreIndex()))});
          return success();
        })
        .Case(
            [&](arith::ConstantOp constant) { return lowerConstant(constant); })
        .Case([&](SendOp send) {
          for (auto [value, name] :
               llvm::zip(send.getValues(), send.getNames()))
            callVoid("pp_frame_send", values.lookup(value),
                     {integer(static_cast<int64_t>(send.getTo())),
                      stringLiteral(cast<StringAttr>(name).getValue())});
          return success();
        })
        .Case([&](RecvOp recv) {
          for (auto [result, name] :
               llvm::zip(recv.getResults(), recv.getNames())) {
            auto type = cast<RankedTensorType>(result.getType());
            SmallVector<Attribute> literals = {
                integer(static_cast<int64_t>(recv.getFrom())),
                stringLiteral(cast<StringAttr>(name).getValue()),
                dtypeLiteral(type.getElementType())};
            llvm::append_range(literals, shapeLiterals(type.getShape()));
            values[result] = call("pp_frame_recv", {}, literals);
            owned.insert(result);
          }
          return success();
        })
        .Default([&](Operation *) {
          return op->emitOpError("has no runtime kernel yet");
        });
  }

  LogicalResult lowerConstant(arith::ConstantOp constant) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    auto type = cast<RankedTensorType>(constant.getType());
    if (!dense || !type.getElementType().isF32())
      return constant.emitOpError(
          "only f32 tensor constants have a runtime kernel yet");
    SmallVector<Attribute> literals;
    if (dense.isSplat()) {
      literals.push_back(literal(floatLiteral(dense.getSplatValue<float>())));
      llvm::append_range(literals, shapeLiterals(type.getShape()));
      define(constant, "fill_f32", {}, literals);
      return success();
    }
    llvm::append_range(literals, shapeLiterals(type.getShape()));
    std::string data =
        "std::array<float, " + std::to_string(type.getNumElements()) + ">{" +
        llvm::join(llvm::map_range(dense.getValues<float>(), floatLiteral),
                   ", ") +
        "}.data()";
    literals.push_back(literal(data));
    define(constant, "constant_f32", {}, literals);
    return success();
  }

  /// Destroys each owned tensor after the call that uses it last (right
  /// after its definition when nothing uses it).
  void releaseAfterLastUse() {
    for (Value value : owned) {
      Value tensor = values[value];
      Operation *last = tensor.getDefiningOp();
      for (Operation *user : tensor.getUsers())
        if (last->isBeforeInBlock(user))
          last = user;
      builder.setInsertionPointAfter(last);
      callVoid("pp_frame_release", tensor, {});
    }
  }

  func::FuncOp source;
  OpBuilder builder;
  std::string prefix;
  Type framePtr, tensorPtr;
  Value frame;
  llvm::DenseMap<Value, Value> values;
  llvm::SetVector<Value> owned;
};

struct LowerToRuntimePass
    : public pp::impl::LowerToRuntimeBase<LowerToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(lowerStagesToRuntime(getOperation(), target)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult pp::lowerStagesToRuntime(ModuleOp module, StringRef target) {
  if (target != "cpu" && target != "cuda")
    return module.emitError("unknown target '")
           << target << "'; use cpu or cuda";
  SmallVector<func::FuncOp> stages;
  for (auto function : module.getOps<func::FuncOp>())
    if (function->hasAttr(kStageAttrName))
      stages.push_back(function);
  if (stages.empty())
    return module.emitError("no stage functions to lower; run "
                            "pp-outline-stages first");
  std::string prefix = ("pp_" + target + "_").str();
  for (func::FuncOp function : stages)
    if (failed(StageLowering(function, prefix).lower()))
      return failure();
  return success();
}
