//===- LowerToRuntime.cpp - pp-lower-to-runtime ---------------------------===//
//
// Every value becomes a `pp_tensor*` that the generated code owns: kernels
// return new tensors, `pp_frame_result` takes ownership of a result, and
// every other owned tensor is destroyed right after its last use. Arguments
// are borrowed from the frame. Every kernel call and message is bracketed
// by pp_frame_profile_begin/end, which time it when the runtime profiles.
// An nn.fusion becomes a generated function (FusedLoops.h), defined before
// the stage function and called like a kernel. Each lowered function
// carries its memory plan (pp.memory_plan): where in one arena each tensor
// it allocates lives (MemoryPlan.h).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/CppLiterals.h"
#include "passes/codegen/FusedLoops.h"
#include "passes/codegen/MemoryPlan.h"
#include "passes/codegen/Passes.h"
#include "passes/codegen/RuntimeDtype.h"
#include "passes/pipeline/CostModel.h"
#include "runtime/kernels/CollectiveAxes.h"
#include "runtime/kernels/ProfileCategory.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "dialects/pp/IR/PPOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace pp {
#define GEN_PASS_DEF_LOWERTORUNTIME
#include "passes/codegen/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// An argument of a runtime call: a tensor value or a literal.
using KernelArgument = llvm::PointerUnion<Value, Attribute>;

/// The inherent attribute of ops with optional operands.
constexpr llvm::StringLiteral kOperandSegments = "operandSegmentSizes";

/// Lowers one stage function.
/// The functions generated for a module's nn.fusion ops: each one's code,
/// written with kFusionNamePlaceholder for its name, to that name. Equal
/// fusions (a model's layers repeat theirs) share one function, so the
/// generated code grows with the distinct fusions, not the layers.
using FusionFunctions = llvm::StringMap<std::string>;

/// What writeFusedLoop writes for the function's name, replaced by the
/// name the fusion's first occurrence gives it.
constexpr llvm::StringLiteral kFusionNamePlaceholder = "pp_fusion_name_";

/// The profile category of a call, from lowering to bracketing: an
/// attribute rather than a map of the calls, whose addresses a call made
/// and erased in between could reuse.
constexpr llvm::StringLiteral kProfileCategoryAttrName = "pp.profile_category";

class StageLowering {
public:
  StageLowering(func::FuncOp source, StringRef target,
                FusionFunctions &fusionFunctions)
      : source(source), builder(source), target(target.str()),
        prefix(("pp_" + target + "_").str()),
        fusionFunctions(fusionFunctions) {
    MLIRContext *context = source.getContext();
    framePtr =
        emitc::PointerType::get(emitc::OpaqueType::get(context, "pp_frame"));
    tensorPtr =
        emitc::PointerType::get(emitc::OpaqueType::get(context, "pp_tensor"));
  }

  LogicalResult lower() {
    // The fused loops' functions go before the stage function's marker.
    // CUDA's device compiler needs only the kernels: the stage function is
    // host code it need not parse (cicc took a minute over a 20,000-node
    // model's).
    bool cuda = target == "cuda";
    marker = emitc::VerbatimOp::create(
        builder, source.getLoc(),
        cuda ? "#ifndef __CUDA_ARCH__\nPP_STAGE_FUNCTION" : "PP_STAGE_FUNCTION");
    auto function =
        func::FuncOp::create(builder, source.getLoc(), source.getSymName(),
                             builder.getFunctionType({framePtr}, {}));
    if (cuda)
      emitc::VerbatimOp::create(builder, source.getLoc(),
                                "#endif // __CUDA_ARCH__");
    for (StringRef name : {kStageAttrName, kPhaseAttrName})
      if (Attribute attr = source->getAttr(name))
        function->setAttr(name, attr);
    lowered = function;
    Block *entry = function.addEntryBlock();
    frame = entry->getArgument(0);
    builder.setInsertionPointToEnd(entry);

    Block &body = source.getBody().front();
    for (BlockArgument arg : body.getArguments())
      values[arg] = call("pp_frame_arg", {}, {integer(arg.getArgNumber())});
    for (Operation &op : body.without_terminator()) {
      Operation *before = entry->empty() ? nullptr : &entry->back();
      if (failed(lowerOp(&op)))
        return failure();
      categorizeCalls(before, entry, profileCategory(&op));
    }
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    llvm::DenseSet<Value> given;
    SmallVector<std::pair<Value, int64_t>> results;
    for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
      // Added into its sum by the kernel that computed it.
      if (addedIntoSums.contains(index))
        continue;
      Value tensor = tensorOf(value);
      if (!tensor)
        return failure();
      // A result owns its tensor: hand over a copy of borrowed or repeated
      // ones.
      if (!owned.contains(tensor) || !given.insert(tensor).second) {
        tensor = call(prefix + "copy", {tensor}, {});
        allocationBytes[tensor] = bytesOf(value.getType());
      } else
        owned.remove(tensor);
      results.emplace_back(tensor, static_cast<int64_t>(index));
    }
    func::ReturnOp::create(builder, source.getLoc());
    handOverAfterLastUse(results);
    releaseAfterLastUse();
    attachMemoryPlan(function);
    bracketForProfile(function);
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
  /// A C++ string literal of the bytes of `text` (any bytes: UTF-8 names
  /// too). Printable ASCII stays as it is; every other byte, the quote, the
  /// backslash and '?' (trigraphs) become three-digit octal escapes, which
  /// never run into the next character as hex escapes would.
  Attribute stringLiteral(StringRef text) {
    std::string escaped = "\"";
    for (unsigned char c : text) {
      if (llvm::isPrint(c) && c != '"' && c != '\\' && c != '?') {
        escaped += static_cast<char>(c);
        continue;
      }
      escaped += '\\';
      for (int shift : {6, 3, 0})
        escaped += static_cast<char>('0' + ((c >> shift) & 7));
    }
    escaped += '"';
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
  /// The pp_dtype of a tensor the runtime receives; an error for element
  /// types the runtime has no dtype for.
  FailureOr<Attribute> dtypeLiteral(Operation *op, RankedTensorType type) {
    std::optional<RuntimeDtype> dtype = getRuntimeDtype(type.getElementType());
    if (!dtype) {
      op->emitOpError("moves a tensor of type ")
          << type << ", whose element type the runtime has no dtype for ("
          << runtimeDtypeNames() << ")";
      return failure();
    }
    return literal(dtype->enumerator);
  }
  /// A C++ expression of the integer `value`: 0 or 1 for an i1, else
  /// signed (the most negative value has no literal).
  static std::string integerLiteral(const APInt &value) {
    if (value.getBitWidth() == 1)
      return value.isZero() ? "0" : "1";
    if (value.isMinSignedValue())
      return "(" + std::to_string(value.getSExtValue() + 1) + " - 1)";
    return std::to_string(value.getSExtValue());
  }

  /// Calls `callee(frame, arguments...)`.
  Operation *emitCall(StringRef callee, ArrayRef<KernelArgument> arguments,
                      TypeRange results) {
    SmallVector<Value> operands = {frame};
    SmallVector<Attribute> args = {builder.getIndexAttr(0)};
    for (const KernelArgument &argument : arguments) {
      if (auto value = dyn_cast<Value>(argument)) {
        args.push_back(builder.getIndexAttr(operands.size()));
        operands.push_back(value);
      } else {
        args.push_back(cast<Attribute>(argument));
      }
    }
    return emitc::CallOpaqueOp::create(builder, source.getLoc(), results,
                                       callee, operands,
                                       builder.getArrayAttr(args));
  }
  /// Calls `callee(frame, operands..., literals...)`.
  Operation *emitCall(StringRef callee, ValueRange operands,
                      ArrayRef<Attribute> literals, TypeRange results) {
    SmallVector<KernelArgument> arguments(operands.begin(), operands.end());
    arguments.append(literals.begin(), literals.end());
    return emitCall(callee, arguments, results);
  }
  Value call(StringRef callee, ValueRange operands,
             ArrayRef<Attribute> literals) {
    return emitCall(callee, operands, literals, tensorPtr)->getResult(0);
  }
  void callVoid(StringRef callee, ValueRange operands,
                ArrayRef<Attribute> literals) {
    emitCall(callee, operands, literals, {});
  }

  /// Records that the code allocates `tensor`, of `type`, and must release
  /// it.
  void own(Value tensor, Type type) {
    owned.insert(tensor);
    allocationBytes[tensor] = bytesOf(type);
  }

  /// The tensor of `value`. Constants become tensors at their first use,
  /// one per distinct value, so that the code does not depend on where
  /// upstream passes put or merge constants. Null after an error.
  Value tensorOf(Value value) {
    if (Value tensor = values.lookup(value))
      return tensor;
    auto constant = value.getDefiningOp<arith::ConstantOp>();
    if (!constant)
      return Value();
    Value &tensor = constantTensors[constant.getValue()];
    if (!tensor) {
      FailureOr<Value> made = lowerConstant(constant);
      if (failed(made))
        return Value();
      tensor = *made;
      own(tensor, value.getType());
    }
    values[value] = tensor;
    return tensor;
  }

  /// The index of the gradient result that `op`'s only result is, when
  /// its kernel can add it into the step's sum instead of making it: an
  /// f32 nn.gather_grad (a token embedding's), or an nn.matmul of 2-D f32
  /// matrices (a weight's), whose result nothing else reads.
  std::optional<unsigned> gradientResultToAdd(Operation *op) {
    auto isF32 = [](Value value, int64_t rank) {
      auto type = cast<RankedTensorType>(value.getType());
      return type.getElementType().isF32() &&
             (rank < 0 || type.getRank() == rank);
    };
    bool addable = llvm::TypeSwitch<Operation *, bool>(op)
                       .Case([&](nn::GatherGradOp gatherGrad) {
                         return isF32(gatherGrad.getGrad(), -1) &&
                                isF32(gatherGrad.getResult(), -1);
                       })
                       .Case([&](nn::MatmulOp matmul) {
                         return isF32(matmul.getLhs(), 2) &&
                                isF32(matmul.getRhs(), 2) &&
                                isF32(matmul.getResult(), 2);
                       })
                       .Default([](Operation *) { return false; });
    if (!addable)
      return std::nullopt;
    return gradientResultOf(op->getResult(0));
  }

  /// The index of the gradient result that `value` is and nothing else
  /// reads, or nullopt.
  std::optional<unsigned> gradientResultOf(Value value) {
    if (!value.hasOneUse() ||
        !isa<func::ReturnOp>(value.use_begin()->getOwner()))
      return std::nullopt;
    unsigned index = value.use_begin()->getOperandNumber();
    auto role = source.getResultAttrOfType<StringAttr>(index, kRoleAttrName);
    if (!role || role.getValue() != "gradient")
      return std::nullopt;
    return index;
  }

  /// Where an nn.linear_cross_entropy_grad's weight and bias gradients go
  /// when its kernel can add them into the step's sums: each one's gradient
  /// result index, or nullopt for one that nothing reads (a frozen
  /// parameter, or no bias). nullopt when one is read by anything but the
  /// return of a gradient result.
  using HeadSums = std::pair<std::optional<unsigned>, std::optional<unsigned>>;
  std::optional<HeadSums> headGradientResults(nn::LinearCrossEntropyGradOp op) {
    HeadSums sums;
    for (auto [value, index] :
         {std::make_pair(op.getWeightGrad(), &sums.first),
          std::make_pair(op.getBiasGrad(), &sums.second)}) {
      if (!value || value.use_empty())
        continue;
      *index = gradientResultOf(value);
      if (!*index)
        return std::nullopt;
    }
    return sums;
  }

  /// The sum of gradient result `index`, of `type`, that
  /// pp_frame_gradient_sum lends.
  Value gradientSum(unsigned index, Type type) {
    SmallVector<Attribute> literals = {integer(index)};
    llvm::append_range(literals,
                       shapeLiterals(cast<RankedTensorType>(type).getShape()));
    return call("pp_frame_gradient_sum", {}, literals);
  }

  /// An nn.linear_cross_entropy_grad whose weight and bias gradients are
  /// gradient results `weight` and `bias` (nullopt: none, as for a frozen
  /// parameter): pp_<target>_linear_cross_entropy_grad_add adds them into
  /// the sums pp_frame_gradient_sum lends (NULL for none) and returns the
  /// hidden states' gradient.
  LogicalResult lowerHeadGradientAdded(nn::LinearCrossEntropyGradOp op,
                                       std::optional<unsigned> weight,
                                       std::optional<unsigned> bias) {
    FailureOr<SmallVector<KernelArgument>> arguments = kernelArguments(op);
    if (failed(arguments))
      return failure();
    auto sumOf = [&](std::optional<unsigned> index, Value result) {
      return index ? KernelArgument(gradientSum(*index, result.getType()))
                   : KernelArgument(literal("nullptr"));
    };
    arguments->insert(arguments->begin(), sumOf(bias, op.getBiasGrad()));
    arguments->insert(arguments->begin(), sumOf(weight, op.getWeightGrad()));
    Value hiddenGrad = op.getHiddenGrad();
    values[hiddenGrad] =
        emitCall((prefix + op->getName().stripDialect() + "_add").str(),
                 *arguments, tensorPtr)
            ->getResult(0);
    own(values[hiddenGrad], hiddenGrad.getType());
    for (std::optional<unsigned> index : {weight, bias})
      if (index) {
        callVoid("pp_frame_gradient_added", {}, {integer(*index)});
        addedIntoSums.insert(*index);
      }
    return success();
  }

  /// `op`'s result added into gradient result `index`'s sum:
  /// pp_frame_gradient_sum lends the sum, the op's `_add` kernel adds into
  /// it, and pp_frame_gradient_added says so.
  LogicalResult lowerAddedIntoSum(Operation *op, unsigned index) {
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      operands.push_back(tensorOf(operand));
      if (!operands.back())
        return failure();
    }
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<Attribute> literals = {integer(index)};
    llvm::append_range(literals, shapeLiterals(type.getShape()));
    operands.insert(operands.begin(),
                    call("pp_frame_gradient_sum", {}, literals));
    SmallVector<Attribute> flags =
        llvm::TypeSwitch<Operation *, SmallVector<Attribute>>(op)
            .Case([&](nn::GatherGradOp gatherGrad) {
              return SmallVector<Attribute>{integer(gatherGrad.getAxis())};
            })
            .Case([&](nn::MatmulOp matmul) {
              return SmallVector<Attribute>{boolean(matmul.getTransposeLhs()),
                                            boolean(matmul.getTransposeRhs())};
            })
            .Default([](Operation *) { return SmallVector<Attribute>(); });
    callVoid((prefix + op->getName().stripDialect() + "_add").str(), operands,
             flags);
    callVoid("pp_frame_gradient_added", {}, {integer(index)});
    addedIntoSums.insert(index);
    return success();
  }

  LogicalResult lowerOp(Operation *op) {
    if (std::optional<unsigned> index = gradientResultToAdd(op))
      return lowerAddedIntoSum(op, *index);
    if (auto headGrad = dyn_cast<nn::LinearCrossEntropyGradOp>(op))
      if (auto indices = headGradientResults(headGrad))
        return lowerHeadGradientAdded(headGrad, indices->first,
                                      indices->second);
    if (auto crossEntropyGrad = dyn_cast<nn::CrossEntropyGradOp>(op))
      if (std::optional<unsigned> arg = logitsToOverwrite(crossEntropyGrad))
        return lowerCrossEntropyGradInPlace(crossEntropyGrad, *arg);
    if (auto reshape = dyn_cast<nn::ReshapeOp>(op);
        reshape && reshapesInPlace(reshape)) {
      lowerReshapeInPlace(reshape);
      return success();
    }
    if (op->hasTrait<nn::HasRuntimeKernel>() ||
        op->hasTrait<CollectiveKernel>())
      return lowerKernelCall(op);
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](arith::ConstantOp) { return success(); }) // See tensorOf.
        .Case([&](nn::FusionOp fusion) { return lowerFusion(fusion); })
        .Case([&](SendOp send) -> LogicalResult {
          for (auto [value, name] :
               llvm::zip(send.getValues(), send.getNames())) {
            Value tensor = tensorOf(value);
            if (!tensor)
              return failure();
            callVoid("pp_frame_send", tensor,
                     {integer(static_cast<int64_t>(send.getTo())),
                      stringLiteral(cast<StringAttr>(name).getValue())});
          }
          return success();
        })
        .Case([&](RecvOp recv) -> LogicalResult {
          for (auto [result, name] :
               llvm::zip(recv.getResults(), recv.getNames())) {
            auto type = dyn_cast<RankedTensorType>(result.getType());
            if (!type)
              return recv.emitOpError("receives ")
                     << result.getType() << "; messages are ranked tensors";
            FailureOr<Attribute> dtype = dtypeLiteral(recv, type);
            if (failed(dtype))
              return failure();
            SmallVector<Attribute> literals = {
                integer(static_cast<int64_t>(recv.getFrom())),
                stringLiteral(cast<StringAttr>(name).getValue()), *dtype};
            llvm::append_range(literals, shapeLiterals(type.getShape()));
            values[result] = call("pp_frame_recv", {}, literals);
            own(values[result], type);
          }
          return success();
        })
        .Default([&](Operation *) {
          return op->emitOpError(
              "has no runtime kernel: give it the NN_HasRuntimeKernel trait "
              "in its ODS definition and write pp_cpu_/pp_cuda_ kernels "
              "(docs/development.md, \"Adding an op\")");
        });
  }

  /// `pp_<target>_<mnemonic>(frame, operands..., attributes...)`, the call
  /// an op's definition implies: operands in order (an absent optional one
  /// is NULL), then its inherent attributes sorted by name (an absent one is
  /// a unit flag: 0), then, for an op with several results, the index of the
  /// result the call computes (or an array the kernel fills with all of
  /// them: nn::KernelMakesAllResults). An op whose only operand is variadic (it
  /// has no operand segment sizes) passes its tensors as a count and an array.
  /// A collective (pp::CollectiveKernel) passes no `mesh` (the frame's) and
  /// its `axes` as a key (collectiveAxesKey): its kernel runs over the
  /// frame's group of those axes.
  LogicalResult lowerKernelCall(Operation *op) {
    FailureOr<SmallVector<KernelArgument>> arguments = kernelArguments(op);
    if (failed(arguments))
      return failure();
    std::string callee = prefix + op->getName().stripDialect().str();
    if (op->hasTrait<nn::KernelMakesAllResults>()) {
      emitArrayResultCall(op, callee, *arguments);
      return success();
    }
    for (OpResult result : op->getResults()) {
      SmallVector<KernelArgument> resultArguments = *arguments;
      if (op->getNumResults() > 1)
        resultArguments.push_back(integer(result.getResultNumber()));
      values[result] =
          emitCall(callee, resultArguments, tensorPtr)->getResult(0);
      own(values[result], result.getType());
    }
    return success();
  }

  /// One operand segment per operand of `op`, and an empty one (a NULL
  /// argument) for an absent trailing optional operand, which ODS records
  /// in no segment sizes where it is an op's only optional operand (the
  /// bias of an LM head's fused loss and its gradients).
  static SmallVector<int32_t> trailingOptionalSegments(Operation *op) {
    SmallVector<int32_t> segments(op->getNumOperands(), 1);
    auto withBias = [&](auto fused) {
      if (!fused.getBias())
        segments.push_back(0);
    };
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](nn::LinearCrossEntropyOp fused) { withBias(fused); })
        .Case([&](nn::LinearCrossEntropyGradOp fused) { withBias(fused); })
        .Case(
            [&](nn::LinearCrossEntropyHiddenGradOp fused) { withBias(fused); });
    return segments;
  }

  /// The arguments of `op`'s kernel call, as lowerKernelCall describes
  /// them (but the result index).
  FailureOr<SmallVector<KernelArgument>> kernelArguments(Operation *op) {
    if (std::string problem = kernelElementTypeProblem(op); !problem.empty()) {
      // Where: the stage function, and the model node when known.
      StringAttr node = op->getAttrOfType<StringAttr>(kNodeAttrName);
      return op->emitError()
             << source.getSymName() << ", "
             << (node ? "node '" + node.getValue().str() + "': " : "")
             << problem;
    }
    SmallVector<KernelArgument> arguments;
    SmallVector<int32_t> segments = trailingOptionalSegments(op);
    if (auto sizes = op->getAttrOfType<DenseI32ArrayAttr>(kOperandSegments)) {
      segments.assign(sizes.asArrayRef().begin(), sizes.asArrayRef().end());
    } else if (op->hasTrait<OpTrait::VariadicOperands>()) {
      if (failed(appendTensorArray(op, arguments)))
        return failure();
      segments.clear();
    }
    unsigned next = 0;
    for (int32_t size : segments) {
      if (size > 1)
        return op->emitOpError("has a variadic operand; kernels take a fixed "
                               "number of tensors");
      if (size == 0)
        arguments.push_back(literal("nullptr"));
      else if (Value tensor = tensorOf(op->getOperand(next++)))
        arguments.push_back(tensor);
      else
        return failure();
    }
    bool collective = op->hasTrait<CollectiveKernel>();
    for (StringAttr name : op->getName().getAttributeNames()) {
      if (name.getValue() == kOperandSegments ||
          (collective && name.getValue() == "mesh"))
        continue;
      Attribute attr = op->getAttr(name);
      if (collective && name.getValue() == "axes") {
        std::vector<std::string> axes;
        for (Attribute axis : cast<ArrayAttr>(attr))
          axes.push_back(cast<StringAttr>(axis).getValue().str());
        arguments.push_back(stringLiteral(pp::runtime::collectiveAxesKey(axes)));
        continue;
      }
      if (failed(appendAttributeArguments(op, name, attr, arguments)))
        return failure();
    }
    return arguments;
  }

  /// True when nothing after `op` in the function reads `value`.
  bool lastReadBy(Value value, Operation *op) {
    Block &body = source.getBody().front();
    return llvm::all_of(value.getUsers(), [&](Operation *user) {
      Operation *inBody = body.findAncestorOpInBlock(*user);
      return inBody && (inBody == op || inBody->isBeforeInBlock(op));
    });
  }

  /// The argument of the function that `op`'s kernel may overwrite with
  /// the gradient: its logits, when they are a value saved for this
  /// function that nothing after `op` reads.
  std::optional<unsigned> logitsToOverwrite(nn::CrossEntropyGradOp op) {
    auto logits = dyn_cast<BlockArgument>(op.getLogits());
    if (!logits || logits.getOwner() != &source.getBody().front())
      return std::nullopt;
    auto role = source.getArgAttrOfType<StringAttr>(logits.getArgNumber(),
                                                    kRoleAttrName);
    if (!role || role.getValue() != kRoleSaved || !lastReadBy(logits, op))
      return std::nullopt;
    return logits.getArgNumber();
  }

  /// True when `reshape` may give its input's tensor the new shape in
  /// place: a tensor the code owns that no kernel allocated (one taken from
  /// the caller, which the memory plan does not place) and that nothing
  /// after `reshape` reads.
  bool reshapesInPlace(nn::ReshapeOp reshape) {
    Value tensor = values.lookup(reshape.getInput());
    return tensor && owned.contains(tensor) &&
           !allocationBytes.contains(tensor) &&
           lastReadBy(reshape.getInput(), reshape);
  }

  /// `reshape` as pp_frame_reshape_owned of its input's tensor, which
  /// passes to the result: no copy.
  void lowerReshapeInPlace(nn::ReshapeOp reshape) {
    Value input = values.lookup(reshape.getInput());
    Value result = call("pp_frame_reshape_owned", {input},
                        shapeLiterals(reshape.getShape()));
    owned.remove(input);
    owned.insert(result);
    values[reshape.getResult()] = result;
  }

  /// `op`'s gradient written over its logits, argument `arg` of the
  /// function, which pp_frame_take_arg gives the call: no logits-sized
  /// tensor allocated.
  LogicalResult lowerCrossEntropyGradInPlace(nn::CrossEntropyGradOp op,
                                             unsigned arg) {
    FailureOr<SmallVector<KernelArgument>> arguments = kernelArguments(op);
    if (failed(arguments))
      return failure();
    // Operands come first, in order.
    (*arguments)[op.getLogitsMutable().getOperandNumber()] =
        call("pp_frame_take_arg", {}, {integer(arg)});
    Value gradient =
        emitCall(prefix + "cross_entropy_grad_in_place", *arguments, tensorPtr)
            ->getResult(0);
    values[op.getResult()] = gradient;
    // Owned and released like a kernel's result, but allocated by none.
    owned.insert(gradient);
    return success();
  }

  /// Why the runtime's kernels cannot compute `op` on its element types; ""
  /// when they can. An nn op's traits say what its kernels take
  /// (nn::kernelElementTypeProblem); the collective kernels compute f32,
  /// bf16 or f16 values and take integer indices and labels, and those that
  /// only move elements (all-gather, shard slice) move any type's.
  static std::string kernelElementTypeProblem(Operation *op) {
    if (!op->hasTrait<CollectiveKernel>())
      return nn::kernelElementTypeProblem(op);
    if (isa<AllGatherOp, ShardSliceOp>(op))
      return "";
    auto isFloat = [](Type type) {
      Type element = getElementTypeOrSelf(type);
      return element.isF32() || element.isBF16() || element.isF16();
    };
    auto isFloatOrIndex = [&](Type type) {
      return isFloat(type) || getElementTypeOrSelf(type).isInteger();
    };
    if (llvm::all_of(op->getResultTypes(), isFloat) &&
        llvm::all_of(op->getOperandTypes(), isFloatOrIndex))
      return "";
    std::string problem;
    llvm::raw_string_ostream os(problem);
    os << op->getName() << " on ";
    llvm::interleaveComma(op->getOperandTypes(), os);
    os << ": pp's collective kernels compute f32, bf16 and f16 values (with "
          "integer indices and labels) only";
    return problem;
  }

  /// A call of the function generated for `fusion`, `name(frame, inputs,
  /// results)` with two local arrays of tensors. The first fusion of its
  /// code defines the function (as verbatim code, before this stage
  /// function); equal ones later in the module call it.
  LogicalResult lowerFusion(nn::FusionOp fusion) {
    FailureOr<std::string> code = writeFusedLoop(
        fusion, kFusionNamePlaceholder, target,
        [&](Operation *op, SmallVectorImpl<std::string> &out) {
          return appendAttributeTexts(op, out);
        });
    if (failed(code))
      return failure();
    Location loc = fusion.getLoc();
    auto [known, defined] = fusionFunctions.try_emplace(*code);
    if (defined) {
      known->second = (Twine("fusion_") + source.getSymName() + "_" +
                       Twine(fusionsDefined++))
                          .str();
      std::string text = *code;
      for (size_t at = text.find(kFusionNamePlaceholder);
           at != std::string::npos;
           at = text.find(kFusionNamePlaceholder, at + known->second.size()))
        text.replace(at, kFusionNamePlaceholder.size(), known->second);
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPoint(marker);
      emitc::VerbatimOp::create(builder, loc, text);
    }
    std::string name = known->second;
    SmallVector<KernelArgument> arguments;
    if (failed(appendTensorArray(fusion, arguments)))
      return failure();
    arguments.erase(arguments.begin()); // The count: the code knows it.
    fusionCallees.insert(name);
    emitArrayResultCall(fusion, name, arguments);
    return success();
  }

  /// Calls `callee` with `arguments` and a trailing array of `op`'s results,
  /// which the callee allocates in result order (a fused loop, a kernel
  /// that makes all of its results: nn::KernelMakesAllResults), and takes
  /// them from the array.
  void emitArrayResultCall(Operation *op, StringRef callee,
                           SmallVector<KernelArgument> arguments) {
    Location loc = op->getLoc();
    Value results = emitc::VariableOp::create(
        builder, loc, emitc::ArrayType::get({op->getNumResults()}, tensorPtr),
        emitc::OpaqueAttr::get(builder.getContext(), ""));
    arguments.push_back(results);
    emitCall(callee, arguments, {});
    arrayResultCallees.insert(callee);
    for (OpResult result : op->getResults()) {
      Value at = emitc::LiteralOp::create(
          builder, loc, builder.getIndexType(),
          std::to_string(result.getResultNumber()));
      Value element = emitc::SubscriptOp::create(
          builder, loc, emitc::LValueType::get(tensorPtr), results, at);
      values[result] = emitc::LoadOp::create(builder, loc, tensorPtr, element);
      own(values[result], result.getType());
    }
  }

  /// The text of the arguments `op`'s inherent attributes pass to its
  /// kernel (or per-element formula), appended to `out`.
  LogicalResult appendAttributeTexts(Operation *op,
                                     SmallVectorImpl<std::string> &out) {
    SmallVector<KernelArgument> arguments;
    for (StringAttr name : op->getName().getAttributeNames())
      if (failed(appendAttributeArguments(op, name, op->getAttr(name),
                                          arguments)))
        return failure();
    for (const KernelArgument &argument : arguments)
      out.push_back(
          cast<emitc::OpaqueAttr>(cast<Attribute>(argument)).getValue().str());
    return success();
  }

  /// `count, array` of the tensors of `op`'s operands: a local array of
  /// `pp_tensor *` filled before the call.
  LogicalResult appendTensorArray(Operation *op,
                                  SmallVectorImpl<KernelArgument> &out) {
    int64_t count = op->getNumOperands();
    out.push_back(integer(count));
    if (count == 0) {
      out.push_back(literal("nullptr"));
      return success();
    }
    Location loc = op->getLoc();
    Value array = emitc::VariableOp::create(
        builder, loc, emitc::ArrayType::get({count}, tensorPtr),
        emitc::OpaqueAttr::get(builder.getContext(), ""));
    for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
      Value tensor = tensorOf(operand);
      if (!tensor)
        return failure();
      Value at = emitc::LiteralOp::create(builder, loc, builder.getIndexType(),
                                          std::to_string(index));
      Value element = emitc::SubscriptOp::create(
          builder, loc, emitc::LValueType::get(tensorPtr), array, at);
      emitc::AssignOp::create(builder, loc, element, tensor);
      arrayElements[array].push_back(tensor);
    }
    out.push_back(array);
    return success();
  }

  /// The kernel arguments of attribute `name` (`attr`, null when absent).
  LogicalResult appendAttributeArguments(Operation *op, StringAttr name,
                                         Attribute attr,
                                         SmallVectorImpl<KernelArgument> &out) {
    if (!attr || isa<UnitAttr>(attr)) {
      out.push_back(boolean(attr != nullptr));
      return success();
    }
    if (auto array = dyn_cast<DenseI64ArrayAttr>(attr)) {
      for (Attribute part : shapeLiterals(array.asArrayRef()))
        out.push_back(part);
      return success();
    }
    std::optional<std::string> text =
        llvm::TypeSwitch<Attribute, std::optional<std::string>>(attr)
            .Case([](BoolAttr flag) { return flag.getValue() ? "1" : "0"; })
            .Case([](IntegerAttr value) {
              return std::to_string(value.getInt());
            })
            .Case([](FloatAttr value) {
              return floatingLiteral(value.getValueAsDouble(), false);
            })
            .Case([](nn::LossReductionAttr kind) {
              return std::to_string(static_cast<int>(kind.getValue()));
            })
            .Case([](nn::GeluApproximationAttr kind) {
              return std::to_string(static_cast<int>(kind.getValue()));
            })
            .Case([](ReductionKindAttr kind) {
              return std::to_string(static_cast<int>(kind.getValue()));
            })
            .Default([](Attribute) { return std::nullopt; });
    if (!text)
      return op->emitOpError("attribute '")
             << name.getValue() << "' (" << attr
             << ") has no kernel argument form; kernels take integers, "
             << "floats, enums, unit flags and i64 arrays";
    out.push_back(literal(*text));
    return success();
  }

  /// A new tensor holding `constant`: `constant(frame, dtype, rank, shape,
  /// count, values)` with the values in a static array, one value repeated
  /// for a splat.
  FailureOr<Value> lowerConstant(arith::ConstantOp constant) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    std::optional<RuntimeDtype> dtype =
        type ? getRuntimeDtype(type.getElementType()) : std::nullopt;
    Type element = type ? type.getElementType() : Type();
    std::string cType = llvm::TypeSwitch<Type, std::string>(element)
                            .Case([](Float32Type) { return "float"; })
                            .Case([](Float64Type) { return "double"; })
                            // 16-bit floats as their bits.
                            .Case<BFloat16Type, Float16Type>(
                                [](Type) { return "uint16_t"; })
                            .Case([](IntegerType integer) -> std::string {
                              switch (integer.getWidth()) {
                              case 64:
                                return "int64_t";
                              case 32:
                                return "int32_t";
                              case 1:
                                return "uint8_t";
                              default:
                                return "";
                              }
                            })
                            .Default([](Type) { return ""; });
    if (!dense || !dtype || cType.empty())
      return constant.emitOpError("of type ")
             << constant.getType()
             << " has no runtime form; constants are dense tensors of f32, "
                "bf16, f16, f64, i64, i32 or i1";
    size_t count = dense.isSplat() ? 1 : dense.getNumElements();
    SmallVector<std::string> elements;
    for (Attribute value : dense.getValues<Attribute>()) {
      if (elements.size() == count)
        break;
      auto number = dyn_cast<FloatAttr>(value);
      if (number && (element.isBF16() || element.isF16()))
        elements.push_back(
            std::to_string(number.getValue().bitcastToAPInt().getZExtValue()));
      else if (number)
        elements.push_back(
            floatingLiteral(number.getValueAsDouble(), element.isF32()));
      else
        elements.push_back(integerLiteral(cast<IntegerAttr>(value).getValue()));
    }
    // A static array: large tables do not go on the stack.
    std::string data = elements.empty()
                           ? "nullptr"
                           : "[] { static const " + cType + " values[] = {" +
                                 llvm::join(elements, ", ") +
                                 "}; return values; }()";
    SmallVector<Attribute> literals = {literal(dtype->enumerator)};
    llvm::append_range(literals, shapeLiterals(type.getShape()));
    literals.push_back(integer(static_cast<int64_t>(elements.size())));
    literals.push_back(literal(data));
    return call(prefix + "constant", {}, literals);
  }

  /// Destroys each owned tensor after the call that uses it last (right
  /// after its definition when nothing uses it).
  void releaseAfterLastUse() {
    llvm::DenseMap<Value, SmallVector<Operation *>> arrayUses = arrayUsers();
    for (Value tensor : owned) {
      builder.setInsertionPointAfter(lastUse(tensor, arrayUses));
      callVoid("pp_frame_release", tensor, {});
    }
  }

  /// Hands each result (its tensor and index) to pp_frame_result right
  /// after its last use, not at the function's end: the runtime adds a
  /// gradient to its sum and frees it there, so a backward does not hold
  /// all its parameters' gradients at once.
  void handOverAfterLastUse(ArrayRef<std::pair<Value, int64_t>> results) {
    llvm::DenseMap<Value, SmallVector<Operation *>> arrayUses = arrayUsers();
    for (auto [tensor, index] : results) {
      builder.setInsertionPointAfter(lastUse(tensor, arrayUses));
      callVoid("pp_frame_result", {tensor}, {integer(index)});
    }
  }

  /// The calls that use each tensor through an array: those that take the
  /// array.
  llvm::DenseMap<Value, SmallVector<Operation *>> arrayUsers() const {
    llvm::DenseMap<Value, SmallVector<Operation *>> arrayUses;
    for (auto &[array, tensors] : arrayElements)
      for (Value tensor : tensors)
        llvm::append_range(arrayUses[tensor], array.getUsers());
    return arrayUses;
  }

  /// The last operation that uses `tensor`, directly or through an array
  /// (`arrayUses`), else the one defining it.
  static Operation *
  lastUse(Value tensor,
          const llvm::DenseMap<Value, SmallVector<Operation *>> &arrayUses) {
    Operation *last = tensor.getDefiningOp();
    SmallVector<Operation *> users(tensor.getUsers());
    llvm::append_range(users, arrayUses.lookup(tensor));
    for (Operation *user : users)
      if (last->isBeforeInBlock(user))
        last = user;
    return last;
  }

  /// Plans the arena of `function` (planArena over its allocations in call
  /// order, each alive until its pp_frame_release; one handed to
  /// pp_frame_result outlives the call) and records it as
  /// `pp.memory_plan = {arena_bytes, allocations = [bytes, offset, ...]}`,
  /// offset -1 for a result.
  void attachMemoryPlan(func::FuncOp function) {
    SmallVector<Value> allocations;
    llvm::DenseMap<Value, int64_t> allocated, released;
    llvm::DenseSet<Value> results;
    int64_t position = 0, arrayResultCall = 0;
    for (Operation &op : function.getBody().front()) {
      ++position;
      // The results of a fused loop or a kernel that makes all of its
      // results are loaded from its array after its call, which allocates
      // them in result order (and before the releases of its inputs that
      // follow it).
      if (auto load = dyn_cast<emitc::LoadOp>(op);
          load && allocationBytes.contains(load.getResult())) {
        allocations.push_back(load.getResult());
        allocated[load.getResult()] = arrayResultCall;
        continue;
      }
      auto call = dyn_cast<emitc::CallOpaqueOp>(op);
      if (!call)
        continue;
      if (arrayResultCallees.contains(call.getCallee()))
        arrayResultCall = position;
      if (call.getNumResults() == 1 &&
          allocationBytes.contains(call.getResult(0))) {
        allocations.push_back(call.getResult(0));
        allocated[call.getResult(0)] = position;
      } else if (call.getCallee() == "pp_frame_release") {
        released[call.getOperand(1)] = position;
      } else if (call.getCallee() == "pp_frame_result") {
        results.insert(call.getOperand(1));
      }
    }
    SmallVector<BufferLifetime> lifetimes;
    llvm::DenseMap<Value, int64_t> index;
    for (auto [at, tensor] : llvm::enumerate(allocations)) {
      // Every owned tensor has a release; one without stays alive.
      auto release = released.find(tensor);
      lifetimes.push_back(
          {static_cast<uint64_t>(allocationBytes.lookup(tensor)),
           allocated.lookup(tensor),
           release == released.end() ? std::numeric_limits<int64_t>::max()
                                     : release->second,
           results.contains(tensor)});
      index[tensor] = static_cast<int64_t>(at);
    }
    // A reshape's result takes its operand's bytes when the operand is an
    // allocation released before the next one (the CPU reshape then copies
    // nothing).
    for (auto [at, tensor] : llvm::enumerate(allocations)) {
      auto reshape = tensor.getDefiningOp<emitc::CallOpaqueOp>();
      if (target != "cpu" || !reshape ||
          reshape.getCallee() != prefix + "reshape")
        continue;
      auto operand = index.find(reshape.getOperand(1));
      if (operand == index.end())
        continue;
      const BufferLifetime &source = lifetimes[operand->second];
      int64_t nextAllocation = at + 1 < allocations.size()
                                   ? lifetimes[at + 1].allocated
                                   : std::numeric_limits<int64_t>::max();
      if (!source.outlivesCall && source.bytes == lifetimes[at].bytes &&
          source.released < nextAllocation)
        lifetimes[at].reuses = operand->second;
    }
    ArenaPlan plan = planArena(lifetimes);
    SmallVector<int64_t> entries;
    for (auto [lifetime, offset] : llvm::zip(lifetimes, plan.offsets))
      llvm::append_range(
          entries,
          ArrayRef<int64_t>{static_cast<int64_t>(lifetime.bytes), offset});
    function->setAttr(
        kMemoryPlanAttrName,
        builder.getDictionaryAttr(
            {builder.getNamedAttr("arena_bytes",
                                  builder.getI64IntegerAttr(
                                      static_cast<int64_t>(plan.arenaBytes))),
             builder.getNamedAttr("allocations",
                                  builder.getDenseI64ArrayAttr(entries))}));
  }

  /// The op kind a profile bracket names for a call of `callee`: a
  /// kernel's name without the target prefix, "send" or "recv"; "" for the
  /// frame's other calls.
  StringRef profileKind(StringRef callee) const {
    if (fusionCallees.contains(callee))
      return "fusion";
    if (callee.consume_front(prefix))
      return callee;
    if (callee == "pp_frame_send" || callee == "pp_frame_recv")
      return callee.drop_front(StringRef("pp_frame_").size());
    return "";
  }

  /// What the profile counts the calls of `op` as: a message or
  /// collective's communication, attention's (pp-mark-attention; a fusion
  /// whose every op is), a matrix product's (an LM head's fused
  /// cross-entropy's included, which its GEMMs dominate), or other.
  static pp_profile_category profileCategory(Operation *op) {
    if (isa<SendOp, RecvOp>(op) || op->hasTrait<CollectiveKernel>())
      return PP_PROFILE_COMMUNICATION;
    auto isAttention = [](Operation &inner) {
      return isa<nn::YieldOp>(inner) || inner.hasAttr(kAttentionAttrName);
    };
    if (auto fusion = dyn_cast<nn::FusionOp>(op))
      return llvm::all_of(fusion.getBody().front(), isAttention)
                 ? PP_PROFILE_ATTENTION
                 : PP_PROFILE_OTHER;
    if (op->hasAttr(kAttentionAttrName))
      return PP_PROFILE_ATTENTION;
    if (isa<nn::MatmulOp, nn::LinearOp, nn::LinearCrossEntropyOp,
            nn::LinearCrossEntropyGradOp, nn::LinearCrossEntropyHiddenGradOp>(
            op))
      return PP_PROFILE_GEMM;
    return PP_PROFILE_OTHER;
  }

  /// Marks the kernel calls and messages of `block` after `before` (null:
  /// all of them), those one op lowered to, its constants' included, with
  /// `category` (an attribute that bracketForProfile reads and removes).
  void categorizeCalls(Operation *before, Block *block,
                       pp_profile_category category) {
    auto it = before ? std::next(before->getIterator()) : block->begin();
    for (Operation &op : llvm::make_range(it, block->end()))
      if (auto call = dyn_cast<emitc::CallOpaqueOp>(op);
          call && !profileKind(call.getCallee()).empty())
        op.setAttr(kProfileCategoryAttrName,
                   builder.getI32IntegerAttr(category));
  }

  /// Brackets every kernel call and message of `function` with
  /// pp_frame_profile_begin(frame, "kind", category) and
  /// pp_frame_profile_end(frame) (runtime/pp_kernels.h), after the releases
  /// are placed, so that a bracket times its call alone; a call no op
  /// lowered to (a result's copy) is other.
  void bracketForProfile(func::FuncOp function) {
    SmallVector<emitc::CallOpaqueOp> calls;
    function.walk([&](emitc::CallOpaqueOp call) {
      if (!profileKind(call.getCallee()).empty())
        calls.push_back(call);
    });
    for (emitc::CallOpaqueOp call : calls) {
      auto category = pp_profile_category(PP_PROFILE_OTHER);
      if (auto mark =
              call->getAttrOfType<IntegerAttr>(kProfileCategoryAttrName))
        category = static_cast<pp_profile_category>(mark.getInt());
      call->removeAttr(kProfileCategoryAttrName);
      builder.setInsertionPoint(call);
      callVoid("pp_frame_profile_begin", {},
               {stringLiteral(profileKind(call.getCallee())),
                literal(pp::runtime::profileCategorySpelling(category))});
      builder.setInsertionPointAfter(call);
      callVoid("pp_frame_profile_end", {}, {});
    }
  }

  func::FuncOp source;
  /// The function replacing `source`, and the PP_STAGE_FUNCTION before it
  /// (runtime/pp_kernels.h).
  func::FuncOp lowered;
  Operation *marker = nullptr;
  OpBuilder builder;
  /// "cpu" or "cuda", and the prefix of its kernels.
  std::string target, prefix;
  /// The module's fusion functions, and how many this function defined.
  FusionFunctions &fusionFunctions;
  int64_t fusionsDefined = 0;
  /// The fusion functions this function calls.
  llvm::StringSet<> fusionCallees;
  /// The callees that return their results through an array (fusion
  /// functions and kernels that make all of their results).
  llvm::StringSet<> arrayResultCallees;
  Type framePtr, tensorPtr;
  Value frame;
  /// Values of the stage function to the tensors of the generated code.
  llvm::DenseMap<Value, Value> values;
  /// Each constant value's tensor.
  llvm::DenseMap<Attribute, Value> constantTensors;
  /// The tensors each array of tensors holds.
  llvm::DenseMap<Value, SmallVector<Value>> arrayElements;
  /// The results that kernels added into their gradient sums.
  llvm::DenseSet<unsigned> addedIntoSums;
  /// The tensors the code creates and must release.
  llvm::SetVector<Value> owned;
  /// The bytes of every tensor the code allocates (owned ones and copies
  /// handed out as results).
  llvm::DenseMap<Value, double> allocationBytes;
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
  for (func::FuncOp function : stages)
    if (function.isExternal() || !llvm::hasSingleElement(function.getBody()))
      return function.emitError("stage function @")
             << function.getSymName()
             << " must have a body of one block to be lowered";
  FusionFunctions fusionFunctions;
  for (func::FuncOp function : stages)
    if (failed(StageLowering(function, target, fusionFunctions).lower()))
      return failure();
  return success();
}
