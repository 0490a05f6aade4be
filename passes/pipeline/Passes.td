//===- Passes.td - pipeline passes -------------------------*- tablegen -*-===//
//
// Split a training program into pipeline stages and outline them.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PIPELINE_PASSES_TD
#define PP_PASSES_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def LocalizeParameterDerived
    : Pass<"pp-localize-parameter-derived", "mlir::ModuleOp"> {
  let summary = "every node computes the values it derives from parameters "
                "itself";
  let description = [{
    A value computed from the model's parameters and constants only (pure
    ops without regions: an exporter's transpose of a tied embedding for
    the LM head, a reshape, cast, broadcast or slice of a weight) is the
    same for every microbatch. (Values of constants alone, such as a mask
    an importer did not fold, stay where they are.) Each node using such a value gets its own
    copy of the ops computing it (`pp.node` of that node), placed before
    its first op using it; the original stays only for the users it has
    left in its own node, outside every node or among the program's
    results. So a node never reads a weight-derived value another node
    computes: `pp-partition` places the copy on its user's stage, the
    parameter is held by every stage using it (`pp.holder_stages`), the
    cost model counts no such value crossing a boundary, and no
    weight-sized tensor travels per microbatch. Runs before
    `pp-autodiff` (a backward op in the program is an error), so the
    gradient through each node's copy is that node's part of its
    parameter's gradient (`pp.gradient_part`), the same on any number of
    stages. A value used by several nodes is computed once per node.
  }];
}

def Partition : Pass<"pp-partition", "mlir::ModuleOp"> {
  let summary = "assigns every op of the training program to a stage";
  let description = [{
    Splits the model's nodes, in program order, into S = `stages` x
    `virtual-stages` contiguous stages; stage s runs on rank s mod N
    (`placement=loop`) or, with two virtual stages, on s < N ? s : 2N-1-s
    (`placement=v`), recorded as the mesh's `stage_ranks`. The cut
    minimizes the busiest rank's time, the sum of its stages' times, among
    the cuts whose every rank fits `memory-limit` (exact: branch and bound,
    PartitionSolver). A node's time sums its forward and backward ops:
    FLOPs at `flop-rate` plus bytes read and written at `byte-rate`; a stage
    also pays for sending the results later stages use (and receiving their
    gradients) at `link-rate`, so cuts fall where little data crosses. A
    rank's memory is, over its stages, the bytes of the parameters they use,
    AdamW's two moments and the gradient of the trainable ones (3 x their
    bytes), and the activations each stage saves for its backward times the
    microbatches in flight on it under `schedule` with M = `microbatches`,
    counted on the action table the runtime runs (its generator, and the
    count its memory figures use: gpipe M; 1f1b and zb-h1 min(M, N - rank);
    interleaved-1f1b Megatron's warm-up forwards dealt to the rank's
    stages; zb-v as many as its table holds, 3 on a rank's first stage
    for N = 2, M = 4). Without `schedule`, the layout's usual one:
    1f1b, interleaved-1f1b for several stages per rank in loop placement,
    zb-v in V placement; a schedule that cannot run on the layout is an
    error. When no cut fits, the error names the smallest peak any cut
    reaches.
    `split-points` names the first node of every stage after the
    first instead. Sets `pp.stage` on every op, places each parameter on the
    stages of its forward users (of its backward users when only they use
    it): `pp.stage` on its @main argument is the first of them, the owner.
    A parameter used on several stages (tied embeddings) also gets
    `pp.holder_stages = array<i64: ...>`, every such stage in increasing
    order; each holder's functions take it and return the parts of its
    gradient (`pp.gradient_part`, pp-autodiff's) its nodes compute, so
    that no partial gradient travels and the runtime adds the parts.
    After `pp-localize-parameter-derived`, a value computed from
    parameters only (a tied embedding's transpose for the LM head) is an
    op of each node using it, so it is made on its users' stages and its
    parameter held there; it never crosses a boundary. A
    gradient computed on a stage that does not hold its parameter is an
    error naming the stages.
    Declares the pipeline mesh `@pipeline`, orders
    the ops stage by stage (forward ascending, backward descending), records
    `pp.stage_costs` on `@main` and reports each stage's cost as a remark.
    Each stage's entry has its `rank`, `first_node`/`last_node`, `flops`,
    `bytes`, `estimated_us`, `forward_us`, `backward_input_us` and
    `backward_weight_us` (ops whose results only flow into parameter
    gradients), `sent_bytes` and `boundary` (each value later stages use:
    `name`, the producing node as pp-insert-send-recv names it, and
    `bytes`), `saved_bytes` (activations per microbatch) and `in_flight`,
    `parameter_count`, `parameter_bytes`, `gradient_bytes` and
    `optimizer_bytes` (whole), `data_parallel`, `zero_level` and
    `peak_bytes` (the most the memory model has the stage hold at once).
    Results of the program that no op computes (inputs or constants a
    forward-only model returns) pass through the first stage's forward; a
    program without nodes is that one stage.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "0",
           "pipeline ranks (coordinates of the pipeline axis)">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "stages per rank: the model is cut into stages x virtual-stages">,
    Option<"placement", "placement", "std::string", "\"loop\"",
           "stage s on rank s mod N (loop) or, with 2 virtual stages, on s "
           "then 2N-1-s (v)">,
    Option<"memoryLimit", "memory-limit", "double", "0",
           "bytes a rank may hold: parameters, optimizer state, gradients "
           "and in-flight activations (0: no limit)">,
    Option<"schedule", "schedule", "std::string", "\"\"",
           "the schedule whose in-flight microbatches the activation "
           "memory counts: gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v "
           "(default: the layout's usual one)">,
    Option<"microbatches", "microbatches", "int64_t", "0",
           "microbatches per step (0: as many as ranks)">,
    Option<"dataParallel", "data-parallel", "int64_t", "1",
           "data-parallel replicas of every pipeline rank, over which "
           "`zero` shards the state">,
    Option<"zeroLevel", "zero", "int64_t", "0",
           "ZeRO level 0-3 the memory model counts: 1 shards the optimizer "
           "state, 2 also the gradients, 3 also the parameters between "
           "uses">,
    Option<"optimizerState", "optimizer-state", "double", "2",
           "optimizer state bytes per trainable parameter byte: 2 for "
           "AdamW, 1 for SGD with momentum, 0 without">,
    Option<"flopRate", "flop-rate", "double", "::pp::kCpuFlopsPerSecond",
           "floating-point operations per second of a rank">,
    Option<"byteRate", "byte-rate", "double", "::pp::kCpuBytesPerSecond",
           "bytes per second a rank's kernels read and write">,
    Option<"linkRate", "link-rate", "double", "::pp::kLinkBytesPerSecond",
           "bytes per second between the ranks of two stages">,
    ListOption<"splitPoints", "split-points", "std::string",
               "first node of each stage after the first">,
    Option<"recompute", "recompute", "std::string", "\"none\"",
           "what each stage's backward recomputes instead of saving "
           "(pp-recompute): none, full, selective, or auto: per stage the "
           "least of these that fits memory-limit (a rank's limit shared "
           "by its stages); the saved bytes, backward work and memory "
           "figures count it">,
    Option<"recomputeOps", "recompute-ops", "std::string", "\"\"",
           "recompute the ops whose whole name matches this regular "
           "expression (e.g. nn\\.(softmax|erf))">,
    Option<"offloadActivations", "offload-activations", "bool", "false",
           "count activations as pp-run --offload-activations holds them "
           "(the schedule's offload and reload actions: a stage holding "
           "more than two microbatches keeps two, the rest in host "
           "memory)">,
  ];
  let dependentDialects = ["::pp::PPDialect"];
}

def Recompute : Pass<"pp-recompute", "mlir::ModuleOp"> {
  let summary = "makes each stage's backward recompute forward values "
                "instead of saving them";
  let description = [{
    Applies the recomputation policy pp-partition chose for each stage
    (`recompute` and `recompute_ops` in its `pp.stage_costs` entry; see
    pp-partition's `recompute` option): each backward op reading a forward
    value of its stage that the policy recomputes reads a copy the backward
    makes instead, before the stage's first backward op, from the values
    the policy keeps (and, for values of other stages, the ones the stage
    receives), marked `pp.recomputed`. The forward then saves only the
    kept values for its backward. `full` recomputes the stage's whole forward from what it
    receives, its graph inputs and its parameters; `selective` keeps the
    results of ops that multiply by a weight (the GEMMs) and recomputes the
    rest (attention scores and probabilities, activation functions,
    normalizations, residual sums); `ops` recomputes the op kinds a regular
    expression names. Recomputed dropouts draw the same mask (they are
    keyed, not drawn), so the program computes the same bits.
  }];
}

def InsertSendRecv : Pass<"pp-insert-send-recv", "mlir::ModuleOp"> {
  let summary = "makes every value that crosses a stage boundary travel";
  let description = [{
    For every pair of stages and phase, one `pp.transfer` carries all values
    defined on one stage and used on the other, each under a unique name. A
    value that skips stages goes straight to the stage that uses it, and
    gradients travel back the same way. Graph inputs and labels do not
    travel: each stage loads the ones it uses.
  }];
  let dependentDialects = ["::pp::PPDialect"];
}

def SplitBackward : Pass<"pp-split-backward", "mlir::ModuleOp"> {
  let summary = "splits each stage's backward into input and weight gradients";
  let description = [{
    For zero-bubble schedules: every `pp.stage` op of phase `backward`
    becomes a `backward_input` stage op (B), computing exactly the ops that
    the values other stages receive (the input gradients its transfers
    carry) depend on, followed by a `backward_weight` stage op (W) with the
    rest: the parameter gradients the program returns, which a schedule may
    run any time after B. An op both halves need is computed in B once; W
    takes it as a result of B (after pp-outline-stages, a value
    `@stage<N>_backward_input` saves for `@stage<N>_backward_weight`), and
    copies the constants it reads; a forward value pp-recompute recomputes
    (`pp.recomputed`) W recomputes itself from the forward's kept values
    rather than taking B's copy, which would wait in memory for W. Gradients received from other stages
    enter B, which hands those W needs over the same way; W takes the
    program's arguments and forward values directly. The halves partition
    the same ops, so training computes the same bits. Every stage gets both
    halves, possibly empty: a stage that sends no gradient (stage 0) has an
    input half that only receives, or nothing; one whose parameters are all
    frozen has an empty weight half. Runs after pp-insert-send-recv and
    pp-shard-tensor-parallel: a collective lands in the half of its
    consumers, the same on every device of the tensor axis.
  }];
  let dependentDialects = ["::pp::PPDialect"];
}

def OutlineStages : Pass<"pp-outline-stages", "mlir::ModuleOp"> {
  let summary = "one function per stage for forward and one for backward";
  let description = [{
    Moves the ops of each stage into `@stage<N>_forward` and
    `@stage<N>_backward` (for a backward split by pp-split-backward,
    `@stage<N>_backward_input` and `@stage<N>_backward_weight`), turning
    each `pp.transfer` into a `pp.send` on the sending stage and a
    `pp.recv` on the receiving one. Forward values the backward needs,
    graph inputs included, are returned by the forward function and taken
    by the backward one (`pp.role = "saved"`), so each sample is loaded
    once; the values a backward_input op hands to its backward_weight op
    are saved the same way, and a value two functions take is saved once.
    Constants are copied where used. A forward-only
    program (`pp.forward_only`, from pp-mark-outputs) gets no backward
    functions; each model output is returned by the forward function of
    the stage that computes it. `@main` is removed.
  }];
  let dependentDialects = ["::pp::PPDialect", "::mlir::func::FuncDialect"];
}

def DeriveEval : Pass<"pp-derive-eval", "mlir::ModuleOp"> {
  let summary = "one forward-only eval function per stage of a training program";
  let description = [{
    Adds `@stage<N>_eval` (phase `eval`) to every stage of an outlined
    training program: a copy of `@stage<N>_forward` that computes the loss
    of held-out data and nothing the backward needs. The results of role
    `saved` are dropped, then every op that only fed them, the tensors of
    messages whose received values nothing uses any more (from the
    `pp.recv` and from the sending stage's `pp.send`, so the eval functions
    of neighbouring stages still pair, under the forward's message names),
    and the arguments nothing reads. The last stage's eval function returns
    the loss (`pp.role = "loss"`); a stage with nothing left to compute
    still gets one, which may just pass messages on. `nn.dropout` stays: the
    runtime runs it as the identity outside training. A forward-only
    program (pp-mark-outputs) is refused: its forward already is its eval.
  }];
  let dependentDialects = ["::pp::PPDialect", "::mlir::func::FuncDialect"];
}

#endif // PP_PASSES_PIPELINE_PASSES_TD
