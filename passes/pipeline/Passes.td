//===- Passes.td - pipeline passes -------------------------*- tablegen -*-===//
//
// Split a training program into pipeline stages and outline them.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PIPELINE_PASSES_TD
#define PP_PASSES_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def Partition : Pass<"pp-partition", "mlir::ModuleOp"> {
  let summary = "assigns every op of the training program to a stage";
  let description = [{
    Splits the model's nodes, in program order, into `stages` contiguous
    groups that minimize the most expensive stage (dynamic programming over
    the node sequence). A node's cost sums its forward and backward ops:
    FLOPs at the cost model's compute rate plus bytes read and written at its
    memory rate; a stage also pays for sending the results later stages use
    (and receiving their gradients) at the link rate, so cuts fall where
    little data crosses. `split-points` names the first node of every stage after the
    first instead. Sets `pp.stage` on every op, places each parameter on the
    stages of its forward users (of its backward users when only they use
    it): `pp.stage` on its @main argument is the first of them, the owner.
    A parameter used on several stages (tied embeddings) also gets
    `pp.holder_stages = array<i64: ...>`, every such stage in increasing
    order; each holder's functions take it, and its gradient result is
    replaced by one result per holder (same `pp.name`, role `gradient`):
    the terms of autodiff's sum computed on that stage, so that no partial
    gradient travels and the runtime sums the parts over the holders.
    Declares the pipeline mesh `@pipeline`, orders
    the ops stage by stage (forward ascending, backward descending), records
    `pp.stage_costs` on `@main` and reports each stage's cost as a remark.
    Results of the program that no op computes (inputs or constants a
    forward-only model returns) pass through the first stage's forward; a
    program without nodes is that one stage.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "0", "number of pipeline stages">,
    ListOption<"splitPoints", "split-points", "std::string",
               "first node of each stage after the first">,
  ];
  let dependentDialects = ["::pp::PPDialect"];
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
    copies the constants it reads. Gradients received from other stages
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
