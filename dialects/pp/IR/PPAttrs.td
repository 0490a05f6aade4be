//===- PPAttrs.td - pp dialect attributes ------------------*- tablegen -*-===//

#ifndef PP_DIALECTS_PP_IR_PPATTRS_TD
#define PP_DIALECTS_PP_IR_PPATTRS_TD

include "dialects/pp/IR/PPBase.td"

class PP_Attr<string name, string attrMnemonic>
    : AttrDef<PP_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def PP_MeshAxisAttr : PP_Attr<"MeshAxis", "axis"> {
  let summary = "one named axis of a device mesh";
  let description = [{
    A mesh axis has a name, a size (number of devices along it) and a kind:
    `pipeline` (stages), `data_replicate` and `data_shard` (data parallel
    replicas; both count for the sampler and the loss), `tensor` (tensor and
    sequence parallel shards) or `context`.

    Example: `#pp.axis<"dp" = 2, data_replicate>`
  }];
  let parameters = (ins StringRefParameter<"axis name">:$name,
                    "int64_t":$size,
                    EnumParameter<PP_AxisKind>:$kind);
  let assemblyFormat = "`<` $name `=` $size `,` $kind `>`";
  let genVerifyDecl = 1;
}

def PP_ShardingAttr : PP_Attr<"Sharding", "sharding"> {
  let summary = "how a tensor's dimensions are split over mesh axes";
  let description = [{
    One list of mesh axis names per tensor dimension: the dimension is split
    over the product of those axes, major to minor; an empty list leaves it
    whole. No axis may shard two dimensions. Axes not named replicate the
    tensor. The attribute is checked against the tensor it annotates
    (`pp.sharding` on a function argument or result).

    Example: `#pp.sharding<[[], ["tp"]]>` splits the columns of a matrix over
    the `tp` axis.
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims);
  let assemblyFormat = "`<` $dims `>`";
  let genVerifyDecl = 1;
}

def PP_PlacementAttr : PP_Attr<"Placement", "placement"> {
  let summary = "the pipeline stages that hold a parameter";
  let description = [{
    The stages that keep a copy of a parameter. One stage is the usual case;
    a tied weight (an embedding shared by the first and the last stage) lists
    both, and its gradients are summed over them. Stages are unique and
    non-negative.

    Example: `#pp.placement<stages = [0, 3]>`
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$stages);
  // Custom so that an empty list parses and reaches the verifier.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // PP_DIALECTS_PP_IR_PPATTRS_TD
