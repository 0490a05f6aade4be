//===- PPOps.td - pp dialect ops ---------------------------*- tablegen -*-===//

#ifndef PP_DIALECTS_PP_IR_PPOPS_TD
#define PP_DIALECTS_PP_IR_PPOPS_TD

include "dialects/pp/IR/PPAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class PP_Op<string mnemonic, list<Trait> traits = []>
    : Op<PP_Dialect, mnemonic, traits>;

/// Point-to-point traffic between stages: ordered against each other and
/// never removed as dead code.
def PP_ChannelResource : Resource<"::pp::PipelineChannelResource">;
defvar PP_ChannelEffects =
    MemoryEffects<[MemRead<PP_ChannelResource>, MemWrite<PP_ChannelResource>]>;

def PP_MeshOp : PP_Op<"mesh", [Symbol]> {
  let summary = "a device mesh with named axes";
  let description = [{
    Declares the devices of a training job as a mesh: one axis per kind of
    parallelism, ranks numbered row-major (the last axis varies fastest).
    Axis names are unique, sizes positive, and at most one axis is the
    pipeline axis.

    The pipeline stages (`pp.stage`'s `stage`, 0..S-1 in model order) run
    on the coordinates of the pipeline axis (ranks): stage s on
    `stage_ranks[s]`. Without `stage_ranks`, stage s runs on rank s (S = the
    axis size). With virtual stages a rank runs several: loop placement puts
    stage s on rank s mod N, V placement (two stages per rank) on s for s < N
    and on 2N-1-s after. Every entry is a rank of the axis and every rank
    runs at least one stage.

    Example:

    ```mlir
    pp.mesh @world [#pp.axis<"pp" = 4, pipeline>,
                    #pp.axis<"dp" = 2, data_replicate>,
                    #pp.axis<"tp" = 2, tensor>]
    pp.mesh @virtual [#pp.axis<"pp" = 2, pipeline>]
        {stage_ranks = array<i64: 0, 1, 0, 1>}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                   TypedArrayAttrBase<PP_MeshAxisAttr, "mesh axes">:$axes,
                   OptionalAttr<DenseI64ArrayAttr>:$stage_ranks);
  let assemblyFormat = "$sym_name $axes attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The axis named `name`, or null.
    MeshAxisAttr lookupAxis(::llvm::StringRef name);
    /// The pipeline axis, or null when the mesh has none.
    MeshAxisAttr getPipelineAxis();
    /// The number of devices in the mesh.
    int64_t getNumDevices();
    /// The number of pipeline stages: the size of `stage_ranks`, else of
    /// the pipeline axis (0 without one).
    int64_t getNumStages();
    /// The pipeline coordinate (rank) that runs stage `stage`.
    int64_t getStageRank(int64_t stage);
  }];
}

def PP_StageOp : PP_Op<"stage", [
    IsolatedFromAbove, SingleBlock, RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "one pipeline stage's computation";
  let description = [{
    The computation of pipeline stage `stage` (a coordinate of the mesh's
    pipeline axis) for one microbatch, in the given `phase` (forward by
    default). The region is isolated from above: every value it uses enters
    as an operand and becomes the matching block argument; `pp.yield` returns
    the results. A stage runs on all devices of its pipeline coordinate and
    may contain collectives over the other axes.

    Example:

    ```mlir
    %h = pp.stage @world stage 0 ins(%x, %w)
        : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>):
      %y = nn.linear %a, %b : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
      pp.yield %y : tensor<4x16xf32>
    }
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, I64Attr:$stage,
                   DefaultValuedAttr<PP_StagePhaseAttr,
                                     "::pp::StagePhase::forward">:$phase,
                   Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $mesh `stage` $stage (`phase` `` $phase^)? `ins` `(` $inputs `)` attr-dict
    `:`
    functional-type($inputs, results) $body
  }];
  let hasRegionVerifier = 1;
}

def PP_YieldOp : PP_Op<"yield", [Pure, Terminator, HasParent<"StageOp">,
                                 ReturnLike]> {
  let summary = "returns the results of a pp.stage";
  let description = [{
    Ends a `pp.stage` body; its operands become the stage's results and must
    match their types.

    Example: `pp.yield %y, %z : tensor<4x16xf32>, tensor<4xf32>`
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

class PP_PointToPointOp<string mnemonic, list<Trait> traits = []>
    : PP_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let hasVerifier = 1;
}

def PP_TransferOp : PP_PointToPointOp<"transfer", [PP_ChannelEffects,
    AllTypesMatch<["values", "results"]>]> {
  let summary = "moves named tensors from one stage to another";
  let description = [{
    In the whole-program view, hands the results of stage `from` to stage
    `to`. Any number of tensors travel together, each under a unique name (the
    model's own value names) so that both sides and the manifest agree on what
    crosses the boundary. `to` may be any stage after or before `from`: a skip
    connection from stage 0 to stage 3 is one transfer, and gradients travel
    back the same way. `pp-outline-stages` turns a transfer into a
    `pp.send`/`pp.recv` pair.

    Example:

    ```mlir
    %h, %x = pp.transfer @world %a, %b from 0 to 2 names ["hidden", "input"]
        : tensor<4x16xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, Variadic<AnyType>:$values,
                   I64Attr:$from, I64Attr:$to, StrArrayAttr:$names);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $mesh $values `from` $from `to` $to `names` $names attr-dict `:`
    type($values)
  }];
}

def PP_SendOp : PP_PointToPointOp<"send", [PP_ChannelEffects]> {
  let summary = "sends named tensors to another stage";
  let description = [{
    In a stage's own program, sends the tensors to stage `to`, which receives
    them with a `pp.recv` of the same names in the same order.

    Example:

    ```mlir
    pp.send @world %h, %x to 2 names ["hidden", "input"]
        : tensor<4x16xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, Variadic<AnyType>:$values,
                   I64Attr:$to, StrArrayAttr:$names);
  let assemblyFormat = [{
    $mesh $values `to` $to `names` $names attr-dict `:` type($values)
  }];
}

def PP_RecvOp : PP_PointToPointOp<"recv", [PP_ChannelEffects]> {
  let summary = "receives named tensors from another stage";
  let description = [{
    In a stage's own program, receives the tensors that stage `from` sends
    with a `pp.send` of the same names; the result types say their shapes.

    Example:

    ```mlir
    %h, %x = pp.recv @world from 0 names ["hidden", "input"]
        : tensor<4x16xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, I64Attr:$from,
                   StrArrayAttr:$names);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $mesh `from` $from `names` $names attr-dict `:` type($results)
  }];
}

/// The runtime has a kernel `pp_<target>_<mnemonic>` for the collective,
/// which runs over the calling frame's group: pp-lower-to-runtime derives
/// its call as an nn op's (NN_HasRuntimeKernel) without `mesh` and `axes`.
def PP_CollectiveKernel : NativeOpTrait<"CollectiveKernel"> {
  let cppNamespace = "::pp";
}

class PP_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : PP_Op<mnemonic, !listconcat(traits, [PP_ChannelEffects,
        PP_CollectiveKernel,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let results = (outs AnyRankedTensor:$result);
}

def PP_AllReduceOp : PP_CollectiveOp<"all_reduce", [SameOperandsAndResultType,
                                                    SameOperandsAndResultElementType,
                                                    InferTypeOpInterface]> {
  let summary = "reduces a tensor over mesh axes, result on every device";
  let description = [{
    Combines the tensor of every device that differs only in the coordinates
    of `axes` with `reduction`; every device of the group gets the result.
    The axes exist in the mesh, are unique and are not the pipeline axis
    (stages exchange data with `pp.transfer`).

    Example:

    ```mlir
    %g = pp.all_reduce @world %x over ["dp"] reduction<sum>
        : (tensor<16x8xf32>) -> tensor<16x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, AnyRankedTensor:$input,
                   StrArrayAttr:$axes, PP_ReductionKindAttr:$reduction);
  let assemblyFormat = [{
    $mesh $input `over` $axes `reduction` `` $reduction attr-dict `:`
    functional-type(operands, results)
  }];
}

def PP_AllGatherOp : PP_CollectiveOp<"all_gather",
    [SameOperandsAndResultElementType]> {
  let summary = "concatenates the shards of a tensor along one dimension";
  let description = [{
    Every device of the group formed by `axes` contributes its shard; the
    result concatenates them along `dim` in group order, so that dimension
    grows by the group size. With `blocks = B` each shard is B equal blocks
    and the result holds, block by block, every device's piece (the layout
    of `#pp.sharding` blocks).

    Example:

    ```mlir
    %y = pp.all_gather @world %x over ["tp"] dim = 1
        : (tensor<4x8xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, AnyRankedTensor:$input,
                   StrArrayAttr:$axes, I64Attr:$dim,
                   DefaultValuedAttr<I64Attr, "1">:$blocks);
  let assemblyFormat = [{
    $mesh $input `over` $axes `dim` `=` $dim (`blocks` `=` $blocks^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def PP_ReduceScatterOp : PP_CollectiveOp<"reduce_scatter",
    [SameOperandsAndResultElementType]> {
  let summary = "reduces a tensor and leaves each device one shard";
  let description = [{
    Reduces the tensors of the group formed by `axes` and splits the result
    along `dim` into one equal shard per device (with `blocks = B`, each of
    B equal blocks is split, as `#pp.sharding` blocks are). The dimension
    must divide evenly by the group size: an odd sequence length under
    sequence parallelism is rejected here, at compile time, instead of
    hanging.

    Example:

    ```mlir
    %y = pp.reduce_scatter @world %x over ["tp"] dim = 0 reduction<sum>
        : (tensor<8x16xf32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, AnyRankedTensor:$input,
                   StrArrayAttr:$axes, I64Attr:$dim,
                   DefaultValuedAttr<I64Attr, "1">:$blocks,
                   PP_ReductionKindAttr:$reduction);
  let assemblyFormat = [{
    $mesh $input `over` $axes `dim` `=` $dim (`blocks` `=` $blocks^)?
    `reduction` `` $reduction attr-dict `:` functional-type(operands, results)
  }];
}

def PP_ShardSliceOp : PP_CollectiveOp<"shard_slice",
    [SameOperandsAndResultElementType]> {
  let summary = "keeps this device's shard of a replicated tensor";
  let description = [{
    The input holds the same value on every device of the group formed by
    `axes`; each device keeps its piece of dimension `dim` (split into
    `blocks` blocks as `#pp.sharding` does), with no communication. The
    tensor-parallel pass uses it where a replicated value meets a sharded
    one (a bias added to a column-parallel output).

    Example:

    ```mlir
    %b = pp.shard_slice @world %x over ["tp"] dim = 0
        : (tensor<96xf32>) -> tensor<48xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, AnyRankedTensor:$input,
                   StrArrayAttr:$axes, I64Attr:$dim,
                   DefaultValuedAttr<I64Attr, "1">:$blocks);
  let assemblyFormat = [{
    $mesh $input `over` $axes `dim` `=` $dim (`blocks` `=` $blocks^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def PP_ShardedGatherOp : PP_CollectiveOp<"sharded_gather"> {
  let summary = "gathers from a table split along the gathered axis";
  let description = [{
    `data` is this device's contiguous piece of a table split along `axis`
    over the group formed by `axes` (device r holds entries [r n, (r+1) n)
    of that axis, n its local size); `indices` are global. Each device
    gathers the entries it holds and zeros for the others, so the result is
    a pending sum over the group (`nn.gather` of the whole table once
    summed): a vocabulary-parallel embedding. No communication.

    Example:

    ```mlir
    %e = pp.sharded_gather @world %table, %tokens over ["tp"] axis = 0
        : (tensor<32x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, AnyRankedTensor:$data,
                   AnyRankedTensor:$indices, StrArrayAttr:$axes,
                   I64Attr:$axis);
  let assemblyFormat = [{
    $mesh $data `,` $indices `over` $axes `axis` `=` $axis attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def PP_ShardedGatherGradOp : PP_CollectiveOp<"sharded_gather_grad"> {
  let summary = "the gradient of pp.sharded_gather for this device's piece";
  let description = [{
    Scatters (adds) the rows of `grad` whose global index falls in this
    device's piece of the table (as pp.sharded_gather reads it) into a zero
    tensor of this device's shape `data_shape`. No communication.

    Example:

    ```mlir
    %g = pp.sharded_gather_grad @world %dy, %tokens over ["tp"] axis = 0
        data_shape = [32, 16]
        : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<32x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, AnyRankedTensor:$grad,
                   AnyRankedTensor:$indices, StrArrayAttr:$axes,
                   I64Attr:$axis, DenseI64ArrayAttr:$data_shape);
  let assemblyFormat = [{
    $mesh $grad `,` $indices `over` $axes `axis` `=` $axis
    `data_shape` `=` $data_shape attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def PP_ShardedCrossEntropyOp : PP_CollectiveOp<"sharded_cross_entropy"> {
  let summary = "summed cross-entropy of logits split over their classes";
  let description = [{
    `logits` hold this device's contiguous piece of the class dimension (the
    last) of logits split over the group formed by `axes`; `labels` are
    global class indices. The result, on every device, is the sum over
    positions whose label is not `ignore_index` of log(sum exp(logits)) -
    logits[label], as `nn.cross_entropy` with reduction<sum> on the whole
    logits: the devices exchange their maxima, sums of exponentials and
    label logits (a few values per position), never the logits (a
    vocabulary-parallel loss).

    Example:

    ```mlir
    %l = pp.sharded_cross_entropy @world %logits, %labels over ["tp"]
        ignore_index = -100 : (tensor<2x8x32xf32>, tensor<2x8xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, AnyRankedTensor:$logits,
                   AnyRankedTensor:$labels, StrArrayAttr:$axes,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let assemblyFormat = [{
    $mesh $logits `,` $labels `over` $axes (`ignore_index` `=` $ignore_index^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def PP_ShardedCrossEntropyGradOp
    : PP_CollectiveOp<"sharded_cross_entropy_grad"> {
  let summary = "the gradient of pp.sharded_cross_entropy for this device's classes";
  let description = [{
    `grad` (a scalar) times (softmax(logits) - onehot(label)) on this
    device's classes, zero at positions whose label is `ignore_index`; the
    softmax is over all classes of the group (maxima and sums exchanged as
    in pp.sharded_cross_entropy). The result has the local logits' shape.

    Example:

    ```mlir
    %d = pp.sharded_cross_entropy_grad @world %g, %logits, %labels over ["tp"]
        : (tensor<f32>, tensor<2x8x32xf32>, tensor<2x8xi64>) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, AnyRankedTensor:$grad,
                   AnyRankedTensor:$logits, AnyRankedTensor:$labels,
                   StrArrayAttr:$axes,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let assemblyFormat = [{
    $mesh $grad `,` $logits `,` $labels `over` $axes
    (`ignore_index` `=` $ignore_index^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // PP_DIALECTS_PP_IR_PPOPS_TD
