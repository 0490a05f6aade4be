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
    tensor.

    `blocks` (one count per dimension, 1 when absent) views a sharded
    dimension as that many equal blocks, each split over the axes: a device
    holds its piece of every block, in block order. A fused QKV projection's
    96 output features are 3 blocks (q, k, v), so that each device holds its
    heads of q, k and v.

    `partial` names axes over which the tensor is a pending sum: the value is
    the sum of the devices' tensors (the result of a row-parallel matmul
    before its all-reduce).

    The attribute is checked against the tensor it annotates (`pp.sharding`
    on a function argument, one per result in an op's `pp.sharding` array).

    Examples: `#pp.sharding<[[], ["tp"]]>` splits the columns of a matrix
    over the `tp` axis; `#pp.sharding<[[], ["tp"]], blocks = [1, 3]>` the
    columns of a fused QKV weight; `#pp.sharding<[[], []], partial =
    ["tp"]>` is a pending sum over `tp`. `blocks` and `partial` may come in
    either order.
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims,
                    OptionalParameter<"::mlir::DenseI64ArrayAttr">:$blocks,
                    OptionalParameter<"::mlir::ArrayAttr">:$partial);
  let assemblyFormat = [{
    `<` $dims (`,` struct($blocks, $partial)^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The block count of dimension `dim` (1 without `blocks`).
    int64_t getBlockCount(int64_t dim) const;
    /// Why this sharding cannot annotate a tensor of `type` on a mesh whose
    /// axes have the sizes `axisSize` gives (0 for an unknown axis), or "".
    std::string problemWith(::mlir::RankedTensorType type,
        ::llvm::function_ref<int64_t(::llvm::StringRef)> axisSize) const;
    /// The shape of the whole tensor of which a device holds a shard of
    /// shape `local`: every sharded dimension times the sizes `axisSize`
    /// gives its axes.
    ::llvm::SmallVector<int64_t> getGlobalShape(::llvm::ArrayRef<int64_t> local,
        ::llvm::function_ref<int64_t(::llvm::StringRef)> axisSize) const;
  }];
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
