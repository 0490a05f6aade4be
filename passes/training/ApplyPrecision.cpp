//===- ApplyPrecision.cpp - pp-apply-precision ----------------------------===//
//
// The mixed-precision policy as casts in the IR. Parameters become f32
// arguments (the master copies the optimizer updates) cast once to the
// compute type; float inputs and labels are cast to it as they arrive;
// every op computes in the widest float type of its operands, so that the
// whole model computes in the compute type unless the model itself casts
// up; ops with ComputesInF32 (softmax, normalization, losses) compute in
// f32 between casts. Values computed from integers and constants alone
// (positions, rotary angles, masks built from indices) are computed in f32
// and converted, saturating, where they meet the compute type, as a model
// converts its rotary tables (`cos.to(x.dtype)`); constants are converted
// at compile time, saturating too, so that a mask's finite minimum stays
// finite. Differentiating afterwards casts each parameter's
// gradient back to f32 (nn.cast's gradient), so gradients are accumulated,
// reduced and applied in f32.
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/training/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/SetVector.h"

#include <cstring>
#include <vector>

namespace pp {
#define GEN_PASS_DEF_APPLYPRECISION
#include "passes/training/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// The element type of `type` when it is one of the float types the policy
/// moves between (f32, bf16, f16), or null: f64 values, which no kernel
/// computes, are left as they are (and refused, naming the op, when
/// lowered), not narrowed behind the model's back.
FloatType floatElementOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto element =
      tensor ? dyn_cast<FloatType>(tensor.getElementType()) : FloatType();
  return element && (element.isF32() || element.isBF16() || element.isF16())
             ? element
             : FloatType();
}

/// `type` (a float tensor) with element type `element`.
Type withElement(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

/// `number` converted to `type`, a finite number beyond its range becoming
/// its largest finite number of the same sign (a mask's
/// `torch.finfo(torch.float32).min` stays a finite minimum).
APFloat convertSaturating(APFloat number, FloatType type) {
  bool finite = number.isFinite(), negative = number.isNegative(), lost;
  number.convert(type.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                 &lost);
  if (finite && number.isInfinity())
    return APFloat::getLargest(type.getFloatSemantics(), negative);
  return number;
}

/// The wider of two float types (f32 over the 16-bit ones).
FloatType wider(FloatType lhs, FloatType rhs) {
  if (!lhs)
    return rhs;
  return rhs && rhs.getWidth() > lhs.getWidth() ? rhs : lhs;
}

class PrecisionPolicy {
public:
  PrecisionPolicy(func::FuncOp main, FloatType compute)
      : main(main), compute(compute), f32(Float32Type::get(main.getContext())),
        builder(main.getContext()) {}

  void apply() {
    // The model's ops, taken before castArguments adds casts: those are
    // final, and retypeModelCast would erase them while createdCasts
    // still lists them (a use after free when apply() ends).
    SmallVector<Operation *> ops;
    for (Operation &op : main.getBody().front().without_terminator())
      ops.push_back(&op);
    castArguments();
    for (Operation *op : ops) {
      if (auto castOp = dyn_cast<nn::CastOp>(op))
        retypeModelCast(castOp);
      else if (!isa<arith::ConstantOp>(op))
        retypeOp(op);
    }
    castResults();
    // Casts nothing reads (a weight only f32 ops read, a loss's way back
    // to the compute type), and constants replaced by converted copies.
    // Latest first: a cast of a cast goes before the cast it reads.
    for (auto *ops : {&createdCasts, &replacedConstants})
      for (Operation *op : llvm::reverse(*ops))
        if (op->use_empty())
          op->erase();
  }

private:
  /// Parameters become f32 master copies; constants (buffers the model
  /// holds, as RoPE's inverse frequencies) are index values; every other
  /// float argument reaches its users in the compute type, through one cast per model node that uses
  /// it (part of that node, so that partitioning keeps a weight's cast, and
  /// its gradient's cast back, with each node that reads it: a tied weight
  /// keeps one gradient part per node).
  void castArguments() {
    Block &entry = main.getBody().front();
    for (BlockArgument arg : entry.getArguments()) {
      if (!floatElementOf(arg.getType()))
        continue;
      if (isModelParameter(main, arg.getArgNumber()) &&
          floatElementOf(arg.getType()) != f32) {
        widenInitialValue(arg.getArgNumber());
        main.setArgAttr(arg.getArgNumber(), kModelDtypeAttrName,
                        TypeAttr::get(floatElementOf(arg.getType())));
        arg.setType(withElement(arg.getType(), f32));
      }
      if (argumentRole(main, arg.getArgNumber()) == kRoleConstant)
        indexValues.insert(arg); // A buffer, as a constant: f32 until used.
      if (floatElementOf(arg.getType()) == compute ||
          indexValues.contains(arg))
        continue;
      SmallVector<Operation *> users(arg.getUsers());
      llvm::sort(users, [](Operation *lhs, Operation *rhs) {
        return lhs->isBeforeInBlock(rhs);
      });
      llvm::DenseMap<Attribute, Value> castPerNode;
      for (Operation *user : users) {
        Value &cast = castPerNode[user->getAttr(kNodeAttrName)];
        if (!cast)
          cast = castBefore(user, arg, compute);
        user->replaceUsesOfWith(arg, cast);
      }
    }
  }

  /// Converts the initial value (`pp.init`) of parameter `index`, a weight
  /// of another float type, to the f32 of its master copy (exactly, from
  /// bf16 and f16).
  void widenInitialValue(unsigned index) {
    auto init =
        main.getArgAttrOfType<DenseResourceElementsAttr>(index, kInitAttrName);
    AsmResourceBlob *blob = init ? init.getRawHandle().getBlob() : nullptr;
    if (!blob)
      return; // None, or elided: pp-emit-package says it is missing.
    FloatType from = floatElementOf(init.getType());
    unsigned width = from.getWidth();
    ArrayRef<char> bytes = blob->getData();
    size_t count = bytes.size() * 8 / width;
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, bytes.data() + i * width / 8, width / 8);
      APFloat value(from.getFloatSemantics(), APInt(width, bits));
      bool lost;
      value.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
      values[i] = value.convertToFloat();
    }
    auto widened = DenseResourceElementsAttr::get(
        cast<ShapedType>(withElement(init.getType(), f32)),
        init.getRawHandle().getKey(),
        HeapAsmResourceBlob::allocateAndCopyWithAlign(
            ArrayRef<char>(reinterpret_cast<const char *>(values.data()),
                           values.size() * sizeof(float)),
            alignof(float)));
    main.setArgAttr(index, kInitAttrName, widened);
  }

  /// A cast of `value` to element type `type` next to `op` (before it, or
  /// after it with `after`) and part of its model node.
  Value castNextTo(Operation *op, bool after, Value value, FloatType type) {
    if (after)
      builder.setInsertionPointAfter(op);
    else
      builder.setInsertionPoint(op);
    auto castOp = nn::CastOp::create(builder, op->getLoc(),
                                     withElement(value.getType(), type), value);
    if (Attribute node = op->getAttr(kNodeAttrName))
      castOp->setAttr(kNodeAttrName, node);
    createdCasts.insert(castOp);
    return castOp;
  }
  /// For `user`, which reads `value`.
  Value castBefore(Operation *user, Value value, FloatType type) {
    return castNextTo(user, /*after=*/false, value, type);
  }
  /// Of a result of `producer`.
  Value castAfter(Operation *producer, Value value, FloatType type) {
    return castNextTo(producer, /*after=*/true, value, type);
  }

  /// A model's own float-to-float cast keeps an upcast to f32 (a model
  /// that computes a statistic in f32 on purpose) and turns a cast to a
  /// 16-bit type into one to the compute type; a cast that no longer
  /// converts anything goes. A cast from an integer gives an index value,
  /// f32.
  void retypeModelCast(nn::CastOp castOp) {
    FloatType to = floatElementOf(castOp.getType());
    if (!to)
      return;
    Value input = castOp.getInput();
    bool fromInteger = !isa<FloatType>(getElementTypeOrSelf(input.getType()));
    FloatType type = fromInteger || to.getWidth() >= 32 ? f32 : compute;
    Value replacement = input;
    if (getElementTypeOrSelf(input.getType()) != type)
      replacement = fromInteger || !indexValues.contains(input)
                        ? castBefore(castOp, input, type)
                        : castedTo(input, type, castOp);
    if (fromInteger)
      indexValues.insert(replacement);
    castOp.getResult().replaceAllUsesWith(replacement);
    castOp.erase();
  }

  /// Whether `op` computes an index value: it has float results and reads
  /// no float value other than constants and index values.
  bool computesIndexValue(Operation *op) {
    auto isFloat = [](Value value) { return bool(floatElementOf(value.getType())); };
    return llvm::any_of(op->getResults(), isFloat) &&
           llvm::all_of(op->getOperands(), [&](Value operand) {
             return !isFloat(operand) ||
                    operand.getDefiningOp<arith::ConstantOp>() ||
                    indexValues.contains(operand);
           });
  }

  /// The float type `op` computes in: f32 for a ComputesInF32 op or one
  /// computing an index value, else the widest of its float operands'
  /// types. Constants and index values do not count (as a Python scalar
  /// does not promote in PyTorch). Null for an op without float values.
  FloatType computeTypeOf(Operation *op) {
    if (op->hasTrait<nn::ComputesInF32>() || computesIndexValue(op))
      return f32;
    FloatType type;
    for (Value operand : op->getOperands())
      if (!operand.getDefiningOp<arith::ConstantOp>() &&
          !indexValues.contains(operand))
        type = wider(type, floatElementOf(operand.getType()));
    return type;
  }

  /// Casts `op`'s float operands to the type it computes in and gives its
  /// float results that type; a ComputesInF32 op's results are cast back
  /// to the compute type for its users, unless they are index values.
  void retypeOp(Operation *op) {
    bool indexValue = computesIndexValue(op);
    bool inF32 = op->hasTrait<nn::ComputesInF32>() && !indexValue;
    FloatType type = computeTypeOf(op);
    if (!type)
      return; // No float value: the op stays as the model made it.
    if (indexValue)
      for (Value result : op->getResults())
        indexValues.insert(result);
    for (OpOperand &operand : op->getOpOperands())
      if (FloatType element = floatElementOf(operand.get().getType());
          element && element != type)
        operand.set(castedTo(operand.get(), type, op));
    for (Value result : op->getResults())
      if (floatElementOf(result.getType()))
        result.setType(withElement(result.getType(), type));
    if (!inF32 || type == compute)
      return;
    for (Value result : op->getResults()) {
      if (!floatElementOf(result.getType()) || result.use_empty())
        continue;
      Value back = castAfter(op, result, compute);
      result.replaceUsesWithIf(back, [&](OpOperand &use) {
        return use.getOwner() != back.getDefiningOp() &&
               !isa<func::ReturnOp>(use.getOwner());
      });
    }
  }

  /// `value` converted to element type `type` for `user`: a constant's
  /// values converted at compile time (saturating), a cast's input when it
  /// has that type (an f32 op reads a parameter's f32 master copy, not its
  /// rounded copy), an index value clamped to `type`'s finite range and
  /// cast, anything else through an nn.cast.
  Value castedTo(Value value, FloatType type, Operation *user) {
    Type target = withElement(value.getType(), type);
    if (auto castOp = value.getDefiningOp<nn::CastOp>())
      if (castOp.getInput().getType() == target)
        return castOp.getInput();
    if (auto constant = value.getDefiningOp<arith::ConstantOp>())
      if (auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue())) {
        builder.setInsertionPoint(constant);
        auto converted = dense.mapValues(type, [&](const APFloat &number) {
          return convertSaturating(number, type).bitcastToAPInt();
        });
        auto narrowed = arith::ConstantOp::create(
            builder, constant.getLoc(), target, cast<TypedAttr>(converted));
        narrowed->setDiscardableAttrs(constant->getDiscardableAttrDictionary());
        replacedConstants.insert(constant);
        return narrowed;
      }
    if (indexValues.contains(value) && type.getWidth() < 32)
      return castBefore(user, clampedTo(value, type, user), type);
    return castBefore(user, value, type);
  }

  /// `value` (f32) clamped, before `user`, to the finite range of `type`,
  /// as part of `user`'s model node.
  Value clampedTo(Value value, FloatType type, Operation *user) {
    builder.setInsertionPoint(user);
    auto bound = [&](bool negative) {
      auto scalar = RankedTensorType::get({}, f32);
      auto constant = arith::ConstantOp::create(
          builder, user->getLoc(),
          DenseFPElementsAttr::get(
              scalar, convertSaturating(APFloat::getLargest(
                                            type.getFloatSemantics(), negative),
                                        f32)));
      return constant.getResult();
    };
    Operation *atLeast =
        nn::MaximumOp::create(builder, user->getLoc(), value, bound(true));
    Operation *atMost = nn::MinimumOp::create(
        builder, user->getLoc(), atLeast->getResult(0), bound(false));
    if (Attribute node = user->getAttr(kNodeAttrName))
      for (Operation *op : {atLeast, atMost, atLeast->getOperand(1).getDefiningOp(),
                            atMost->getOperand(1).getDefiningOp()})
        op->setAttr(kNodeAttrName, node);
    return atMost->getResult(0);
  }

  /// The loss stays f32; outputs keep the types the model declared, cast
  /// back as part of the node that computes them.
  void castResults() {
    auto returnOp =
        cast<func::ReturnOp>(main.getBody().front().getTerminator());
    ArrayRef<Type> declared = main.getFunctionType().getResults();
    for (OpOperand &operand : returnOp->getOpOperands()) {
      FloatType want = floatElementOf(declared[operand.getOperandNumber()]);
      if (auto role = main.getResultAttrOfType<StringAttr>(
              operand.getOperandNumber(), kRoleAttrName);
          role && role.getValue() == kRoleLoss)
        want = f32;
      Value value = operand.get();
      if (!want || floatElementOf(value.getType()) == want)
        continue;
      Operation *producer = value.getDefiningOp();
      operand.set(producer ? castAfter(producer, value, want)
                           : castBefore(returnOp, value, want));
    }
    main.setFunctionType(FunctionType::get(
        main.getContext(), main.getBody().front().getArgumentTypes(),
        returnOp.getOperandTypes()));
  }

  func::FuncOp main;
  FloatType compute, f32;
  OpBuilder builder;
  /// Casts this pass made, and constants whose values castedTo converted:
  /// erased when nothing reads them.
  llvm::SetVector<Operation *> createdCasts, replacedConstants;
  /// Values computed from integers and constants alone, in f32.
  llvm::DenseSet<Value> indexValues;
};

struct ApplyPrecisionPass
    : public pp::impl::ApplyPrecisionBase<ApplyPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    FloatType compute = llvm::StringSwitch<FloatType>(precision)
                            .Case("f32", Float32Type::get(context))
                            .Case("bf16", BFloat16Type::get(context))
                            .Case("fp16", Float16Type::get(context))
                            .Default(FloatType());
    if (!compute) {
      getOperation().emitError("pp-apply-precision: precision '")
          << precision << "' is not one of f32, bf16, fp16";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> program = getProgram(getOperation());
    if (failed(program) || failed(checkFlatProgram(*program)))
      return signalPassFailure();
    PrecisionPolicy(*program, compute).apply();
    if (!compute.isF32())
      getOperation()->setAttr(kPrecisionAttrName,
                              StringAttr::get(context, precision));
  }
};

} // namespace
