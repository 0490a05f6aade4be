//===- Compile.cpp - the pp-compile pipeline ------------------------------===//
//
// `--pp-compile="stages=N microbatch-size=B loss=KIND:OUTPUT"`: from an
// imported model to outlined pipeline stages (optionally `split-points=a,b`
// and `freeze=REGEX`). `infer=true` instead of a loss compiles a
// forward-only program: the model's outputs, no backward. `precision=bf16`
// (or fp16) computes in that type with f32 master weights. `fuse=false`
// leaves the elementwise ops unfused; `fuse-attention=true` makes each
// attention one nn.attention (by default only under recompute=selective or
// full); `fuse-cross-entropy=true` the LM head and its loss one
// nn.linear_cross_entropy (by default only under recompute=full);
// `split-backward=true` splits each stage's backward into input and weight
// gradients (zero-bubble schedules).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {

struct CompileOptions : public PassPipelineOptions<CompileOptions> {
  Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("pipeline ranks (one stage each unless virtual-stages)"),
      llvm::cl::init(1)};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("stages per rank (pp-partition)"), llvm::cl::init(1)};
  Option<std::string> placement{
      *this, "placement",
      llvm::cl::desc("loop or v: which rank runs each stage (pp-partition)"),
      llvm::cl::init("loop")};
  Option<double> memoryLimit{
      *this, "memory-limit",
      llvm::cl::desc("bytes a rank may hold, 0 for no limit (pp-partition)"),
      llvm::cl::init(0)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("the schedule the memory estimate assumes "
                     "(pp-partition; default: the layout's usual one)"),
      llvm::cl::init("")};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("microbatches per step, 0 for as many as ranks "
                     "(pp-partition)"),
      llvm::cl::init(0)};
  Option<int64_t> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("data-parallel replicas of every pipeline rank, over "
                     "which zero shards the state (pp-partition)"),
      llvm::cl::init(1)};
  Option<int64_t> zero{
      *this, "zero",
      llvm::cl::desc("ZeRO level 0-3 the memory estimate counts "
                     "(pp-partition)"),
      llvm::cl::init(0)};
  Option<double> optimizerState{
      *this, "optimizer-state",
      llvm::cl::desc("optimizer state bytes per trainable byte: 2 AdamW, 1 "
                     "SGD with momentum, 0 without (pp-partition)"),
      llvm::cl::init(2)};
  Option<double> flopRate{
      *this, "flop-rate",
      llvm::cl::desc("floating-point operations per second (pp-partition)"),
      llvm::cl::init(pp::kCpuFlopsPerSecond)};
  Option<double> byteRate{
      *this, "byte-rate",
      llvm::cl::desc("bytes per second of kernel traffic (pp-partition)"),
      llvm::cl::init(pp::kCpuBytesPerSecond)};
  Option<double> linkRate{
      *this, "link-rate",
      llvm::cl::desc("bytes per second between ranks (pp-partition)"),
      llvm::cl::init(pp::kLinkBytesPerSecond)};
  Option<int64_t> microbatchSize{
      *this, "microbatch-size",
      llvm::cl::desc("rows per microbatch (dimension 0 of every input)"),
      llvm::cl::init(0)};
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("KIND:OUTPUT (mse, cross_entropy)")};
  ListOption<std::string> splitPoints{
      *this, "split-points",
      llvm::cl::desc("first node of every stage after the first")};
  Option<bool> infer{
      *this, "infer",
      llvm::cl::desc("compile a forward-only program that returns the "
                     "model's outputs (pp-mark-outputs instead of a loss "
                     "and pp-autodiff)"),
      llvm::cl::init(false)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("the compute type: f32, bf16 or fp16, with f32 master "
                     "weights (pp-apply-precision)"),
      llvm::cl::init("f32")};
  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("what each stage's backward recomputes instead of "
                     "saving: none, full, selective or auto (per stage, "
                     "as little as memory-limit allows; pp-partition's "
                     "recompute, pp-recompute)"),
      llvm::cl::init("none")};
  Option<std::string> recomputeOps{
      *this, "recompute-ops",
      llvm::cl::desc("recompute the ops whose whole name matches this "
                     "regular expression (pp-partition's recompute-ops)")};
  Option<bool> offloadActivations{
      *this, "offload-activations",
      llvm::cl::desc("count activations as pp-run --offload-activations "
                     "holds them (pp-partition's offload-activations)"),
      llvm::cl::init(false)};
  Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("group elementwise ops of each stage function into "
                     "fused loops (pp-fuse-elementwise)"),
      llvm::cl::init(true)};
  Option<std::string> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("true: replace the ops of each f32 attention with one "
                     "nn.attention (pp-fuse-attention; the same bits, its "
                     "gradient recomputes the probabilities head by head "
                     "instead of saving them); false: keep them; auto: true "
                     "under recompute=selective or full, whose backward "
                     "recomputes the probabilities anyway, else false"),
      llvm::cl::init("auto")};
  Option<std::string> fuseCrossEntropy{
      *this, "fuse-cross-entropy",
      llvm::cl::desc("true: replace the LM head's f32 matmul and the "
                     "cross-entropy of its logits with one "
                     "nn.linear_cross_entropy (pp-fuse-cross-entropy; the "
                     "logits made a chunk of rows at a time and recomputed "
                     "by the gradient instead of saved); false: keep them; "
                     "auto: true under recompute=full, whose backward "
                     "recomputes the logits anyway, without tensor "
                     "parallelism, where the fused program gives the "
                     "unfused bits (a microbatch of one sequence), else "
                     "false"),
      llvm::cl::init("auto")};
  Option<int64_t> crossEntropyChunk{
      *this, "cross-entropy-chunk",
      llvm::cl::desc("rows of logits a fused cross-entropy makes at once (0: "
                     "pp-fuse-cross-entropy chooses)"),
      llvm::cl::init(0)};
  Option<bool> splitBackward{
      *this, "split-backward",
      llvm::cl::desc("split each stage's backward into backward_input and "
                     "backward_weight functions for zero-bubble schedules "
                     "(pp-split-backward)"),
      llvm::cl::init(false)};
  Option<int64_t> tp{
      *this, "tp",
      llvm::cl::desc("devices of the tensor-parallel axis inside each stage "
                     "(pp-shard-tensor-parallel)"),
      llvm::cl::init(1)};
  Option<bool> sp{*this, "sp",
                  llvm::cl::desc("sequence parallelism on the tensor axis "
                                 "(pp-shard-tensor-parallel sp=true)"),
                  llvm::cl::init(false)};
  ListOption<std::string> shard{
      *this, "shard",
      llvm::cl::desc("NAME=DIM: shard parameter NAME along DIM over the "
                     "tensor axis (pp-shard-tensor-parallel)")};
  Option<std::string> freeze{
      *this, "freeze",
      llvm::cl::desc("parameters whose whole name matches this regular "
                     "expression are frozen: loaded, never trained "
                     "(pp-autodiff's freeze)")};
};

/// Whether `options` fuse attention (fuse-attention; auto: when a training
/// program's backward recomputes its forward, selective or full, where the
/// fused gradient recomputes each head's probabilities in place of making a
/// layer's whole again).
bool fusesAttention(const CompileOptions &options) {
  if (options.fuseAttention == "auto")
    return !options.infer &&
           (options.recompute == "selective" || options.recompute == "full");
  return options.fuseAttention == "true";
}

/// Whether `options` shard for tensor parallelism.
bool shardsTensors(const CompileOptions &options) {
  return options.tp != 1 || options.sp || !options.shard.empty();
}

/// Whether `options` fuse the LM head and its cross-entropy
/// (fuse-cross-entropy; auto: when a training program's backward recomputes
/// its forward whole, logits included, and no tensor axis makes them
/// vocabulary-parallel; then only heads whose fused program gives the
/// unfused bits fuse).
bool fusesCrossEntropy(const CompileOptions &options) {
  if (options.infer)
    return false;
  if (options.fuseCrossEntropy == "auto")
    return options.recompute == "full" && !shardsTensors(options);
  return options.fuseCrossEntropy == "true";
}

/// The precision policy, then every node computing its own copies of the
/// values it derives from parameters (its weights' casts included), and the
/// ops of attention marked for the profile, before differentiating.
void addForwardPreparation(OpPassManager &pm, const CompileOptions &options) {
  pp::ApplyPrecisionOptions precision;
  precision.precision = options.precision;
  pm.addPass(pp::createApplyPrecision(precision));
  pm.addPass(pp::createLocalizeParameterDerived());
  pm.addPass(pp::createMarkAttention());
  if (fusesAttention(options)) {
    pp::FuseAttentionOptions attention;
    attention.keepNodes.assign(options.splitPoints.begin(),
                               options.splitPoints.end());
    pm.addPass(pp::createFuseAttention(attention));
  }
  if (fusesCrossEntropy(options)) {
    pp::FuseCrossEntropyOptions crossEntropy;
    crossEntropy.chunkRows = options.crossEntropyChunk;
    crossEntropy.exactOnly = options.fuseCrossEntropy == "auto";
    crossEntropy.keepNodes.assign(options.splitPoints.begin(),
                                  options.splitPoints.end());
    pm.addPass(pp::createFuseCrossEntropy(crossEntropy));
  }
}

/// Why `options` do not make a pipeline, or "".
std::string compileOptionsProblem(const CompileOptions &options) {
  if (options.fuseAttention != "auto" && options.fuseAttention != "true" &&
      options.fuseAttention != "false")
    return "pp-compile: fuse-attention=" + options.fuseAttention +
           " is not auto, true or false";
  if (options.fuseCrossEntropy != "auto" &&
      options.fuseCrossEntropy != "true" && options.fuseCrossEntropy != "false")
    return "pp-compile: fuse-cross-entropy=" + options.fuseCrossEntropy +
           " is not auto, true or false";
  if (options.crossEntropyChunk < 0)
    return "pp-compile: cross-entropy-chunk=" +
           std::to_string(options.crossEntropyChunk) +
           " is negative; give the rows of logits made at once, or 0 to let "
           "pp-fuse-cross-entropy choose";
  if (options.fuseCrossEntropy == "true" && shardsTensors(options))
    return "pp-compile: fuse-cross-entropy=true does not apply with tensor "
           "parallelism (tp, sp or shard), whose LM head makes its logits "
           "vocabulary-parallel instead; drop fuse-cross-entropy or set it "
           "to auto";
  if (!options.infer)
    return "";
  if (options.fuseCrossEntropy == "true")
    return "pp-compile: infer=true has no loss for fuse-cross-entropy=true "
           "to fuse; drop it";
  if (!options.loss.empty())
    return "pp-compile: infer=true compiles a forward-only program, which "
           "has no loss; drop loss=" + options.loss;
  if (!options.freeze.empty())
    return "pp-compile: infer=true trains nothing, so freeze= does not "
           "apply; drop freeze=" + options.freeze;
  if (options.recompute != "none" || !options.recomputeOps.empty())
    return "pp-compile: infer=true has no backward to recompute in; drop "
           "recompute= and recompute-ops=";
  if (options.offloadActivations)
    return "pp-compile: infer=true keeps no activations to offload; drop "
           "offload-activations=";
  return "";
}

void buildCompilePipeline(OpPassManager &pm, const CompileOptions &options) {
  if (options.infer) {
    pp::MarkOutputsOptions outputs;
    outputs.microbatchSize = options.microbatchSize;
    pm.addPass(pp::createMarkOutputs(outputs));
    addForwardPreparation(pm, options);
  } else {
    pp::AttachLossOptions loss;
    loss.loss = options.loss;
    loss.microbatchSize = options.microbatchSize;
    pm.addPass(pp::createAttachLoss(loss));
    addForwardPreparation(pm, options);
    pp::AutodiffOptions autodiff;
    autodiff.freeze = options.freeze;
    pm.addPass(pp::createAutodiff(autodiff));
    pm.addPass(pp::createRecomputeParameterCasts());
  }
  pp::PartitionOptions partition;
  partition.stages = options.stages;
  partition.virtualStages = options.virtualStages;
  partition.placement = options.placement;
  partition.memoryLimit = options.memoryLimit;
  partition.schedule = options.schedule;
  partition.microbatches = options.microbatches;
  partition.dataParallel = options.dataParallel;
  partition.zeroLevel = options.zero;
  partition.optimizerState = options.optimizerState;
  partition.flopRate = options.flopRate;
  partition.byteRate = options.byteRate;
  partition.linkRate = options.linkRate;
  partition.splitPoints.assign(options.splitPoints.begin(),
                               options.splitPoints.end());
  partition.recompute = options.recompute;
  partition.recomputeOps = options.recomputeOps;
  partition.offloadActivations = options.offloadActivations;
  pm.addPass(pp::createPartition(partition));
  if (options.recompute != "none" || !options.recomputeOps.empty())
    pm.addPass(pp::createRecompute());
  pm.addPass(pp::createInsertSendRecv());
  if (shardsTensors(options)) {
    pp::ShardTensorParallelOptions parallel;
    parallel.tp = options.tp;
    parallel.sequenceParallel = options.sp;
    parallel.shard.assign(options.shard.begin(), options.shard.end());
    pm.addPass(pp::createShardTensorParallel(parallel));
  }
  if (options.splitBackward)
    pm.addPass(pp::createSplitBackward());
  pm.addPass(pp::createOutlineStages());
  if (!options.infer)
    pm.addPass(pp::createDeriveEval());
  pm.addPass(pp::createHoistParameterCasts());
  if (options.fuse)
    pm.addPass(pp::createFuseElementwise());
}

} // namespace

void pp::registerPasses() {
  registerTrainingPasses();
  registerPipelinePasses();
  registerParallelPasses();
  registerCodegenPasses();
  registerPassPipeline(
      "pp-compile",
      "Compile an imported model into pipeline stages: pp-attach-loss, "
      "pp-apply-precision, pp-localize-parameter-derived, pp-mark-attention, "
      "pp-fuse-attention (with fuse-attention=true, or by default under "
      "recompute=selective or full), pp-fuse-cross-entropy (with "
      "fuse-cross-entropy=true, or by default under recompute=full without "
      "tensor parallelism), pp-autodiff (or, "
      "with infer=true, pp-mark-outputs first), pp-partition, "
      "pp-insert-send-recv, pp-shard-tensor-parallel (with tp=T > 1), "
      "pp-split-backward (with split-backward=true), pp-outline-stages, "
      "pp-derive-eval (not with "
      "infer=true), pp-hoist-parameter-casts, pp-fuse-elementwise (not with "
      "fuse=false)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CompileOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (std::string problem = compileOptionsProblem(options);
            !problem.empty())
          return errorHandler(problem);
        buildCompilePipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> describe) {
        describe(CompileOptions());
      });
}
