//===- NNBase.td - nn dialect definition ------------------*- tablegen -*-===//
//
// The nn dialect: neural-network ops on ranked tensors, the graph that the
// frontends import and that autodiff, partitioning and lowering transform.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_NNBASE_TD
#define PP_DIALECTS_NN_IR_NNBASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::pp::nn";
  let summary = "Tensor-graph dialect for neural-network training";
  let description = [{
    The `nn` dialect holds the computation of a model: value-semantic ops on
    ranked tensors, forward and backward. Frontends (ONNX, TorchScript) import
    into it, `pp-autodiff` adds the gradient ops it defines, and the pipeline
    passes split it into stages of the `pp` dialect.

    Every op infers its result types from its operands and attributes; the
    written result type must equal the inferred one, so a verifier error names
    the operand shapes and attributes that disagree. Constants are upstream
    `arith.constant`, functions are upstream `func.func`.
  }];
  // Gradient rules build `arith.constant` zeros.
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let useDefaultAttributePrinterParser = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def NN_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu evaluates the Gaussian CDF", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"tanh", 1>
    ]> {
  let cppNamespace = "::pp::nn";
  let genSpecializedAttr = 0;
}
def NN_GeluApproximationAttr : EnumAttr<NN_Dialect, NN_GeluApproximation,
                                        "gelu_approximation"> {
  let assemblyFormat = "`<` $value `>`";
}

def NN_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines its per-element values", [
      I32EnumAttrCase<"mean", 0>,
      I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"none", 2>
    ]> {
  let cppNamespace = "::pp::nn";
  let genSpecializedAttr = 0;
}
def NN_LossReductionAttr : EnumAttr<NN_Dialect, NN_LossReduction,
                                    "loss_reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

/// The element types a tensor can be cast to. The values are those of the
/// runtime's `pp_dtype` (runtime/pp_runtime.h), so that the attribute, a
/// plain integer attribute, reaches a kernel as the `pp_dtype` it names.
def NN_Dtype : I32EnumAttr<"Dtype", "an element type of the runtime", [
      I32EnumAttrCase<"f32", 0>,
      I32EnumAttrCase<"f64", 1>,
      I32EnumAttrCase<"i32", 2>,
      I32EnumAttrCase<"i64", 3>,
      I32EnumAttrCase<"i1", 4>,
      I32EnumAttrCase<"f16", 5>,
      I32EnumAttrCase<"bf16", 6>
    ]> {
  let cppNamespace = "::pp::nn";
}

//===----------------------------------------------------------------------===//
// Type constraints and base classes
//===----------------------------------------------------------------------===//

def NN_FloatTensor : RankedTensorOf<[AnyFloat]>;
def NN_F32Tensor : RankedTensorOf<[F32]>;
def NN_IndexTensor : RankedTensorOf<[AnySignlessInteger]>;
def NN_BoolTensor : RankedTensorOf<[I1]>;
def NN_NumericTensor : RankedTensorOf<[AnyFloat, AnySignlessInteger]>;

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, !listconcat(traits, [Pure])>;

#endif // PP_DIALECTS_NN_IR_NNBASE_TD
