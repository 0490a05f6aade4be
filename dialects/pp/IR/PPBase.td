//===- PPBase.td - pp dialect definition -------------------*- tablegen -*-===//
//
// The pp dialect: the parallel structure of a training program. Device
// meshes with named axes, pipeline stages, transfers between stages and
// collectives inside them.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_PP_IR_PPBASE_TD
#define PP_DIALECTS_PP_IR_PPBASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def PP_Dialect : Dialect {
  let name = "pp";
  let cppNamespace = "::pp";
  let summary = "Pipeline, tensor and data parallel structure";
  let description = [{
    The `pp` dialect describes how a model of the `nn` dialect runs on many
    devices. A `pp.mesh` names the device axes and what each is for (pipeline,
    data, tensor parallelism). A `pp.stage` is one pipeline stage's
    computation on the devices of one pipeline coordinate. Values move between
    stages with `pp.transfer` in the whole-program view and with
    `pp.send`/`pp.recv` once every stage is its own program; any number of
    named tensors travel together. Collectives reduce or gather over mesh axes
    inside a stage.

    The design follows Shardy's MPMD dialect (stages as fragments on named
    meshes, transfers between them) rather than upstream `shard`, whose
    `shard.grid` axes are unnamed and carry no role: the runtime needs to
    know which axes are data parallel (the sampler, the loss) and which hold
    distinct shards (global gradient clipping).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes defined in PPAttrs.td (PPAttrs.cpp).
    void registerAttributes();
  }];
}

def PP_AxisKind : I32EnumAttr<"AxisKind", "what a mesh axis parallelizes", [
      I32EnumAttrCase<"pipeline", 0>,
      I32EnumAttrCase<"data_replicate", 1>,
      I32EnumAttrCase<"data_shard", 2>,
      I32EnumAttrCase<"tensor", 3>,
      I32EnumAttrCase<"context", 4>
    ]> {
  let cppNamespace = "::pp";
  let genSpecializedAttr = 0;
}

// `eval` is a training program's forward without the values its backward
// saves (pp-derive-eval): the loss of held-out data, nothing kept.
def PP_StagePhase : I32EnumAttr<"StagePhase",
    "which part of a training step a stage computes", [
      I32EnumAttrCase<"forward", 0>,
      I32EnumAttrCase<"backward", 1>,
      I32EnumAttrCase<"backward_input", 2>,
      I32EnumAttrCase<"backward_weight", 3>,
      I32EnumAttrCase<"eval", 4>
    ]> {
  let cppNamespace = "::pp";
  let genSpecializedAttr = 0;
}
def PP_StagePhaseAttr : EnumAttr<PP_Dialect, PP_StagePhase, "phase"> {
  let assemblyFormat = "`<` $value `>`";
}

def PP_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines values", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>
    ]> {
  let cppNamespace = "::pp";
  let genSpecializedAttr = 0;
}
def PP_ReductionKindAttr : EnumAttr<PP_Dialect, PP_ReductionKind,
                                    "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // PP_DIALECTS_PP_IR_PPBASE_TD
