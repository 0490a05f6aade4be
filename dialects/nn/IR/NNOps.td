//===- NNOps.td - nn dialect ops ---------------------------*- tablegen -*-===//
//
// Every op is Pure and infers its result types (InferTypeOpAdaptor); the
// inference doubles as the verifier, so its messages name the operands and
// attributes that disagree.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_NNOPS_TD
#define PP_DIALECTS_NN_IR_NNOPS_TD

include "dialects/nn/IR/NNBase.td"
include "dialects/nn/IR/NNInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class NN_InferredOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat(traits, [InferTypeOpAdaptor])>;

/// An op whose result has the type of its operands; ODS derives the type
/// inference from SameOperandsAndResultType.
class NN_SameTypeOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat(traits, [SameOperandsAndResultType,
                                           InferTypeOpInterface])>;

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class NN_UnaryOp<string mnemonic, string formula, list<Trait> traits = []>
    : NN_SameTypeOp<mnemonic, !listconcat(traits, [NN_Elementwise])> {
  let summary = "elementwise " # formula;
  let description = "Computes `" # formula # "` for every element of "
      # "`input`. The result has the type of the input.\n\n"
      # "Example:\n\n```mlir\n%y = nn." # mnemonic
      # " %x : (tensor<4x8xf32>) -> tensor<4x8xf32>\n```";
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def NN_NegOp : NN_UnaryOp<"neg", "-x", [NN_Differentiable, NN_HasRuntimeKernel,
                                        NN_KeepsPendingSums]>;
def NN_ExpOp : NN_UnaryOp<"exp", "exp(x)", [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_LogOp : NN_UnaryOp<"log", "log(x)", [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_SqrtOp : NN_UnaryOp<"sqrt", "sqrt(x)", [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_RsqrtOp
    : NN_UnaryOp<"rsqrt", "1 / sqrt(x)", [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_ErfOp : NN_UnaryOp<"erf", "erf(x)", [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_TanhOp : NN_UnaryOp<"tanh", "tanh(x)", [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_ReluOp : NN_UnaryOp<"relu", "max(x, 0)", [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_SigmoidOp
    : NN_UnaryOp<"sigmoid", "1 / (1 + exp(-x))", [NN_Differentiable, NN_HasRuntimeKernel]>;

def NN_GeluOp
    : NN_SameTypeOp<"gelu", [NN_Differentiable, NN_HasRuntimeKernel,
                             NN_Elementwise]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `x * Phi(x)` with `Phi` the standard normal CDF, evaluated exactly with
    erf (`approximate = none`, the default) or with the tanh formula of
    PyTorch's `gelu(approximate="tanh")`.

    Example:

    ```mlir
    %y = nn.gelu %x approximate<tanh> : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
      DefaultValuedAttr<NN_GeluApproximationAttr,
                        "::pp::nn::GeluApproximation::none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` `` $approximate^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_CastableTensor : RankedTensorOf<[F32, F64, F16, BF16, I64, I32, I1]>;

def NN_CastOp : NN_Op<"cast", [
    DeclareOpInterfaceMethods<NN_GradientOpInterface, ["isDifferentiableOperand"]>,
    NN_HasRuntimeKernel,
    DeclareOpInterfaceMethods<NN_ShardingRuleOpInterface,
                              ["planSharding", "operandHints",
                               "keepsPendingSum"]>]> {
  let summary = "converts the element type";
  let description = [{
    Converts every element of `input` to the element type of the result,
    which has the input's shape. Floats become integers by truncation toward
    zero (ONNX `Cast`, C); anything becomes `i1` as "nonzero"; `i1` becomes
    0 or 1. A float-to-float cast is differentiable (its gradient is cast
    back); a cast to or from an integer type carries no gradient, so a
    parameter that reaches the loss only through one (an index table, a
    mask) is a constant (`pp-autodiff`).

    The target is the written result type. The op also keeps it in the
    inherent attribute `to`, which the parser and the builders derive from
    the result type and the verifier checks against it: an `nn.Dtype`
    enumerator whose value is the runtime's `pp_dtype`, an integer
    attribute, so that the generic kernel lowering passes it to
    `pp_<target>_cast(frame, input, to)` as it passes any integer (kernels
    receive no result types). The custom form leaves `to` out; the generic
    form shows it.

    Example:

    ```mlir
    %y = nn.cast %x : (tensor<4xf32>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins NN_CastableTensor:$input, NN_Dtype:$to);
  let results = (outs NN_CastableTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Type":$resultType, "::mlir::Value":$input)>
  ];
  let extraClassDeclaration = [{
    /// The enumerator of `elementType`, or nullopt for an element type that
    /// no cast converts to.
    static std::optional<Dtype> dtypeOf(::mlir::Type elementType);
  }];
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def NN_DropoutOp : NN_SameTypeOp<"dropout", [NN_Differentiable,
                                               NN_HasRuntimeKernel]> {
  let summary = "zeroes random elements while training";
  let description = [{
    While training, zeroes each element with probability `ratio` and scales
    the others by `1 / (1 - ratio)`; in forward-only runs and evaluation it
    is the identity. Whether an element drops is a pure function of (the
    run's seed, the step, the global index of the sample, which is the
    element's index along dimension 0 plus the microbatch's first sample,
    `key`, the element's index within its sample): neither the stage count
    nor the schedule changes which units drop, and the backward recomputes
    the mask instead of saving it: the gradient is the same `nn.dropout`
    (same `ratio` and `key`) applied to the result's gradient. Frontends derive `key` from the node's
    name (`pp::nn::dropoutKey`), so two dropouts of one model differ.

    Example:

    ```mlir
    %y = nn.dropout %x ratio = 1.000000e-01 key = 42
        : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, F64Attr:$ratio, I64Attr:$key);
  let results = (outs NN_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `ratio` `=` $ratio `key` `=` $key attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_TriluOp : NN_SameTypeOp<"trilu", [NN_Differentiable, NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                         NN_Sharded]> {
  let summary = "keeps the upper or lower triangle of the trailing matrices";
  let description = [{
    ONNX `Trilu` and PyTorch's `triu`/`tril` over the two trailing
    dimensions (rank 2 or more): element `[..., i, j]` is kept when
    `j - i >= diagonal` (with `upper`) or `j - i <= diagonal` (without),
    and zero elsewhere. Any element type (a causal mask is an `i1` trilu);
    the gradient is the trilu of the result gradient.

    Example:

    ```mlir
    %y = nn.trilu %x diagonal = 1 upper
        : (tensor<8x8xf32>) -> tensor<8x8xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$input, I64Attr:$diagonal,
                   UnitAttr:$upper);
  let results = (outs NN_NumericTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `diagonal` `=` $diagonal (`upper` $upper^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops with NumPy broadcasting
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string formula, Type operandType,
                  list<Trait> traits = []>
    : NN_InferredOp<mnemonic,
                    !listconcat(traits, [SameOperandsAndResultElementType,
                                         NN_Elementwise])> {
  let summary = "elementwise " # formula # " with broadcasting";
  let description = "Computes `" # formula # "` elementwise. The operand "
      # "shapes are broadcast against each other as in NumPy: aligned from the "
      # "trailing dimension, a dimension of size 1 stretches to the other.\n\n"
      # "Example:\n\n```mlir\n%z = nn." # mnemonic
      # " %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>\n```";
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferBroadcastResult(loc, getOperationName(),
                                  adaptor.getOperands(), types);
    }
  }];
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def NN_AddOp : NN_BinaryOp<"add", "lhs + rhs", NN_NumericTensor,
                             [NN_Differentiable, NN_HasRuntimeKernel,
                              NN_KeepsPendingSums,
                              DeclareOpInterfaceMethods<NN_ShardingRuleOpInterface,
                                                        ["operandHints"]>]>;
def NN_SubOp : NN_BinaryOp<"sub", "lhs - rhs", NN_NumericTensor,
                             [NN_Differentiable, NN_HasRuntimeKernel,
                              NN_KeepsPendingSums]>;
def NN_MulOp : NN_BinaryOp<"mul", "lhs * rhs", NN_NumericTensor,
                             [NN_Differentiable, NN_HasRuntimeKernel,
                              NN_KeepsPendingSums]>;
def NN_DivOp : NN_BinaryOp<"div", "lhs / rhs", NN_NumericTensor,
                             [NN_Differentiable, NN_HasRuntimeKernel,
                              NN_KeepsPendingSums]>;
def NN_PowOp : NN_BinaryOp<"pow", "lhs ^ rhs", NN_FloatTensor,
                             [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_MaximumOp : NN_BinaryOp<"maximum", "max(lhs, rhs)", NN_NumericTensor,
                                 [NN_Differentiable, NN_HasRuntimeKernel]>;
def NN_MinimumOp : NN_BinaryOp<"minimum", "min(lhs, rhs)", NN_NumericTensor,
                                 [NN_Differentiable, NN_HasRuntimeKernel]>;

def NN_WhereOp : NN_InferredOp<"where", [NN_Differentiable, NN_HasRuntimeKernel,
                                        NN_KernelTakesAnyElementType,
                                        NN_Elementwise]> {
  let summary = "elementwise select with broadcasting";
  let description = [{
    Takes `on_true` where `condition` is true and `on_false` elsewhere. The
    three shapes broadcast as in NumPy; the values must share an element type.
    The gradient goes to `on_true` where the condition holds and to
    `on_false` elsewhere; the condition carries none.

    Example:

    ```mlir
    %y = nn.where %mask, %x, %zero
        : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$condition, NN_NumericTensor:$on_true,
                   NN_NumericTensor:$on_false);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def NN_MatmulOp : NN_InferredOp<"matmul", [SameOperandsAndResultElementType,
                                          NN_Differentiable, NN_HasRuntimeKernel,
                                          NN_Costed, NN_Sharded, NN_SeedsSharding]> {
  let summary = "(batched) matrix product";
  let description = [{
    Multiplies the two trailing dimensions of `lhs` (`M x K`, or `K x M` with
    `transpose_lhs`) and `rhs` (`K x N`, or `N x K` with `transpose_rhs`).
    Leading batch dimensions broadcast as in NumPy; a rank-2 operand is shared
    by every batch. Both operands have rank 2 or more.

    Example:

    ```mlir
    %c = nn.matmul %a, %b transpose_rhs
        : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                   UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_LinearOp : NN_InferredOp<"linear", [SameOperandsAndResultElementType]> {
  let summary = "affine map `input * weight^T + bias`";
  let description = [{
    PyTorch's `nn.Linear`: `input` is `[..., in]`, `weight` is `[out, in]` and
    the optional `bias` is `[out]`; the result is `[..., out]`.

    Example:

    ```mlir
    %y = nn.linear %x, %w, %b
        : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                   Optional<NN_FloatTensor>:$bias);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_AttentionOp : NN_InferredOp<"attention", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<NN_GradientOpInterface,
                              ["isDifferentiableOperand"]>,
    NN_HasRuntimeKernel, NN_KernelTakesIndices, NN_Costed,
    NN_Sharded]> {
  let summary = "scaled dot-product attention in one kernel per head";
  let description = [{
    `softmax(mask(scale(query x key) + bias)) x value` over the two trailing
    dimensions, for every index of the leading (batch and head) dimensions,
    which `query` (`[..., Sq, D]`), `key` (`[..., D, Sk]`, or `[..., Sk, D]`
    with `transpose_key`) and `value` (`[..., Sk, Dv]`) share; the result is
    `[..., Sq, Dv]`. `scale` multiplies the scores (divides them with
    `divide`); the optional `bias` (added) and `mask` (i1) broadcast to the
    scores' shape `[..., Sq, Sk]` as in NumPy, and where `mask` is false
    (true with `fill_where_true`) a score becomes `fill`.

    `pp-fuse-attention` makes it from the ops a model computes attention
    with (nn.matmul, nn.mul or nn.div by a constant, nn.add, nn.where,
    nn.softmax, nn.matmul): its kernel runs them one head at a time with the
    same arithmetic, so that it gives their bits while a head's scores and
    probabilities stay in one `Sq x Sk` buffer, and its gradient
    (`nn.attention_grad`) recomputes the probabilities instead of saving
    them. `bias` and `mask` carry no gradient.

    Example:

    ```mlir
    %o = nn.attention %q, %kt, %v bias %causal scale = 1.250000e-01
        fill = 0.000000e+00
        : (tensor<2x12x256x64xf32>, tensor<2x12x64x256xf32>,
           tensor<2x12x256x64xf32>, tensor<2x1x256x256xf32>)
        -> tensor<2x12x256x64xf32>
    ```
  }];
  let arguments = (ins NN_F32Tensor:$query, NN_F32Tensor:$key,
                   NN_F32Tensor:$value, Optional<NN_F32Tensor>:$bias,
                   Optional<NN_BoolTensor>:$mask, UnitAttr:$divide,
                   F64Attr:$fill, UnitAttr:$fill_where_true, F64Attr:$scale,
                   UnitAttr:$transpose_key);
  let results = (outs NN_F32Tensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`bias` $bias^)? (`mask` $mask^)?
    `scale` `=` $scale (`divide` $divide^)? `fill` `=` $fill
    (`fill_where_true` $fill_where_true^)? (`transpose_key` $transpose_key^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

class NN_SoftmaxLikeOp<string mnemonic, string formula,
                       list<Trait> traits = []>
    : NN_SameTypeOp<mnemonic, !listconcat(traits, [NN_Sharded])> {
  let summary = formula # " along one axis";
  let description = "Computes `" # formula # "` along `axis` (negative "
      # "values count from the end), subtracting the maximum first for "
      # "numerical stability.\n\nExample:\n\n```mlir\n%y = nn." # mnemonic
      # " %x axis = -1 : (tensor<4x8xf32>) -> tensor<4x8xf32>\n```";
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return verifyAxisInRange(getOperation(), getAxis());
    }
  }];
  let assemblyFormat = [{
    $input `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def NN_SoftmaxOp : NN_SoftmaxLikeOp<"softmax", "exp(x) / sum(exp(x))",
                                   [NN_Differentiable, NN_HasRuntimeKernel,
                                    NN_ComputesInF32]>;
def NN_LogSoftmaxOp
    : NN_SoftmaxLikeOp<"log_softmax", "x - log(sum(exp(x)))",
                       [NN_Differentiable, NN_HasRuntimeKernel,
                        NN_ComputesInF32]>;

def NN_LayerNormOp
    : NN_InferredOp<"layer_norm", [AttrSizedOperandSegments, NN_Differentiable,
                                   NN_HasRuntimeKernel, NN_ComputesInF32,
                                   NN_Sharded]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes `input` over dimensions `axis..rank-1` to zero mean and unit
    variance (biased variance, `epsilon` added before the square root), then
    scales by `weight` and shifts by `bias` when given. Both have the shape of
    the normalized dimensions. ONNX `LayerNormalization` semantics.

    Example:

    ```mlir
    %y = nn.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-05
        : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, Optional<NN_FloatTensor>:$weight,
                   Optional<NN_FloatTensor>:$bias, I64Attr:$axis,
                   F64Attr:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`,` $weight^)? (`,` $bias^)? `axis` `=` $axis
    `epsilon` `=` $epsilon attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class NN_ReduceOp<string mnemonic, string what>
    : NN_InferredOp<mnemonic, [SameOperandsAndResultElementType,
                               NN_Differentiable, NN_HasRuntimeKernel,
                               NN_Costed, NN_Sharded]> {
  let summary = what # " over the given axes";
  let description = "Reduces `input` with " # what # " over `axes` (unique, "
      # "negative values count from the end). The reduced dimensions are "
      # "removed, or kept with size 1 under `keep_dims`.\n\nExample:\n\n"
      # "```mlir\n%s = nn." # mnemonic # " %x axes = [1] keep_dims "
      # ": (tensor<4x8xf32>) -> tensor<4x1xf32>\n```";
  let arguments = (ins NN_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                   UnitAttr:$keep_dims);
  let results = (outs NN_NumericTensor:$result);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferReduceResult(loc, getOperationName(), adaptor.getInput(),
                               adaptor.getAxes(), adaptor.getKeepDims(),
                               types);
    }
  }];
  let assemblyFormat = [{
    $input `axes` `=` $axes (`keep_dims` $keep_dims^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "the sum">;
def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "the arithmetic mean">;
def NN_ReduceMaxOp : NN_ReduceOp<"reduce_max", "the maximum">;

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def NN_TransposeOp
    : NN_InferredOp<"transpose", [SameOperandsAndResultElementType,
                                  NN_Differentiable, NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                  NN_Sharded]> {
  let summary = "permutes dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`. The gradient
    is the transpose by the inverse permutation.

    Example:

    ```mlir
    %y = nn.transpose %x permutation = [0, 2, 1]
        : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_ReshapeOp : NN_InferredOp<"reshape", [SameOperandsAndResultElementType,
                                            NN_Differentiable, NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                            NN_ShardedWithShapes]> {
  let summary = "reinterprets the elements under a new shape";
  let description = [{
    Row-major reshape to the static `shape`, which must hold as many elements
    as the input.

    Example:

    ```mlir
    %y = nn.reshape %x shape = [8, 4] : (tensor<2x4x4xf32>) -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `shape` `=` $shape attr-dict `:` functional-type(operands, results)
  }];
}

def NN_BroadcastToOp
    : NN_InferredOp<"broadcast_to", [SameOperandsAndResultElementType,
                                     NN_Differentiable, NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                     NN_ShardedWithShapes]> {
  let summary = "broadcasts to a larger shape";
  let description = [{
    Repeats `input` along dimensions where it has size 1 or that it lacks,
    NumPy style, to `shape`. The gradient is `nn.sum_to`.

    Example:

    ```mlir
    %y = nn.broadcast_to %b shape = [4, 8] : (tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `shape` `=` $shape attr-dict `:` functional-type(operands, results)
  }];
}

def NN_SumToOp
    : NN_InferredOp<"sum_to", [SameOperandsAndResultElementType, NN_HasRuntimeKernel,
                               NN_ShardedWithShapes]> {
  let summary = "sums a broadcast tensor back to its original shape";
  let description = [{
    The adjoint of broadcasting: sums `input` over the dimensions that
    broadcasting `shape` to the input's shape would have created or stretched
    (PyTorch's `sum_to_size`). `shape` must broadcast to the input's shape.

    Example:

    ```mlir
    %db = nn.sum_to %dy shape = [8] : (tensor<4x8xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $input `shape` `=` $shape attr-dict `:` functional-type(operands, results)
  }];
}

def NN_SliceOp : NN_InferredOp<"slice", [SameOperandsAndResultElementType,
                                        NN_Differentiable, NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                        NN_ShardedWithShapes]> {
  let summary = "strided slice";
  let description = [{
    Takes, in every dimension `d`, the elements `starts[d]`,
    `starts[d] + strides[d]`, ... below `limits[d]`, with
    `0 <= starts[d] <= limits[d] <= dim(d)` and `strides[d] >= 1`. The
    gradient is `nn.slice_grad`.

    Example:

    ```mlir
    %y = nn.slice %x starts = [0, 2] limits = [4, 8] strides = [1, 2]
        : (tensor<4x8xf32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `starts` `=` $starts `limits` `=` $limits `strides` `=` $strides
    attr-dict `:` functional-type(operands, results)
  }];
}

def NN_ConcatOp : NN_InferredOp<"concat", [SameOperandsAndResultElementType,
                                          NN_Differentiable, NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                          NN_Sharded]> {
  let summary = "joins tensors along one axis";
  let description = [{
    Concatenates one or more tensors of equal rank along `axis`; every other
    dimension must agree. Each input's gradient is its slice of the result
    gradient. The kernel takes the inputs as a count and an array
    (`pp_<target>_concat(frame, inputs_count, inputs, axis)`).

    Example:

    ```mlir
    %y = nn.concat %a, %b axis = 1
        : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def NN_SplitOp : NN_InferredOp<"split", [SameOperandsAndResultElementType,
                                        NN_Differentiable, NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                        NN_ShardedWithShapes]> {
  let summary = "cuts a tensor into pieces along one axis";
  let description = [{
    Splits `input` along `axis` into pieces of the given `sizes`, which must
    add up to the dimension. The inverse of `nn.concat`.

    Example:

    ```mlir
    %a, %b = nn.split %x axis = 1 sizes = [3, 5]
        : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                   DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $input `axis` `=` $axis `sizes` `=` $sizes attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_GatherOp : NN_InferredOp<"gather", [NN_Differentiable, NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                          NN_Sharded, NN_SeedsSharding]> {
  let summary = "takes slices of `data` at integer `indices` (embedding)";
  let description = [{
    ONNX `Gather`: the result has shape
    `data.shape[:axis] + indices.shape + data.shape[axis+1:]`. An embedding
    lookup is a gather on axis 0 of the table. A negative index counts from
    the end of the axis, as in ONNX; an index outside `[-n, n)` for an axis
    of size `n` is a run-time error. The gradient of `data` is
    `nn.gather_grad`; the indices carry none.

    Example:

    ```mlir
    %e = nn.gather %table, %ids axis = 0
        : (tensor<100x16xf32>, tensor<2x7xi64>) -> tensor<2x7x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, NN_IndexTensor:$indices,
                   I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `axis` `=` $axis attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def NN_CrossEntropyOp : NN_InferredOp<"cross_entropy", [NN_Differentiable,
                                                        NN_HasRuntimeKernel, NN_KernelTakesIndices,
                                                        NN_Costed, NN_ComputesInF32, NN_Sharded]> {
  let summary = "softmax cross-entropy with integer class labels";
  let description = [{
    `logits` is `[..., C]` with the classes last; `labels` has the leading
    shape `[...]`. Each position contributes `-log_softmax(logits)[label]`,
    except positions whose label equals `ignore_index`, which contribute
    nothing and are not counted. `reduction<mean>` divides the sum by the
    number of counted positions, `sum` returns the sum (both rank 0), `none`
    returns one value per position.

    Example:

    ```mlir
    %l = nn.cross_entropy %logits, %labels reduction<sum> ignore_index = -100
        : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                   NN_LossReductionAttr:$reduction,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `reduction` `` $reduction
    (`ignore_index` `=` $ignore_index^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_LinearCrossEntropyOp
    : NN_InferredOp<"linear_cross_entropy", [NN_Differentiable, NN_HasRuntimeKernel,
                                             NN_KernelTakesIndices, NN_Costed]> {
  let summary = "an LM head's matrix product and cross-entropy, chunk by chunk";
  let description = [{
    `cross_entropy(hidden x weight + bias, labels)` with `hidden`
    `[..., D]`, `weight` `[D, V]` (or `[V, D]` with `transpose_weight`), an
    optional `bias` `[V]` and `labels` `[...]`, as `nn.cross_entropy` of
    the logits `[..., V]` (the product, plus the bias as `nn.add` adds it)
    (`reduction`, `ignore_index`) would compute it, without making the
    logits whole: the kernel multiplies `chunk_rows` rows of `hidden` at a
    time, turns the chunk's logits into its rows' losses and adds the
    losses up at the end as `nn.cross_entropy`'s kernel does (in row order
    on the CPU).

    `pp-fuse-cross-entropy` makes it from an LM head's `nn.matmul` (and the
    `nn.add` of its bias) and the loss's `nn.cross_entropy`. Its gradient (`nn.linear_cross_entropy_grad`)
    recomputes each chunk's logits instead of saving them, so that neither
    the forward nor the backward ever holds more than one chunk of logits.

    Example:

    ```mlir
    %l = nn.linear_cross_entropy %h, %w, %labels reduction<sum>
        chunk_rows = 256 transpose_weight
        : (tensor<2x256x768xf32>, tensor<50257x768xf32>, tensor<2x256xi64>)
        -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_F32Tensor:$hidden, NN_F32Tensor:$weight,
                   NN_IndexTensor:$labels, Optional<NN_F32Tensor>:$bias,
                   NN_LossReductionAttr:$reduction,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   I64Attr:$chunk_rows, UnitAttr:$transpose_weight);
  let results = (outs NN_F32Tensor:$result);
  let assemblyFormat = [{
    $hidden `,` $weight `,` $labels (`bias` $bias^)? `reduction` `` $reduction
    (`ignore_index` `=` $ignore_index^)? `chunk_rows` `=` $chunk_rows
    (`transpose_weight` $transpose_weight^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_MseLossOp
    : NN_InferredOp<"mse_loss", [SameOperandsElementType, NN_Differentiable, NN_HasRuntimeKernel,
                                 NN_ComputesInF32]> {
  let summary = "squared error between `input` and `target`";
  let description = [{
    `(input - target)^2` elementwise for `reduction<none>`, its sum (`sum`)
    or its mean over all elements (`mean`) as a rank-0 tensor. The operands
    have the same shape.

    Example:

    ```mlir
    %l = nn.mse_loss %y, %t reduction<mean>
        : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$target,
                   NN_LossReductionAttr:$reduction);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $target `reduction` `` $reduction attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Gradient ops (emitted by pp-autodiff)
//===----------------------------------------------------------------------===//

class NN_ActivationGradOp<string mnemonic, string forward, string saved,
                          string formula>
    : NN_SameTypeOp<mnemonic, [NN_HasRuntimeKernel, NN_Elementwise]> {
  let summary = "gradient of nn." # forward;
  let description = "Given the result gradient `grad` and the forward "
      # "op's " # saved # ", returns the input gradient `" # formula # "`."
      # "\n\nExample:\n\n```mlir\n%dx = nn." # mnemonic # " %dy, %"
      # saved # " : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>\n```";
  let arguments = (ins NN_FloatTensor:$grad,
                   NN_FloatTensor:$forward_value);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $forward_value attr-dict `:` functional-type(operands, results)
  }];
}

def NN_ReluGradOp
    : NN_ActivationGradOp<"relu_grad", "relu", "input", "grad * (input > 0)">;
def NN_SigmoidGradOp : NN_ActivationGradOp<"sigmoid_grad", "sigmoid", "result",
                                           "grad * result * (1 - result)">;
def NN_TanhGradOp : NN_ActivationGradOp<"tanh_grad", "tanh", "result",
                                        "grad * (1 - result^2)">;
def NN_SqrtGradOp : NN_ActivationGradOp<"sqrt_grad", "sqrt", "result",
                                        "grad / (2 * result)">;
def NN_RsqrtGradOp : NN_ActivationGradOp<"rsqrt_grad", "rsqrt", "result",
                                         "-0.5 * grad * result^3">;
def NN_ErfGradOp : NN_ActivationGradOp<"erf_grad", "erf", "input",
                                       "grad * 2 / sqrt(pi) * exp(-input^2)">;

class NN_BinaryOperandGradOp<string mnemonic, string forward,
                             string lhsFormula, string rhsFormula>
    : NN_InferredOp<mnemonic, [SameOperandsAndResultElementType,
                               NN_HasRuntimeKernel, NN_Elementwise]> {
  let summary = "gradient of nn." # forward # " with respect to one operand";
  let description = "Given the result gradient `grad` and the forward "
      # "operands `lhs` and `rhs` (which broadcast to the shape of `grad`), "
      # "returns, in that broadcast shape, the gradient of `lhs` (`operand = "
      # "0`): `" # lhsFormula # "`, or of `rhs` (`operand = 1`): `"
      # rhsFormula # "`. As in PyTorch.\n\nExample:\n\n```mlir\n%da = nn."
      # mnemonic # " %dy, %a, %b operand = 0 : (tensor<4x8xf32>, "
      # "tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>\n```";
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$lhs,
                   NN_FloatTensor:$rhs, I64Attr:$operand);
  let results = (outs NN_FloatTensor:$result);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferOperandGradResult(loc, getOperationName(), adaptor.getGrad(),
                                    adaptor.getLhs(), adaptor.getRhs(),
                                    adaptor.getOperand(), types);
    }
  }];
  let assemblyFormat = [{
    $grad `,` $lhs `,` $rhs `operand` `=` $operand attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_PowGradOp : NN_BinaryOperandGradOp<"pow_grad", "pow",
    "grad * rhs * lhs^(rhs - 1), 0 where rhs = 0",
    "grad * lhs^rhs * log(lhs), 0 where lhs = 0 and rhs >= 0">;
def NN_MaximumGradOp : NN_BinaryOperandGradOp<"maximum_grad", "maximum",
    "grad where lhs > rhs, grad / 2 where lhs = rhs, else 0",
    "grad where rhs > lhs, grad / 2 where lhs = rhs, else 0">;
def NN_MinimumGradOp : NN_BinaryOperandGradOp<"minimum_grad", "minimum",
    "grad where lhs < rhs, grad / 2 where lhs = rhs, else 0",
    "grad where rhs < lhs, grad / 2 where lhs = rhs, else 0">;

def NN_ReduceSumGradOp
    : NN_InferredOp<"reduce_sum_grad", [SameOperandsAndResultElementType,
                                        NN_HasRuntimeKernel, NN_ShardedWithShapes]> {
  let summary = "gradient of nn.reduce_sum (broadcast back)";
  let description = [{
    Repeats `grad`, shaped like the result of a reduction of a tensor of
    `input_shape` over `axes` (with or without the kept dimensions), along
    the reduced dimensions: a tensor of `input_shape`.

    Example:

    ```mlir
    %dx = nn.reduce_sum_grad %dy axes = [1] input_shape = [4, 8]
        : (tensor<4xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, DenseI64ArrayAttr:$axes,
                   DenseI64ArrayAttr:$input_shape);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `axes` `=` $axes `input_shape` `=` $input_shape attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_ReduceMaxGradOp
    : NN_InferredOp<"reduce_max_grad", [SameOperandsAndResultElementType,
                                        NN_HasRuntimeKernel]> {
  let summary = "gradient of nn.reduce_max";
  let description = [{
    Given the result gradient `grad`, the forward input and the forward
    result (both reduced over `axes`, with or without the kept dimensions),
    sends each reduced group's gradient to the elements equal to its maximum,
    split evenly among ties (PyTorch's `amax`); the others get 0.

    Example:

    ```mlir
    %dx = nn.reduce_max_grad %dy, %x, %y axes = [1]
        : (tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                   NN_FloatTensor:$result_value, DenseI64ArrayAttr:$axes);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $result_value `axes` `=` $axes attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_GeluGradOp : NN_SameTypeOp<"gelu_grad", [NN_HasRuntimeKernel,
                                                NN_Elementwise]> {
  let summary = "gradient of nn.gelu";
  let description = [{
    Given the result gradient and the forward input, returns the input
    gradient of `nn.gelu` under the same `approximate` mode.

    Example:

    ```mlir
    %dx = nn.gelu_grad %dy, %x approximate<tanh>
        : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
      DefaultValuedAttr<NN_GeluApproximationAttr,
                        "::pp::nn::GeluApproximation::none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`approximate` `` $approximate^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

class NN_SoftmaxLikeGradOp<string mnemonic, string forward, string formula,
                           list<Trait> traits = []>
    : NN_SameTypeOp<mnemonic, !listconcat(traits, [NN_Sharded])> {
  let summary = "gradient of nn." # forward;
  let description = "Given the result gradient `grad` and the forward "
      # "result `result` of nn." # forward # " along `axis`, returns the input "
      # "gradient `" # formula # "`.\n\nExample:\n\n```mlir\n%dx = nn."
      # mnemonic # " %dy, %y axis = -1 "
      # ": (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>\n```";
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$result_value,
                   I64Attr:$axis);
  let results = (outs NN_FloatTensor:$result);
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return verifyAxisInRange(getOperation(), getAxis());
    }
  }];
  let assemblyFormat = [{
    $grad `,` $result_value `axis` `=` $axis attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_SoftmaxGradOp : NN_SoftmaxLikeGradOp<"softmax_grad", "softmax",
    "result * (grad - sum(grad * result, axis))", [NN_HasRuntimeKernel]>;
def NN_LogSoftmaxGradOp : NN_SoftmaxLikeGradOp<"log_softmax_grad",
    "log_softmax", "grad - exp(result) * sum(grad, axis)",
    [NN_HasRuntimeKernel]>;

def NN_LayerNormGradOp
    : NN_InferredOp<"layer_norm_grad", [NN_HasRuntimeKernel, NN_Sharded]> {
  let summary = "gradient of nn.layer_norm";
  let description = [{
    Given the result gradient, the forward input and the weight (ones for a
    `nn.layer_norm` without one), returns the gradients of the input, the
    weight and the bias (the last two shaped like the normalized dimensions
    `axis..rank-1`). The statistics are recomputed from the input; the
    kernels compute one result per call.

    Example:

    ```mlir
    %dx, %dg, %db = nn.layer_norm_grad %dy, %x, %g axis = 1 epsilon = 1.0e-05
        : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>)
        -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                   NN_FloatTensor:$weight, I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$weight_grad,
                  NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `axis` `=` $axis `epsilon` `=` $epsilon
    attr-dict `:` functional-type(operands, results)
  }];
}

def NN_SliceGradOp : NN_InferredOp<"slice_grad", [SameOperandsAndResultElementType,
                                                 NN_HasRuntimeKernel, NN_KernelTakesAnyElementType,
                                                 NN_ShardedWithShapes]> {
  let summary = "gradient of nn.slice";
  let description = [{
    Scatters `grad`, shaped like the result of `nn.slice` with the same
    `starts`, `limits` and `strides`, into zeros of `input_shape`.

    Example:

    ```mlir
    %dx = nn.slice_grad %dy input_shape = [4, 8] starts = [0, 2]
        limits = [4, 8] strides = [1, 2] : (tensor<4x3xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$grad, DenseI64ArrayAttr:$input_shape,
                   DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$limits,
                   DenseI64ArrayAttr:$strides);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $grad `input_shape` `=` $input_shape `starts` `=` $starts
    `limits` `=` $limits `strides` `=` $strides attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_GatherGradOp : NN_InferredOp<"gather_grad", [NN_HasRuntimeKernel, NN_KernelTakesIndices,
                                                   NN_ShardedWithShapes]> {
  let summary = "gradient of nn.gather (scatter-add)";
  let description = [{
    Adds every slice of `grad` (shaped like the result of `nn.gather` with the
    same `indices` and `axis`) into the row of a zero tensor of `data_shape`
    that its index selected. Repeated indices accumulate in the order of the
    indices (the kernels sum in that fixed order, without atomics): this is
    the embedding gradient.

    Example:

    ```mlir
    %dt = nn.gather_grad %dy, %ids axis = 0 data_shape = [100, 16]
        : (tensor<2x7x16xf32>, tensor<2x7xi64>) -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins NN_NumericTensor:$grad, NN_IndexTensor:$indices,
                   I64Attr:$axis, DenseI64ArrayAttr:$data_shape);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices `axis` `=` $axis `data_shape` `=` $data_shape attr-dict
    `:` functional-type(operands, results)
  }];
}

def NN_CrossEntropyGradOp
    : NN_InferredOp<"cross_entropy_grad", [NN_HasRuntimeKernel, NN_KernelTakesIndices, NN_Costed,
                                           NN_Sharded]> {
  let summary = "gradient of nn.cross_entropy with respect to the logits";
  let description = [{
    Given the loss gradient `grad` (shaped like the loss), the logits and the
    labels, returns `(softmax(logits) - onehot(labels)) * grad`, scaled as the
    `reduction` requires and zero at ignored positions.

    Example:

    ```mlir
    %dl = nn.cross_entropy_grad %g, %logits, %labels reduction<sum>
        : (tensor<f32>, tensor<8x10xf32>, tensor<8xi64>) -> tensor<8x10xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$logits,
                   NN_IndexTensor:$labels, NN_LossReductionAttr:$reduction,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels `reduction` `` $reduction
    (`ignore_index` `=` $ignore_index^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_AttentionGradOp : NN_InferredOp<"attention_grad", [
    AttrSizedOperandSegments, NN_HasRuntimeKernel, NN_KernelTakesIndices,
    NN_KernelMakesAllResults, NN_Costed, NN_Sharded]> {
  let summary = "gradient of nn.attention";
  let description = [{
    Given the result gradient `grad` and the operands and attributes of an
    `nn.attention`, returns the gradients of its query, key and value (of
    their types). The kernel recomputes each head's probabilities from the
    query and key, as the forward computed them, and makes all three
    gradients in one call (NN_KernelMakesAllResults).

    Example:

    ```mlir
    %dq, %dk, %dv = nn.attention_grad %do, %q, %kt, %v bias %causal
        scale = 1.250000e-01 fill = 0.000000e+00
        : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>,
           tensor<2x4x8x16xf32>, tensor<8x8xf32>)
        -> (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>)
    ```
  }];
  let arguments = (ins NN_F32Tensor:$grad, NN_F32Tensor:$query,
                   NN_F32Tensor:$key, NN_F32Tensor:$value,
                   Optional<NN_F32Tensor>:$bias, Optional<NN_BoolTensor>:$mask,
                   UnitAttr:$divide, F64Attr:$fill, UnitAttr:$fill_where_true,
                   F64Attr:$scale, UnitAttr:$transpose_key);
  let results = (outs NN_F32Tensor:$query_grad, NN_F32Tensor:$key_grad,
                 NN_F32Tensor:$value_grad);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value (`bias` $bias^)? (`mask` $mask^)?
    `scale` `=` $scale (`divide` $divide^)? `fill` `=` $fill
    (`fill_where_true` $fill_where_true^)? (`transpose_key` $transpose_key^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def NN_LinearCrossEntropyGradOp : NN_InferredOp<"linear_cross_entropy_grad", [
    NN_HasRuntimeKernel, NN_KernelTakesIndices, NN_KernelMakesAllResults,
    NN_Costed]> {
  let summary = "gradient of nn.linear_cross_entropy";
  let description = [{
    Given the loss gradient `grad` (shaped like the loss) and the operands
    and attributes of an `nn.linear_cross_entropy`, returns the gradients
    of its `hidden`, `weight` and `bias` when it has one (of their types;
    the bias's sums the logits' gradient over the rows as `nn.sum_to`
    does, in double in row order). The kernel recomputes
    each chunk's logits as the forward made them, turns them into their
    gradient in place as `nn.cross_entropy_grad` does, and multiplies it
    into the chunk's rows of the hidden gradient and into the weight
    gradient, which sums the chunks in order. Where the weight's and bias's
    gradients are each a gradient result of the function that nothing else
    reads, or unused (a frozen parameter), pp-lower-to-runtime has the
    kernel add them into the step's sums
    (`pp_<target>_linear_cross_entropy_grad_add`) instead of making them.

    Example:

    ```mlir
    %dh, %dw = nn.linear_cross_entropy_grad %g, %h, %w, %labels reduction<sum>
        chunk_rows = 256 transpose_weight
        : (tensor<f32>, tensor<2x256x768xf32>, tensor<50257x768xf32>,
           tensor<2x256xi64>)
        -> (tensor<2x256x768xf32>, tensor<50257x768xf32>)
    ```
  }];
  let arguments = (ins NN_F32Tensor:$grad, NN_F32Tensor:$hidden,
                   NN_F32Tensor:$weight, NN_IndexTensor:$labels,
                   Optional<NN_F32Tensor>:$bias,
                   NN_LossReductionAttr:$reduction,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   I64Attr:$chunk_rows, UnitAttr:$transpose_weight);
  let results = (outs NN_F32Tensor:$hidden_grad, NN_F32Tensor:$weight_grad,
                 Optional<NN_F32Tensor>:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $hidden `,` $weight `,` $labels (`bias` $bias^)? `reduction` `` $reduction
    (`ignore_index` `=` $ignore_index^)? `chunk_rows` `=` $chunk_rows
    (`transpose_weight` $transpose_weight^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_LinearCrossEntropyHiddenGradOp
    : NN_InferredOp<"linear_cross_entropy_hidden_grad", [
        NN_HasRuntimeKernel, NN_KernelTakesIndices, NN_Costed]> {
  let summary = "gradient of nn.linear_cross_entropy's hidden states alone";
  let description = [{
    `nn.linear_cross_entropy_grad`'s first result, for a head whose weight
    (and bias) take no gradient (frozen, or constants): the kernel
    recomputes each
    chunk's logits and multiplies their gradient into the hidden states'
    gradient only, so that it neither makes a weight-sized gradient nor
    runs its GEMM.

    Example:

    ```mlir
    %dh = nn.linear_cross_entropy_hidden_grad %g, %h, %w, %labels
        reduction<sum> chunk_rows = 256 transpose_weight
        : (tensor<f32>, tensor<2x256x768xf32>, tensor<50257x768xf32>,
           tensor<2x256xi64>) -> tensor<2x256x768xf32>
    ```
  }];
  let arguments = (ins NN_F32Tensor:$grad, NN_F32Tensor:$hidden,
                   NN_F32Tensor:$weight, NN_IndexTensor:$labels,
                   Optional<NN_F32Tensor>:$bias,
                   NN_LossReductionAttr:$reduction,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   I64Attr:$chunk_rows, UnitAttr:$transpose_weight);
  let results = (outs NN_F32Tensor:$hidden_grad);
  let assemblyFormat = [{
    $grad `,` $hidden `,` $weight `,` $labels (`bias` $bias^)? `reduction` `` $reduction
    (`ignore_index` `=` $ignore_index^)? `chunk_rows` `=` $chunk_rows
    (`transpose_weight` $transpose_weight^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_MseLossGradOp
    : NN_InferredOp<"mse_loss_grad", [NN_HasRuntimeKernel]> {
  let summary = "gradient of nn.mse_loss with respect to the input";
  let description = [{
    Given the loss gradient `grad` (shaped like the loss), returns
    `2 * (input - target) * grad`, divided by the element count for
    `reduction<mean>`.

    Example:

    ```mlir
    %dy = nn.mse_loss_grad %g, %y, %t reduction<mean>
        : (tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                   NN_FloatTensor:$target, NN_LossReductionAttr:$reduction);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `,` $target `reduction` `` $reduction attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Fusion (built by pp-fuse-elementwise)
//===----------------------------------------------------------------------===//

def NN_FusionOp : Op<NN_Dialect, "fusion", [IsolatedFromAbove, SingleBlock,
    RecursiveMemoryEffects, RecursivelySpeculatable]> {
  let summary = "elementwise ops computed in one pass over memory";
  let description = [{
    A connected group of elementwise ops (`NN_Elementwise`) whose results
    all have the same shape, the fusion's shape. The body's arguments are
    the `inputs`, each of the fusion's shape or broadcasting to it as in
    NumPy; `nn.yield` returns the values the fusion hands out (several when
    an intermediate is also used outside). Generated code computes every
    result in one loop over the elements, calling per element the formulas
    that the ops' kernels call, so the results have the bits of the unfused
    ops. `pp-fuse-elementwise` builds it inside stage functions.

    Example:

    ```mlir
    %y, %z = nn.fusion (%x, %b)
        : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %s = nn.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %g = nn.gelu %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
      nn.yield %s, %g : tensor<4x8xf32>, tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    ` ` `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let extraClassDeclaration = [{
    /// The type of result 0, whose shape every result and every op of the
    /// body has.
    ::mlir::RankedTensorType getFusionType();
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def NN_YieldOp : Op<NN_Dialect, "yield", [Pure, Terminator, ReturnLike,
                                           HasParent<"FusionOp">]> {
  let summary = "the values an nn.fusion hands out";
  let description = [{
    Terminates the body of an `nn.fusion`: its operands become the fusion's
    results, in order.

    Example:

    ```mlir
    nn.yield %s, %g : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // PP_DIALECTS_NN_IR_NNOPS_TD
