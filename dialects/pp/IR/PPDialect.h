//===- PPDialect.h - pp dialect declaration ---------------------*- C++ -*-===//
//
// The pp dialect: device meshes, pipeline stages, transfers and collectives.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_PP_IR_PPDIALECT_H
#define PP_DIALECTS_PP_IR_PPDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/pp/IR/PPDialect.h.inc"
#include "dialects/pp/IR/PPEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/pp/IR/PPAttrs.h.inc"

namespace pp {

/// The resource that pipeline sends, receives and collectives touch, so that
/// they keep their order and are never removed as dead code.
struct PipelineChannelResource
    : public mlir::SideEffects::Resource::Base<PipelineChannelResource> {
  llvm::StringRef getName() override { return "pp.channel"; }
};

/// Discardable attribute names the dialect verifies on function arguments and
/// results.
constexpr llvm::StringLiteral kShardingAttrName = "pp.sharding";
constexpr llvm::StringLiteral kPlacementAttrName = "pp.placement";

/// Names the compiler pipeline attaches to functions, arguments, results and
/// ops (docs/architecture.md, "Attributes along the pipeline").
/// The model's own name of a function argument or result.
constexpr llvm::StringLiteral kNameAttrName = "pp.name";
/// What a function argument is: one of the `kRole*` values.
constexpr llvm::StringLiteral kRoleAttrName = "pp.role";
constexpr llvm::StringLiteral kRoleInput = "input";
constexpr llvm::StringLiteral kRoleParameter = "parameter";
/// A parameter the user froze (pp-autodiff freeze=REGEX): loaded and passed
/// like a parameter, never differentiated or updated.
constexpr llvm::StringLiteral kRoleFrozen = "frozen";
/// A model value that reaches the loss only through non-differentiable
/// operands (a mask, an index table): loaded like a parameter, never trained.
constexpr llvm::StringLiteral kRoleConstant = "constant";
constexpr llvm::StringLiteral kRoleLabel = "label";
constexpr llvm::StringLiteral kRoleLossScale = "loss_scale";
constexpr llvm::StringLiteral kRoleLoss = "loss";
constexpr llvm::StringLiteral kRoleGradient = "gradient";
constexpr llvm::StringLiteral kRoleSaved = "saved";
/// A stage function argument that is the compute-type copy (bf16, f16) of
/// the parameter (frozen, constant tensor) of its name: the runtime casts
/// the master once per step and passes the copy to every call
/// (pp-hoist-parameter-casts).
constexpr llvm::StringLiteral kRoleComputeCopy = "compute_copy";
/// A model output of a forward-only program.
constexpr llvm::StringLiteral kRoleOutput = "output";
/// The import's record of the model's floating-point tensors, on the
/// module: `{trained = {NAME = ELEMENTS : i64, ...}, held = {...}}`, those
/// that train (the model's parameters) and those it held constant (ONNX
/// initializers that are no parameters, TorchScript buffers), and
/// optionally `folded = {NAME = "PARAMETER", ...}`: trained initializers
/// that an exporter's optimizer folded from a parameter the model no
/// longer has (GPT-2's position embedding at the traced positions), which
/// the manifest's "folded_parameters" carries to pp-run --weights. pp-opt
/// --pp-report prints it; pp-emit-package writes `held` into the manifest
/// ("held_constants"), which pp-run prints.
constexpr llvm::StringLiteral kImportRecordAttrName = "pp.import_record";
/// The element type a model stores a parameter in, on a parameter that
/// pp-apply-precision widened to its f32 master copy (a bf16 or f16
/// weight): pp-emit-package writes it to the manifest ("model_dtype").
constexpr llvm::StringLiteral kModelDtypeAttrName = "pp.model_dtype";
/// The reduced type a program computes in ("bf16" or "fp16"), on the
/// module: pp-apply-precision records it, pp-emit-package writes it to the
/// manifest ("precision"); absent for f32.
constexpr llvm::StringLiteral kPrecisionAttrName = "pp.precision";
/// The loss of a training program: `{kind, output, ignore_index}` on @main.
constexpr llvm::StringLiteral kLossAttrName = "pp.loss";
/// The model's inputs and outputs of a forward-only program, in the
/// model's order: `{inputs = [{name, type}, ...], outputs = [name, ...]}`
/// on @main (pp-mark-outputs), then on the module (pp-outline-stages).
constexpr llvm::StringLiteral kForwardOnlyAttrName = "pp.forward_only";
/// The default-domain ONNX opset of a model the ONNX importer made, on
/// @main: it marks programs imported from ONNX.
constexpr llvm::StringLiteral kOnnxOpsetAttrName = "pp.onnx_opset";
/// A parameter's initial value (usually a `dense_resource` blob).
constexpr llvm::StringLiteral kInitAttrName = "pp.init";
/// The model node an op implements; forward and backward ops of one node
/// share it and are placed on the same stage.
constexpr llvm::StringLiteral kNodeAttrName = "pp.node";
/// Marks an op of attention (pp-mark-attention) and, after pp-autodiff,
/// its gradient's ops: the profile counts their kernels as attention.
constexpr llvm::StringLiteral kAttentionAttrName = "pp.attention";
/// The pipeline stage an op runs on.
constexpr llvm::StringLiteral kStageAttrName = "pp.stage";
/// The stages holding a parameter used on several (tied weights), in
/// increasing order, on its @main argument; `pp.stage` is the first, the
/// owner.
constexpr llvm::StringLiteral kHolderStagesAttrName = "pp.holder_stages";
/// On a gradient result of a parameter that several nodes use: which part
/// of its gradient the result is, one part per node in program order
/// (pp-autodiff). The runtime sums each part over the microbatches on its
/// own and adds the parts in this order, so that the gradient has the same
/// bits whatever the stages the nodes land on.
constexpr llvm::StringLiteral kGradientPartAttrName = "pp.gradient_part";
/// Per-stage cost summaries pp-partition records on @main.
constexpr llvm::StringLiteral kStageCostsAttrName = "pp.stage_costs";
/// The mesh pp-partition declares for the pipeline.
constexpr llvm::StringLiteral kPipelineMeshName = "pipeline";
/// `#pp.phase<...>` of an op: forward (absent) or backward.
constexpr llvm::StringLiteral kPhaseAttrName = "pp.phase";
/// On a backward op that recomputes a forward op (pp-recompute): a copy
/// that any half of a split backward may make again from the values the
/// forward keeps, rather than receive from the other half.
constexpr llvm::StringLiteral kRecomputedAttrName = "pp.recomputed";

/// `{pp.name = name, pp.role = role}`, the attributes of a named argument or
/// result.
mlir::DictionaryAttr getNameAndRoleAttrs(mlir::MLIRContext *context,
                                         llvm::StringRef name,
                                         llvm::StringRef role);

} // namespace pp

#endif // PP_DIALECTS_PP_IR_PPDIALECT_H
