//===- NNInterfaces.td - what an nn op says about itself ---*- tablegen -*-===//
//
// The two facts the compiler needs of every op beyond its definition: how to
// differentiate it (GradientOpInterface, implemented in NNGradients.cpp) and
// whether the runtime has a kernel for it (HasRuntimeKernel). Adding an op
// touches its ODS definition, its gradient rule and its kernel; nothing in
// the passes names individual ops.
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
/// several results is called once per result with its index. Optional
/// operands need AttrSizedOperandSegments, and the only optional attributes
/// are unit flags.
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
/// operands as indices (labels, gather indices; the op's definition limits
/// them to i32 and i64): the integer operands may stay integer, everything
/// else is of one float type.
def NN_KernelTakesIndices : NativeOpTrait<"KernelTakesIndices"> {
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
def NN_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::pp::nn";
}

#endif // PP_DIALECTS_NN_IR_NNINTERFACES_TD
