//===- Passes.td - training passes -------------------------*- tablegen -*-===//
//
// Turn an imported model into a training program: attach a loss, then
// differentiate it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_TRAINING_PASSES_TD
#define PP_PASSES_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttachLoss : Pass<"pp-attach-loss", "mlir::ModuleOp"> {
  let summary = "adds a loss on a named model output and a labels input";
  let description = [{
    `@main` gets a labels argument (`pp.role = "label"`, named `labels`) and
    returns the loss summed over the microbatch instead of the model
    outputs; `pp.loss` on the function records the kind and output. The
    runtime divides by the step's element or token count (token-weighted
    loss), so the logged loss and the gradients do not depend on how the step
    is split into microbatches or stages.

    `mse` compares the output with float labels of the same shape;
    `cross_entropy` takes `[..., C]` logits and `[...]` int64 class labels.
    Outputs the loss does not use, and every op computed only for them, are
    removed; parameters that fed only them stay arguments (untrained, as
    PyTorch leaves parameters without a gradient).
  }];
  let options = [
    Option<"loss", "loss", "std::string", "",
           "KIND:OUTPUT, KIND one of mse, cross_entropy">,
    Option<"microbatchSize", "microbatch-size", "int64_t", "0",
           "when set, the batch dimension (dimension 0) every input and the "
           "output must have">,
  ];
  let dependentDialects = ["::pp::nn::NNDialect"];
}

def ApplyPrecision : Pass<"pp-apply-precision", "mlir::ModuleOp"> {
  let summary = "the mixed-precision policy, as casts in the program";
  let description = [{
    Makes `@main` compute in `precision` (bf16 or fp16; f32 keeps an f32
    model as it is) with f32 master weights, as Megatron-LM's `--bf16` and
    TorchTitan's mixed precision do:

    - every parameter becomes an f32 argument, the master copy the
      optimizer updates, cast to the compute type once per model node that
      reads it (part of that node);
    - float inputs and labels are cast to the compute type as they arrive,
      so activations, and the messages between stages, are in the compute
      type (half the bytes of f32);
    - every op computes in the widest float type of its operands, so that
      the program computes in the compute type except where the model casts
      up to f32 itself; constants are converted at compile time,
      saturating to the compute type's finite range;
    - index values (computed from integers, constants and held buffers
      alone: positions, rotary angles, masks from an integer input) are
      computed in f32 and clamped to the compute type's finite range and
      cast where they meet it;
    - ops with the `ComputesInF32` trait (softmax, log-softmax, layer norm,
      the losses with their log-sum-exp) compute in f32 between casts, and
      the loss stays f32; a forward-only program's outputs keep the types
      the model declared.

    Run before `pp-autodiff`: the gradient of each parameter's cast is a
    cast back to f32, so gradients are accumulated over microbatches,
    reduced over replicas, clipped and applied in f32. A model whose
    weights are bf16 or f16 trains the same way, with f32 master copies of
    them.

    Example (`precision=bf16`):

    ```mlir
    func.func @main(%w: tensor<4x4xf32> {pp.role = "parameter"}, ...) {
      %0 = nn.cast %w : (tensor<4x4xf32>) -> tensor<4x4xbf16>
      %1 = nn.matmul %x, %0 : ... -> tensor<2x4xbf16>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"f32\"",
           "the compute type: f32, bf16 or fp16">,
  ];
  let dependentDialects = ["::pp::nn::NNDialect",
                           "::mlir::arith::ArithDialect"];
}

def RecomputeParameterCasts
    : Pass<"pp-recompute-parameter-casts", "mlir::ModuleOp"> {
  let summary = "the backward casts each weight's master again, saving no copy";
  let description = [{
    Under a reduced precision (`pp-apply-precision`) each model node reads
    a bf16 or f16 copy of its weights, cast from the f32 master. The
    backward needs the copy too (a matmul's input gradient); taken from the
    forward it would be saved per microbatch in flight: a copy of every
    weight per microbatch, more than the activations of a small batch.
    After `pp-autodiff`, each such cast gets a clone in the backward (same
    node, `pp.phase = #pp.phase<backward>`) that its backward users read:
    the same bits, one conversion per weight and microbatch, nothing saved.
  }];
  let dependentDialects = ["::pp::nn::NNDialect"];
}

def MarkOutputs : Pass<"pp-mark-outputs", "mlir::ModuleOp"> {
  let summary = "keeps the model's outputs for a forward-only program";
  let description = [{
    The forward-only counterpart of `pp-attach-loss`: `@main` keeps its
    outputs, each a result with `pp.role = "output"` (named `output_<i>`
    where the model gives no name), and records the model's inputs and
    outputs in order (`pp.forward_only`), so that a forward-only run takes
    its input files and writes its output files in the model's order,
    whichever stages use or compute them. No
    loss, labels or backward computation are added.
  }];
  let options = [
    Option<"microbatchSize", "microbatch-size", "int64_t", "0",
           "when set, the batch dimension (dimension 0) every input must "
           "have">,
  ];
}

def MarkAttention : Pass<"pp-mark-attention", "mlir::ModuleOp"> {
  let summary = "marks the ops of attention for the profile";
  let description = [{
    Marks with `pp.attention` the ops of `@main` that compute attention, as
    the program's pattern shows them (not their names): an `nn.softmax`
    whose input comes, through at most 8 elementwise ops, casts, reshapes
    and dropouts (the scale and the mask), from an `nn.matmul` of two
    activations (values computed from the program's inputs, not from
    parameters and constants alone: the scores, Q K^T); that matmul and
    those ops; the matmuls of activations that take the softmax's result
    (through dropout, casts, reshapes: the weighted sum with V); and the
    ops that compute only the mask (every user marked). A softmax over a
    layer's output (a matmul with a weight) is not attention.
    `pp-autodiff` marks the backward ops of a marked op (softmax_grad, the
    gradients' matmuls), and `pp-lower-to-runtime` passes the mark to the
    profile brackets of their kernels as `PP_PROFILE_ATTENTION`
    (runtime/pp_kernels.h), which `pp-run --profile`'s breakdown counts as
    attention. The mark changes no computation.
  }];
}

def FuseAttention : Pass<"pp-fuse-attention", "mlir::ModuleOp"> {
  let summary = "replaces the ops of f32 attention with nn.attention";
  let description = [{
    Replaces in `@main` each chain of ops that computes attention the way
    models export it with one `nn.attention`, whose kernel runs it one head
    at a time with the same arithmetic (the same bits; its gradient,
    `nn.attention_grad`, recomputes each head's probabilities instead of
    saving them): an `nn.matmul` of the query and key (the key transposed
    by the matmul or before it), optionally an `nn.mul` or `nn.div` by a
    scalar constant (the scale), then an `nn.add` of a bias (a mask of
    `-inf` or large negative numbers), then an `nn.where` that fills masked
    scores with a scalar constant (in that order), an `nn.softmax` over the
    last dimension, and an `nn.matmul` of the probabilities and the value.
    The fused op takes the scores' matmul's node (`pp.node`) and
    attributes, so that the node stays a split point and the profile counts
    it as attention.

    On the CPU the fused program trains to the unfused one's bits: each of
    the query, key and value gets its gradient from the fused op alone, as
    it did from one matmul's gradient. So a chain stays as it is when
    anything else reads its query, key or value (or one value is two of
    them) or one of its intermediate values (the scores or
    probabilities), when it is not all f32 with static shapes (reduced
    precision casts inside it: run it after pp-apply-precision), when the
    matmuls broadcast the query, key and value, when dropout sits on the
    probabilities, when the bias depends on a parameter (nn.attention gives
    the bias no gradient), when the scale, bias and mask come in another
    order (a mask before the bias), or when one of its ops after the
    scores' matmul is a node named in `keep-nodes` (pp-compile passes its
    `split-points`, so that a stage boundary inside attention stays where
    the user put it).
  }];
  let options = [
    ListOption<"keepNodes", "keep-nodes", "std::string",
               "nodes that stay ops of their own: an attention with one of "
               "them after its scores' matmul is not fused">,
  ];
  let dependentDialects = ["::pp::nn::NNDialect"];
}

def FuseCrossEntropy : Pass<"pp-fuse-cross-entropy", "mlir::ModuleOp"> {
  let summary = "replaces an LM head's matmul and cross-entropy with "
                "nn.linear_cross_entropy";
  let description = [{
    Replaces in `@main` each `nn.cross_entropy` whose logits an f32
    `nn.matmul` of hidden states `[..., D]` and a 2-D weight computes (and
    nothing else reads), optionally with an `nn.add` of a bias `[V]` (a
    masked-LM head's), with one `nn.linear_cross_entropy`, whose kernel
    makes the logits `chunk-rows` rows at a time and whose gradient
    (`nn.linear_cross_entropy_grad`) recomputes them chunk by chunk: the
    forward saves no logits for the backward, and neither ever holds more
    than one chunk of them. The fused op takes the matmul's node
    (`pp.node`) and attributes, so that the LM head stays a node of its
    own.

    `chunk-rows=0` (the default) makes a chunk the rows of one batch
    element's product, `[..., S, D]`'s S, as pp_<target>_matmul multiplies
    them, while its logits fit in 64 MiB, else as many rows as fit (a
    multiple of 256 from 256 rows on). With the rows of one batch element
    in a chunk the loss and the hidden states' gradient are the unfused
    ops' bits on the CPU; the weight's gradient adds the chunks up one
    after the other, where the unfused gradient makes one product over all
    rows (the same bits only with one chunk). A pipelined run equals the
    unpipelined one bit for bit either way.

    It leaves alone a cross-entropy whose logits are not such a matmul's
    (a cast of reduced precision: run it after pp-apply-precision), a
    matmul with a transposed left operand or a
    dynamic shape, and a head whose matmul or loss is a node named in
    `keep-nodes` (pp-compile passes its `split-points`). With `exact-only`
    it fuses only heads whose hidden states are one batch element (a
    microbatch of one sequence) in one chunk: every GEMM is then the
    unfused program's, and so are the bits (pp-compile's
    fuse-cross-entropy=auto).
  }];
  let options = [
    Option<"chunkRows", "chunk-rows", "int64_t", "0",
           "rows of logits made at once (0: one batch element's rows while "
           "their logits fit in 64 MiB)">,
    ListOption<"keepNodes", "keep-nodes", "std::string",
               "nodes that stay ops of their own: a head whose matmul or "
               "loss is one of them is not fused">,
    Option<"exactOnly", "exact-only", "bool", "false",
           "fuse only heads whose hidden states are one batch element that "
           "one chunk holds, whose fused program gives the unfused bits">,
  ];
  let dependentDialects = ["::pp::nn::NNDialect"];
}

def Autodiff : Pass<"pp-autodiff", "mlir::ModuleOp"> {
  let summary = "reverse-mode differentiation of the loss";
  let description = [{
    Appends to `@main` the backward computation of the loss with respect to
    every parameter. The seed is a new scalar argument (`pp.role =
    "loss_scale"`), so that the runtime scales the summed loss by one over
    the step's token count. Every backward op carries `pp.phase =
    #pp.phase<backward>` and the `pp.node` of the forward op it
    differentiates, so that partitioning keeps a node's forward and backward
    on one stage, and `pp.attention` when that op has it
    (`pp-mark-attention`). Gradients become results with `pp.role = "gradient"` and
    the parameter's name, in parameter order; a parameter the loss does not
    depend on gets none (PyTorch's `None`). Contributions to one value are
    summed in a fixed order, independent of any later partitioning. A
    parameter that several nodes use (an embedding tied to the LM head)
    gets one gradient result per node, the node's contributions, in
    program order of the nodes, each with `pp.gradient_part` = its index:
    the runtime sums each part over the microbatches on its own and adds
    the parts in that order, so that the gradient has the same bits
    whichever stages the nodes land on.

    Each op's rule comes from its `nn::GradientOpInterface`; an op without
    one on the path from a trainable parameter to the loss is an error that
    names it. Parameters matching `freeze` become `frozen`; parameters that
    reach the loss only through operands that carry no gradient (masks,
    index tables) become `constant`. Neither is trained.
  }];
  let options = [
    Option<"freeze", "freeze", "std::string", "",
           "parameters whose whole name matches this regular expression "
           "become frozen: loaded, never differentiated or updated">,
  ];
  let dependentDialects = ["::pp::nn::NNDialect", "::pp::PPDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // PP_PASSES_TRAINING_PASSES_TD
