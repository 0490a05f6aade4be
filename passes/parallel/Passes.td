//===- Passes.td - tensor-parallel passes ------------------*- tablegen -*-===//
//
// Shard each pipeline stage over the tensor axis of the mesh.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PARALLEL_PASSES_TD
#define PP_PASSES_PARALLEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def ShardTensorParallel : Pass<"pp-shard-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "splits each stage's computation over a tensor axis";
  let description = [{
    Runs after pp-insert-send-recv, on the pipeline program's `pp.stage`
    ops (forward and backward), and turns it into the program of one device
    of a `tp`-wide tensor-parallel group: the pipeline split comes first,
    tensor parallelism inside each stage, data parallelism around it
    (runtime).

    **Layouts.** Every tensor is replicated, sharded (one dimension split
    over the `tp` devices, possibly in blocks: `#pp.sharding`) or a pending
    sum (partial). Parameters start open; seeds fix some, and each op's
    sharding rule (`nn::ShardingRuleOpInterface`: elementwise maps share
    one, other ops implement theirs in dialects/nn/IR/NNShardingRules.cpp;
    an op without one runs replicated) maps its operands' layouts to its
    results' layouts, stating which operand layouts it needs. Propagation walks the program once in order (forward
    stages, then backward stages), so every value gets a layout from its
    producers, and an open parameter takes the layout its first user asks
    for. A copy of a parameter in another element type (pp-apply-precision's
    bf16 or f16 copy of an f32 master weight, cast where it is read) is laid
    out as the parameter: while the parameter is open, the copy's first user
    chooses (so a bf16 weight turns row-parallel as its f32 master does),
    and the gradient cast back to f32 is computed in the parameter's layout;
    under a reduced precision the pass shards the parameters, and inserts
    the collectives, that it does in f32. Where a user needs another layout than its producer gave, the pass
    inserts the collective that converts it: `pp.all_reduce` (partial to
    replicated), `pp.reduce_scatter` (partial to sharded), `pp.all_gather`
    (sharded to replicated), `pp.shard_slice` (replicated to sharded, no
    communication). A parameter's gradient gets its parameter's layout, the
    loss is replicated.

    **Seeds.** The ops propose them (`shardingSeed`): a token embedding (a
    gather from a parameter along axis 0 at indices computed from the
    inputs) and the output projection of every matmul with a parameter
    (column-parallel, whole or in 2 or 3 blocks for fused gate/up or QKV
    projections) are candidates, in program order. A
    candidate is kept when propagating the program with it (and the seeds
    kept before it) inserts no more all-gathers than without it: the
    sharded values reach a matmul that contracts them (its parameter turns
    row-parallel: Megatron's MLP and attention pairs, with one all-reduce
    each in forward and backward), a vocabulary-parallel cross-entropy
    (`pp.sharded_cross_entropy`, the LM head) or the partial sums of a
    vocabulary-parallel embedding (`pp.sharded_gather`). `shard=NAME=DIM`
    seeds a parameter by hand.

    **Sequence parallelism** (`sp=true`): a partial sum consumed by anything
    but a contraction is reduce-scattered along the sequence (dimension 1
    of `[batch, sequence, hidden]` activations) instead of all-reduced, so
    layer norms, dropout and residual adds run on a slice of the sequence,
    and all-gathers bring the whole sequence back before each
    column-parallel block.

    **Checks.** A seed whose dimension does not split (attention heads,
    hidden sizes, a vocabulary that `tp` does not divide) is an error naming
    the parameter, the dimension and the fix; so is a sequence length that
    `tp` does not divide under `sp=true`.

    Every op result that is not replicated gets `pp.sharding` (one
    `#pp.sharding` per result, against its global shape), every sharded
    parameter argument of `@main` gets `pp.sharding`, and the types become
    per-device. The mesh gains the axis `#pp.axis<"tp" = T, tensor>`.
  }];
  let options = [
    Option<"tp", "tp", "int64_t", "1",
           "devices of the tensor axis (1: nothing to do)">,
    Option<"sequenceParallel", "sp", "bool", "false",
           "split layer norms, dropout and residuals along the sequence">,
    ListOption<"shard", "shard", "std::string",
               "NAME=DIM: shard parameter NAME along dimension DIM">,
  ];
  let dependentDialects = ["::pp::PPDialect", "::pp::nn::NNDialect"];
}

#endif // PP_PASSES_PARALLEL_PASSES_TD
