//===- NNInterfaces.td - what an nn op says about itself ---*- tablegen -*-===//
//
// The facts the compiler needs of every op beyond its definition: how to
// differentiate it (GradientOpInterface, implemented in NNGradients.cpp),
// how it runs on tensors split over a tensor axis (ShardingRuleOpInterface,
// NNShardingRules.cpp) and whether the runtime has a kernel for it
// (HasRuntimeKernel). Adding an op touches its ODS definition, its gradient
// rule, its sharding rule unless a trait gives it one, and its kernel;
// nothing in the passes names individual ops.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_NNINTERFACES_TD
#define PP_DIALECTS_NN_IR_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::pp::nn";
  let description = [{
    The reverse-mode rule of an op (its vector-Jacobian product), as
    Enzyme-MLIR's reverse-mode interface: given the gradients of the op's
    results, build the contributions to the gradients of its operands.
    `pp-autodiff` visits ops in reverse, calls this rule, sums the
    contributions to each value in a fixed order, and reduces a
    contribution with a broadcast shape back to its operand's shape
    (`nn.sum_to`), so rules return gradients in the op's broadcast shape.
  }];
  let methods = [
    InterfaceMethod<[{
        True when a gradient can flow into operand `index`. Integer operands
        (labels, indices, masks) never carry one.
      }],
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), "",
      [{
        return ::llvm::isa<::mlir::FloatType>(
            ::mlir::getElementTypeOrSelf($_op->getOperand(index).getType()));
      }]>,
    InterfaceMethod<[{
        Builds at the builder's insertion point the gradients of the operands
        for which `wanted` is true. `resultGradients` has one value per
        result, null for a result nothing downstream differentiates (at least
        one is set). `operandGradients` gets one value per operand: the
        contribution, or null where none is wanted.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGradients,
           "::llvm::ArrayRef<bool>":$wanted,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>
  ];
}

def NN_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::pp::nn";
  let description = [{
    How an op runs on tensors laid out over the devices of a tensor axis
    (replicated, sharded along one dimension, or a pending sum), as Shardy's
    OpShardingRule: given the layouts its operands arrive in, the layouts it
    needs them in and the layouts of its results (`nn::ShardingPlan`,
    dialects/nn/IR/ShardingRule.h). A rule keeps a sharding flowing through
    the op whenever the op's per-device computation on per-device data is
    the device's part of the whole result, turns shardings of summed
    dimensions into pending sums, and asks for replicated operands
    otherwise. `pp-shard-tensor-parallel` inserts the collectives that
    convert between the layouts; an op without this interface runs
    replicated (every operand whole on every device).

    Elementwise maps get the rule with `NN_Elementwise`; other ops declare
    `NN_Sharded` (or `NN_ShardedWithShapes` when attributes restate shapes)
    and implement it in NNShardingRules.cpp.
  }];
  let methods = [
    InterfaceMethod<[{
        The plan of this op (its result types are global) whose operands
        currently have the layouts `operands`. The default is the rule of
        an elementwise map with NumPy broadcasting (NN_Elementwise); for
        any other op it runs replicated.
      }],
      "::pp::nn::ShardingPlan", "planSharding",
      (ins "::llvm::ArrayRef<::pp::nn::TensorLayout>":$operands,
           "const ::pp::nn::ShardingContext &":$context), "",
      [{
        return ::pp::nn::planElementwiseSharding($_op, operands, context);
      }]>,
    InterfaceMethod<[{
        True when the op, run on each device's values whose layouts are
        `operands` (at least one a pending sum), computes the device's
        pending sum of its result: a sum of pending sums, a product of one
        pending sum by replicated values. The default: never.
      }],
      "bool", "keepsPendingSum",
      (ins "::llvm::ArrayRef<::pp::nn::TensorLayout>":$operands), "",
      [{ return false; }]>,
    InterfaceMethod<[{
        The layouts the operands should preferably have when the op's
        result is wanted in `resultHint` (the terms of a gradient sum take
        the gradient's layout), one per operand or none; may be empty.
      }],
      "::llvm::SmallVector<std::optional<::pp::nn::TensorLayout>>",
      "operandHints", (ins "::pp::nn::TensorLayout":$resultHint), "",
      [{ return {}; }]>,
    InterfaceMethod<[{
        The parameter operand to shard before propagation, if this op has
        one worth it (`nn::ShardingSeed`). The default: none.
      }],
      "std::optional<::pp::nn::ShardingSeed>", "shardingSeed", (ins), "",
      [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        Makes the attributes that restate shapes (a reshape's `shape`, a
        slice's `starts` and `limits`) per-device, once the op's results,
        laid out as `results` over `devices` devices, have their per-device
        types. The default: the op has no such attribute.
      }],
      "void", "localizeShapeAttributes",
      (ins "::llvm::ArrayRef<::pp::nn::TensorLayout>":$results,
           "int64_t":$devices), "",
      [{ return; }]>
  ];
}

def NN_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::pp::nn";
  let description = [{
    The floating-point work of one call of an op whose work is not about
    one operation per element (pp-partition's cost model assumes that for
    ops without this interface): a matrix product, a loss over logits.
  }];
  let methods = [
    InterfaceMethod<"floating-point operations of one call", "double",
                    "estimateFlops", (ins)>
  ];
}

/// Ops whose work the cost model cannot infer from their shapes.
defvar NN_Costed = DeclareOpInterfaceMethods<NN_CostOpInterface>;

/// The differentiable ops declare the interface's rule.
defvar NN_Differentiable = DeclareOpInterfaceMethods<NN_GradientOpInterface>;

/// The runtime has `pp_<target>_<mnemonic>` for this op. Its signature comes
/// from the op's definition (docs/development.md, "Adding an op"):
/// operands in order, then inherent attributes sorted by name; an op with
/// several results is called once per result with its index (or once for
/// all, NN_KernelMakesAllResults). Optional operands need
/// AttrSizedOperandSegments, and the only optional attributes are unit
/// flags.
///
/// The kernels compute f32: every operand and result of the op must be f32
/// unless a companion trait below says otherwise (nn.cast's kernels convert
/// between f32, f64, i32, i64 and i1). pp-lower-to-runtime refuses an op its
/// kernels do not compute (`kernelElementTypeProblem`), so that a model with
/// other element types fails at compile time, naming the node.
def NN_HasRuntimeKernel : NativeOpTrait<"HasRuntimeKernel"> {
  let cppNamespace = "::pp::nn";
}

/// The kernels move elements without computing on them (transpose, reshape,
/// slice, gather's data, where's values): they take every element type the
/// runtime has.
def NN_KernelTakesAnyElementType : NativeOpTrait<"KernelTakesAnyElementType"> {
  let cppNamespace = "::pp::nn";
}

/// The kernels compute float values (f32, bf16 or f16) and take integer
/// operands as indices or masks (labels and gather indices, which the op's
/// definition limits to i32 and i64; nn.attention's i1 mask): the integer
/// operands may stay integer, everything else is of one float type.
def NN_KernelTakesIndices : NativeOpTrait<"KernelTakesIndices"> {
  let cppNamespace = "::pp::nn";
}

/// The kernel makes all of the op's results in one call, which it returns
/// through a trailing array (`pp_tensor **results`, allocated in result
/// order) rather than one call per result index: results that share their
/// work (nn.attention_grad's three gradients share each head's recomputed
/// probabilities).
def NN_KernelMakesAllResults : NativeOpTrait<"KernelMakesAllResults"> {
  let cppNamespace = "::pp::nn";
}

/// Under a reduced precision (pp-apply-precision) the op still computes in
/// f32: softmax, the normalization statistics, the losses and the logits'
/// log-sum-exp, whose sums and exponentials bf16 and f16 would lose. Its
/// float operands are cast to f32, and its results back to the compute
/// type (a loss stays f32).
def NN_ComputesInF32 : NativeOpTrait<"ComputesInF32"> {
  let cppNamespace = "::pp::nn";
}

/// The op is an elementwise map: every result element is a function of the
/// operands' elements at the same index, the operands broadcast to the
/// result's shape as in NumPy. The function is
/// `pp::runtime::elementwise::<mnemonic>(operand elements in order,
/// inherent attributes sorted by name)` in
/// runtime/kernels/ElementwiseFormulas.h, the one the op's CPU kernel calls
/// per element, with the kernel's argument conventions (enums and unit
/// flags as int, I64Attr as int64_t). pp-fuse-elementwise groups such ops
/// into an `nn.fusion`, whose generated loop calls the same functions, so
/// that fused and unfused code compute the same bits.
///
/// The trait brings the elementwise sharding rule (ShardingRuleOpInterface's
/// default): a sharding of a result dimension flows through the operands
/// that span it.
def NN_ElementwiseTrait : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::pp::nn";
}
defvar NN_Elementwise = TraitList<[
    NN_ElementwiseTrait, DeclareOpInterfaceMethods<NN_ShardingRuleOpInterface>]>;

/// Ops with a sharding rule of their own (NNShardingRules.cpp).
defvar NN_Sharded =
    DeclareOpInterfaceMethods<NN_ShardingRuleOpInterface, ["planSharding"]>;

/// Ops with a sharding rule whose attributes restate shapes
/// (`localizeShapeAttributes`).
defvar NN_ShardedWithShapes = DeclareOpInterfaceMethods<
    NN_ShardingRuleOpInterface, ["planSharding", "localizeShapeAttributes"]>;

/// Ops that propose a parameter operand to shard (`shardingSeed`): token
/// embeddings and projections.
defvar NN_SeedsSharding =
    DeclareOpInterfaceMethods<NN_ShardingRuleOpInterface, ["shardingSeed"]>;

/// Elementwise ops that keep pending sums (`keepsPendingSum`): sums,
/// differences, negations, products and quotients.
defvar NN_KeepsPendingSums =
    DeclareOpInterfaceMethods<NN_ShardingRuleOpInterface, ["keepsPendingSum"]>;

#endif // PP_DIALECTS_NN_IR_NNINTERFACES_TD
