//===- pp-run.cpp - runs compiled pipelines ---------------------*- C++ -*-===//
//
// Trains a pipeline package (or a model it compiles first, cached by content
// hash) with one process per rank, or with --infer runs one forward pass
// of a forward-only package on input files. It writes the job's
// description once and runs every rank as pp-rank (tools/pp-rank), which
// links only the runtime. Without RANK in the environment it is the
// launcher: it starts the ranks on this machine with torchrun's variables
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and waits for them; with
// RANK set it replaces itself by pp-rank for that one rank of a job some
// launcher started. --write-job writes the description for torchrun.
//
//===----------------------------------------------------------------------===//

#include "tools/pp-run/Launcher.h"
#include "tools/pp-run/ModelCache.h"
#include "tools/pp-rank/InferenceInputs.h"
#include "tools/pp-rank/RankEnvironment.h"
#include "tools/pp-rank/RankReport.h"
#include "tools/pp-rank/TensorFiles.h"

#include "frontends/onnx/ExportWeights.h"
#include "frontends/onnx/OnnxImporter.h"
#include "runtime/training/Backend.h"
#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/communication/JobSecret.h"
#include "runtime/core/OutputFile.h"
#include "runtime/package/Package.h"
#include "runtime/package/StageLibraryCache.h"
#include "runtime/core/CacheDirectory.h"
#include "runtime/kernels/MachineRates.h"
#include "runtime/schedules/ScheduleFile.h"
#include "runtime/schedules/ScheduleSvg.h"
#include "runtime/training/ParameterUpdate.h"
#include "runtime/training/JobDescription.h"
#include "runtime/training/Trainer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>

using namespace llvm;
using namespace pp::runtime;

namespace {

/// The parser of a number option: cl::parser<double> reads an empty value
/// ("--lr=") as 0, which would train at a learning rate of 0; this one
/// refuses it.
struct NumberParser : cl::parser<double> {
  using cl::parser<double>::parser;
  bool parse(cl::Option &option, StringRef name, StringRef value,
             double &result) {
    if (value.trim().empty())
      return option.error("needs a number, got an empty value");
    return cl::parser<double>::parse(option, name, value, result);
  }
};

cl::OptionCategory runCategory("pp-run options");

cl::opt<std::string> input(cl::Positional, cl::Required,
                           cl::desc("<package-dir | model.onnx | model.pt | model.pt2>"),
                           cl::cat(runCategory));
cl::opt<unsigned> numProcesses(
    "nproc", cl::init(0),
    cl::desc("Rank processes to launch on this machine (default and "
             "required: the device count of the package's mesh)"),
    cl::cat(runCategory));
cl::opt<unsigned> numNodes(
    "nnodes", cl::init(1),
    cl::desc("Machines the job runs on, as torchrun's --nnodes: run pp-run "
             "with the same options on each, with its --node-rank "
             "(docs/multi-node.md)"),
    cl::cat(runCategory));
cl::opt<unsigned> nodeRank(
    "node-rank", cl::init(0),
    cl::desc("This machine's number among --nnodes, 0 to N-1; node 0 runs "
             "job rank 0, which serves the rendezvous store"),
    cl::cat(runCategory));
cl::opt<unsigned> procsPerNode(
    "nproc-per-node", cl::init(0),
    cl::desc("Ranks to start on each machine (default: the mesh's device "
             "count divided by --nnodes); machine R runs job ranks R x K to "
             "R x K + K - 1"),
    cl::cat(runCategory));
cl::opt<std::string> masterAddr(
    "master-addr",
    cl::desc("With --nnodes above 1: an address of node 0 that every node "
             "reaches (rank 0 serves the rendezvous store there)"),
    cl::cat(runCategory));
cl::opt<std::string> rendezvousBind(
    "rdzv-bind",
    cl::desc("With --nnodes above 1, on node 0: where the rendezvous store "
             "listens, when --master-addr forwards to this machine without "
             "being its own address (a Kubernetes ClusterIP, a load "
             "balancer): an address of this machine, or 0.0.0.0 for all; "
             "the other nodes still connect to --master-addr"),
    cl::value_desc("address"), cl::cat(runCategory));
cl::opt<unsigned> masterPort(
    "master-port", cl::init(29500),
    cl::desc("With --nnodes above 1: the rendezvous store's port on "
             "--master-addr (default 29500)"),
    cl::cat(runCategory));
cl::opt<std::string> jobSecretFile(
    "job-secret-file",
    cl::desc("A file holding the job's secret, the same on every node (e.g. "
             "from `openssl rand -hex 32`); a job over several nodes needs "
             "it or PP_JOB_SECRET"),
    cl::cat(runCategory));
cl::opt<std::string> scheduleOption(
    "schedule", cl::init("1f1b"),
    cl::desc("Pipeline schedule: gpipe, 1f1b (default), interleaved-1f1b "
             "(with --virtual-stages), zb-h1 or zb-v (zero bubble: the "
             "compiler splits each backward into input and weight halves); "
             "docs/schedules.md"),
    cl::cat(runCategory));
cl::opt<int> virtualStages(
    "virtual-stages", cl::init(0),
    cl::desc("Stages per rank when compiling a model: the model is cut into "
             "--stages x V stages, V per rank (loop placement; zb-v: 2 in V "
             "placement). Default 1, 2 for zb-v"),
    cl::cat(runCategory));
cl::opt<std::string> scheduleFile(
    "schedule-file",
    cl::desc("Run the action table in FILE (docs/schedules.md; "
             "--print-schedule prints one) instead of a built-in --schedule"),
    cl::cat(runCategory));
cl::opt<bool> offloadActivations(
    "offload-activations",
    cl::desc("Move each microbatch's saved values from the device to host "
             "memory after its forward when its backward comes two or more "
             "compute actions later, and back one action ahead of it: the "
             "stages that hold the most microbatches hold at most two at "
             "once (on the CPU the values move to other host memory, counted "
             "apart; docs/recompute.md, Offload)"),
    cl::cat(runCategory));
cl::opt<std::string> svgPath(
    "svg",
    cl::desc("With --print-schedule: draw the planned step as a Gantt chart "
             "of ranks over time into this SVG file"),
    cl::cat(runCategory));
cl::opt<std::string> tracePath(
    "trace",
    cl::desc("Write a Chrome/Perfetto trace of every rank's actions (F, B, "
             "I, W, send, recv, all-reduce, optimizer) to FILE"),
    cl::cat(runCategory));
cl::opt<bool> printReport(
    "report",
    cl::desc("Print the partition report (per stage: cost, parameters, "
             "activation memory, boundary tensors; per rank: time and peak "
             "memory; the schedule's predicted bubble and step time) and "
             "exit"),
    cl::cat(runCategory));
cl::opt<std::string> costRates(
    "cost-rates",
    cl::init(std::getenv("PP_COST_RATES") ? std::getenv("PP_COST_RATES")
                                          : "measured"),
    cl::desc("Compiling a model: the partitioner's compute, memory and link "
             "rates: measured (default; the runtime's kernels timed once per "
             "machine and thread count, cached beside the compiled models) "
             "or default (the cost model's constants: the same partition on "
             "every machine). Default from $PP_COST_RATES"),
    cl::cat(runCategory));
cl::opt<uint64_t> memoryLimit(
    "memory-limit", cl::init(0),
    cl::desc("Compiling a model: the most bytes of parameters, optimizer "
             "state, gradients and activations any rank may hold; the "
             "partitioner balances stages within it (0: no limit)"),
    cl::cat(runCategory));
cl::opt<int> microbatches("microbatches", cl::init(1),
                          cl::desc("Microbatches per step (>= 1)"),
                          cl::cat(runCategory));
cl::opt<int> steps("steps", cl::init(1),
                   cl::desc("The run's total training steps (>= 1): it ends "
                            "after step S, resumed or not"),
                   cl::cat(runCategory));
cl::opt<std::string>
    data("data", cl::init("synthetic"),
         cl::desc("Training data: synthetic (default; deterministic random "
                  "samples keyed by (seed, sample index)) or a token dataset "
                  "(pp-data pack, or a flat file with --token-width)"),
         cl::value_desc("synthetic|file"), cl::cat(runCategory));
cl::opt<int> sequenceLength(
    "seq-len", cl::init(0),
    cl::desc("With --data FILE: tokens per sample; the model's token input "
             "takes S tokens, the labels the next S (default: the model's "
             "sequence length, which it must equal)"),
    cl::cat(runCategory));
cl::opt<int> tokenWidth(
    "token-width", cl::init(0),
    cl::desc("Read --data and --eval-data as flat little-endian token files "
             "of this many bytes per token (2: uint16, 4: uint32), as "
             "nanoGPT's prepare.py writes them"),
    cl::cat(runCategory));
cl::opt<std::string> dataInput(
    "data-input",
    cl::desc("With --data FILE: the model input that takes the tokens "
             "(default: its one integer input)"),
    cl::value_desc("name"), cl::cat(runCategory));
cl::opt<std::string> evalData(
    "eval-data",
    cl::desc("Token dataset to evaluate on before step 1, every "
             "--eval-every steps and after the last (loss and perplexity)"),
    cl::value_desc("file"), cl::cat(runCategory));
cl::opt<int> evalEvery("eval-every", cl::init(0),
                       cl::desc("Evaluate after every K steps too (0: only "
                                "before the first and after the last)"),
                       cl::cat(runCategory));
cl::opt<int> evalBatches(
    "eval-batches", cl::init(0),
    cl::desc("Global batches per evaluation (0: the whole eval dataset)"),
    cl::cat(runCategory));
cl::opt<int> dataParallel(
    "dp", cl::init(1),
    cl::desc("Data-parallel replicas of the pipeline (default 1); the "
             "global batch is microbatch size x microbatches x D"),
    cl::cat(runCategory));
cl::list<std::string> meshOrder(
    "mesh-order", cl::CommaSeparated,
    cl::desc("The mesh's axes, outermost first; the last varies fastest over "
             "consecutive ranks (default pp,dp,tp: tensor-parallel groups on "
             "consecutive ranks)"),
    cl::value_desc("pp,dp,tp"), cl::cat(runCategory));
cl::opt<std::string> tensorCollectives(
    "tp-collectives", cl::init("auto"),
    cl::desc("What the collectives inside stage functions run over: auto "
             "(default; shared memory when a tensor-parallel group's ranks "
             "are on one host, else TCP), shm, or tcp (the job's "
             "authenticated TCP links; gloo is another name for it)"),
    cl::value_desc("auto|shm|tcp"), cl::cat(runCategory));
cl::opt<std::string> linkIntegrity(
    "link-integrity", cl::init("across-hosts"),
    cl::desc("Which links between ranks seal every message with an "
             "HMAC-SHA256 under the job secret, so that no host on the "
             "network can alter one unseen: across-hosts (default; links "
             "between machines), always, or off (a network only the job's "
             "machines share)"),
    cl::value_desc("across-hosts|always|off"), cl::cat(runCategory));
cl::opt<bool> shardOptimizer(
    "shard-optimizer",
    cl::desc("Keep 1/D of each stage's optimizer state on each data-parallel "
             "rank and gather the updated parameters (ZeRO-1)"),
    cl::cat(runCategory));
cl::opt<int> zeroLevel(
    "zero", cl::init(0),
    cl::desc("ZeRO level over the data-parallel ranks: 0 none, 1 shards the "
             "optimizer state (as --shard-optimizer), 2 also the gradients "
             "(reduce-scattered), 3 also the parameters between uses "
             "(gathered before a stage computes); the same bits at every "
             "level"),
    cl::value_desc("0|1|2|3"), cl::cat(runCategory));
cl::opt<std::string> gradReduceDtype(
    "grad-reduce-dtype", cl::init("f32"),
    cl::desc("The element type in which the gradients travel and add up "
             "over the data-parallel ranks: f32 (default, as TorchTitan and "
             "Megatron) or bf16 (half the bytes; each gradient rounded to "
             "bf16, each sum rounded to bf16 and widened back)"),
    cl::value_desc("f32|bf16"), cl::cat(runCategory));
cl::opt<bool> memoryPlan(
    "memory-plan", cl::init(true),
    cl::desc("Serve each stage function's tensors from one arena by the "
             "package's memory plan (default true; CPU); false allocates "
             "every tensor on its own"),
    cl::cat(runCategory));
cl::opt<uint64_t> seed("seed", cl::init(0),
                       cl::desc("Seed of the synthetic data, of the training "
                                "data's order, of dropout and of --init "
                                "random"),
                       cl::cat(runCategory));
cl::opt<std::string> initName(
    "init", cl::init("model"),
    cl::desc("Where the trainable parameters start: model (default; the "
             "model file's values) or random (drawn from --seed and each "
             "parameter's name, the same for every layout)"),
    cl::value_desc("model|random"), cl::cat(runCategory));
cl::opt<std::string> weightsPath(
    "weights",
    cl::desc("Start the parameters from these Hugging Face safetensors "
             "weights, by name: a .safetensors file, a sharded checkpoint's "
             "model.safetensors.index.json, or their folder (F32, F16, BF16 "
             "and F64 convert to f32; docs/huggingface.md); or from a pp "
             "checkpoint's DIR/step-N folder"),
    cl::value_desc("file|index|dir"), cl::cat(runCategory));
cl::opt<std::string> weightsPrefix(
    "weights-prefix",
    cl::desc("The model's parameter names are --weights' names with this in "
             "front (a wrapper holding the Hugging Face model as 'model': "
             "model.); --save-weights strips it again"),
    cl::value_desc("prefix"), cl::cat(runCategory));
cl::opt<bool> weightsStrict(
    "weights-strict", cl::init(true),
    cl::desc("Refuse --weights that lack a parameter of the model or hold a "
             "tensor it does not have (default true; false loads what both "
             "have, as load_state_dict(strict=False))"),
    cl::cat(runCategory));
cl::opt<std::string> saveWeightsPath(
    "save-weights",
    cl::desc("After training, write the trained and frozen parameters to "
             "this safetensors file under the names --weights gave them "
             "(else the model's, without --weights-prefix), for "
             "transformers' from_pretrained"),
    cl::value_desc("file.safetensors"), cl::cat(runCategory));
cl::opt<std::string>
    metricsPath("metrics",
                cl::desc("Write one JSON object per step to this file"),
                cl::value_desc("file"), cl::cat(runCategory));
cl::opt<std::string> saveParamsPath(
    "save-params",
    cl::desc("Write the trained parameters to this file (name order; see "
             "runtime/checkpoints/ParameterFile.h)"),
    cl::value_desc("file"), cl::cat(runCategory));
cl::opt<std::string> exportOnnxPath(
    "export-onnx",
    cl::desc("After training, write the ONNX model with the trained "
             "parameters as its initializers to this file (ONNX models "
             "only)"),
    cl::value_desc("file"), cl::cat(runCategory));
cl::opt<std::string> saveGradsPath(
    "save-grads",
    cl::desc("Write the first step's gradients (summed over its microbatches, "
             "before clipping) to this file, in --save-params' format"),
    cl::value_desc("file"), cl::cat(runCategory));
cl::opt<std::string> checkpointDir(
    "checkpoint-dir",
    cl::desc("Save checkpoints in this directory (docs/checkpoints.md) and "
             "resume from it with --resume"),
    cl::value_desc("dir"), cl::cat(runCategory));
cl::opt<int> checkpointEvery(
    "checkpoint-every", cl::init(0),
    cl::desc("With --checkpoint-dir: save after every K steps and after the "
             "last (0: never)"),
    cl::cat(runCategory));
cl::opt<int> keepLast(
    "keep-last", cl::init(0),
    cl::desc("With --checkpoint-dir: after each save keep only the newest N "
             "checkpoints (0: keep all)"),
    cl::cat(runCategory));
cl::opt<bool> resume(
    "resume",
    cl::desc("Continue from the newest sound checkpoint in "
             "--checkpoint-dir (its digests and values verified; a damaged "
             "newer one is named on stderr and moved aside; from scratch, "
             "saying so, when it holds none); --steps stays the run's total"),
    cl::cat(runCategory));
cl::opt<std::string> profilePath(
    "profile",
    cl::desc("Write each stage's seconds per op kind (kernel calls and "
             "messages) and the step times to this JSON file"),
    cl::value_desc("file"), cl::cat(runCategory));
cl::opt<std::string> optimizerName("optimizer", cl::init("sgd"),
                                   cl::desc("sgd (default) or adamw"),
                                   cl::cat(runCategory));
cl::opt<double, false, NumberParser> learningRate("lr", cl::init(0.01),
                             cl::desc("Learning rate (default 0.01)"),
                             cl::cat(runCategory));
cl::opt<double, false, NumberParser> momentum("momentum", cl::init(0.0),
                         cl::desc("SGD momentum (default 0)"),
                         cl::cat(runCategory));
cl::opt<double, false, NumberParser> weightDecay("weight-decay", cl::init(0.0),
                            cl::desc("Weight decay (default 0)"),
                            cl::cat(runCategory));
cl::opt<std::string> noDecay(
    "no-decay",
    cl::desc("Parameters without weight decay: those whose whole name "
             "matches this ECMAScript regex (\"\": decay all; default: "
             "rank 0 and 1 parameters, norms and embeddings by name)"),
    cl::value_desc("regex"), cl::cat(runCategory));
cl::opt<std::string> lrScheduleName(
    "lr-schedule", cl::init("constant"),
    cl::desc("Learning rate after the warmup: constant (default; --lr), "
             "cosine or linear (from --lr down to --min-lr at step "
             "--decay-steps)"),
    cl::value_desc("constant|cosine|linear"), cl::cat(runCategory));
cl::opt<int> warmupSteps(
    "warmup-steps", cl::init(0),
    cl::desc("Steps 1..W ramp the learning rate linearly: step t runs at "
             "lr * t / W (default 0)"),
    cl::cat(runCategory));
cl::opt<double, false, NumberParser> minLearningRate(
    "min-lr", cl::init(0.0),
    cl::desc("With --lr-schedule cosine or linear: the learning rate at "
             "step --decay-steps and after (default 0)"),
    cl::cat(runCategory));
cl::opt<int> decaySteps(
    "decay-steps", cl::init(0),
    cl::desc("With --lr-schedule cosine or linear: the step that reaches "
             "--min-lr (default --steps)"),
    cl::cat(runCategory));
cl::opt<double, false, NumberParser> clipGradNorm(
    "clip-grad-norm", cl::init(0.0),
    cl::desc("Clip the global gradient norm to this value (0: off)"),
    cl::cat(runCategory));
cl::opt<double, false, NumberParser> lossScaleInit(
    "loss-scale-init", cl::init(65536.0),
    cl::desc("fp16 training: the first loss scale, a power of two (default "
             "65536, as torch.amp.GradScaler); it halves after a step whose "
             "gradients overflow, which is skipped; an overflow at 2^-24 "
             "stops the run"),
    cl::cat(runCategory));
cl::opt<int> lossScaleGrowthInterval(
    "loss-scale-growth-interval", cl::init(2000),
    cl::desc("fp16 training: clean steps in a row after which the loss "
             "scale doubles (default 2000)"),
    cl::cat(runCategory));
cl::opt<std::string> deviceName(
    "device", cl::init("cpu"),
    cl::desc("Where the stages run: cpu (default; TCP between ranks) or "
             "cuda (one GPU per rank, NCCL between them)"),
    cl::cat(runCategory));
cl::opt<bool> printSchedule(
    "print-schedule",
    cl::desc("Print every rank's action table (the --schedule-file format), "
             "proven free of deadlocks, and its predicted bubble, then exit "
             "without training"),
    cl::cat(runCategory));
cl::opt<int>
    timeoutSeconds("timeout", cl::init(300),
                   cl::desc("Seconds a rank waits for another before failing"),
                   cl::cat(runCategory));
/// Registered as --pp-threads and renamed --threads by claimThreadsOption:
/// libLLVM registers a --threads of its own.
cl::opt<int> threads(
    "pp-threads", cl::init(0),
    cl::desc("Threads per rank for GEMMs and the runtime's parallel loops "
             "(default: this machine's cores divided among the job's ranks "
             "on it, at least 1); results do not depend on it"),
    cl::cat(runCategory));
cl::opt<std::string> gemmEngine(
    "gemm-engine", cl::init("auto"),
    cl::desc("GEMM engine: auto (default; per element type and shape, "
             "the fastest one measured on this machine, cached in "
             "$PP_GEMM_CACHE or ~/.cache/pp), pp (pp's own packed SGEMM), "
             "onednn (bf16: its bf16 kernel), openblas or blis (bf16 and "
             "f16 widened to f32)"),
    cl::cat(runCategory));
cl::opt<int> stages("stages", cl::init(1),
                    cl::desc("Pipeline stages when compiling a model "
                             "(default 1)"),
                    cl::cat(runCategory));
cl::opt<int> microbatchSize("microbatch-size", cl::init(0),
                            cl::desc("Samples per microbatch when compiling "
                                     "a model: dimension 0 of every input. "
                                     "--infer without it runs the model as "
                                     "given, one microbatch"),
                            cl::cat(runCategory));
cl::opt<std::string> loss("loss",
                          cl::desc("Loss when compiling a model, "
                                   "KIND:OUTPUT with KIND mse or "
                                   "cross_entropy"),
                          cl::value_desc("kind:output"), cl::cat(runCategory));
cl::list<std::string> splitPoints(
    "split-points", cl::CommaSeparated,
    cl::desc("First node of every stage after the first, when compiling"),
    cl::cat(runCategory));
cl::list<std::string>
    dims("dim",
         cl::desc("Size of the symbolic dimension NAME (ONNX dim_param) when "
                  "compiling a model; repeatable"),
         cl::value_desc("NAME=SIZE"), cl::cat(runCategory));
cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Type of forward's tensor argument NAME when compiling a "
             "TorchScript module, e.g. tokens=?x8xi64 (`?`: the microbatch "
             "size); repeatable"),
    cl::value_desc("NAME=DIMSxTYPE"), cl::cat(runCategory));
cl::opt<int> tensorParallel(
    "tp", cl::init(1),
    cl::desc("Devices of the tensor-parallel axis inside each stage: "
             "compiling a model, pp-compile shards its layers over T devices "
             "(tp=T); running a package, T must be its tensor axis' size "
             "(default 1; the job has stages x --dp x T ranks)"),
    cl::value_desc("T"), cl::cat(runCategory));
cl::opt<bool> sequenceParallel(
    "sp",
    cl::desc("When compiling a model with --tp: split LayerNorm, dropout and "
             "residual regions along the sequence too (pp-compile sp=true)"),
    cl::cat(runCategory));
cl::list<std::string> shards(
    "shard",
    cl::desc("When compiling a model with --tp: shard the parameter NAME "
             "along dimension DIM over the tensor axis, where no pattern "
             "does; repeatable"),
    cl::value_desc("NAME=DIM"), cl::cat(runCategory));
cl::opt<bool> padSequence(
    "pad-sequence",
    cl::desc("Pad token samples of --seq-len S to the model's sequence and "
             "mask the padding out of the loss; when compiling a model with "
             "--tp T, compile it for S rounded up to a multiple of T "
             "(dimension 1 of --input-shape, or a --dim that T does not "
             "divide)"),
    cl::cat(runCategory));
cl::opt<std::string> precision(
    "precision", cl::init("f32"),
    cl::desc("When compiling a model, the type it computes in: f32 "
             "(default), bf16 or fp16 (forward-only runs), with f32 master "
             "weights, gradients and optimizer; softmax, normalization and "
             "the loss stay f32 (docs/precision.md)"),
    cl::value_desc("type"), cl::cat(runCategory));
cl::opt<std::string> recompute(
    "recompute", cl::init("none"),
    cl::desc("When compiling a model, what each stage's backward recomputes "
             "instead of keeping from its forward: none (default), full "
             "(the stage's whole forward, from what it receives), "
             "selective (all but the results of matrix products with a "
             "weight) or auto (per stage the least of those that fits "
             "--memory-limit); the same bits, less activation memory "
             "(docs/recompute.md)"),
    cl::value_desc("none|full|selective|auto"), cl::cat(runCategory));
cl::opt<std::string> fuseAttention(
    "fuse-attention", cl::init("auto"),
    cl::desc("When compiling a model, whether each f32 attention (scores, "
             "scale, mask, softmax, weighted sum) becomes one nn.attention, "
             "whose kernel gives the separate ops' bits and whose gradient "
             "recomputes each head's probabilities instead of keeping them: "
             "true, false, or auto (default: true under --recompute "
             "selective or full, whose backward recomputes the "
             "probabilities anyway: fused, a layer's are never whole)"),
    cl::value_desc("auto|true|false"), cl::cat(runCategory));
cl::opt<std::string> fuseCrossEntropy(
    "fuse-cross-entropy", cl::init("auto"),
    cl::desc("When compiling a model, whether the LM head's f32 matmul and "
             "the cross-entropy of its logits become one "
             "nn.linear_cross_entropy, which makes the logits a chunk of "
             "rows at a time and whose gradient recomputes them instead of "
             "keeping them: true, false, or auto (default: true under "
             "--recompute full, whose backward recomputes the logits "
             "anyway, without tensor parallelism, with one sequence per "
             "microbatch, where it changes no bits)"),
    cl::value_desc("auto|true|false"), cl::cat(runCategory));
cl::opt<int64_t> crossEntropyChunk(
    "cross-entropy-chunk", cl::init(0),
    cl::desc("When compiling a model with a fused cross-entropy, the rows "
             "of logits made at once (default 0: one batch element's rows "
             "while their logits fit in 64 MiB)"),
    cl::value_desc("rows"), cl::cat(runCategory));
cl::opt<std::string> recomputeOps(
    "recompute-ops",
    cl::desc("When compiling a model, recompute the ops whose whole name "
             "matches this regular expression, e.g. 'nn\\.(softmax|erf)'"),
    cl::value_desc("regex"), cl::cat(runCategory));
cl::opt<std::string> freeze(
    "freeze",
    cl::desc("When compiling a model, freeze the parameters whose whole name "
             "matches this regular expression (loaded, never trained)"),
    cl::value_desc("regex"), cl::cat(runCategory));
cl::opt<bool> untieSharedWeights(
    "untie-shared-weights",
    cl::desc("When compiling a model, give every node that reads a "
             "floating-point initializer read by several nodes its own copy "
             "(NAME.1, NAME.2, ... after the first reader), weights tied on "
             "purpose too; without it, only those whose elements are all "
             "equal (torch.onnx.export merges initializers with equal "
             "values) are untied"),
    cl::cat(runCategory));
cl::opt<bool> tieEqualWeights(
    "tie-equal-weights",
    cl::desc("When compiling an ONNX model, tie each floating-point "
             "initializer whose elements are bitwise those of an earlier one, "
             "or of its 2-D transpose, to that one (torch.onnx.export's "
             "constant folding unties a tied LM head that way)"),
    cl::cat(runCategory));
cl::opt<bool> inferMode(
    "infer",
    cl::desc("Run one forward pass on --inputs and write the model's "
             "outputs to --outputs-dir (dropout off; no loss, no training)"),
    cl::cat(runCategory));
cl::list<std::string> inputFiles(
    "inputs", cl::CommaSeparated,
    cl::desc("With --infer: one ONNX TensorProto file per model input, in "
             "the model's input order"),
    cl::value_desc("a.pb,b.pb"), cl::cat(runCategory));
cl::opt<std::string> outputsDir(
    "outputs-dir",
    cl::desc("With --infer: where output_0.pb, output_1.pb, ... go (the "
             "model's outputs in its order)"),
    cl::value_desc("dir"), cl::cat(runCategory));
cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Where compiled models are kept (default $PP_CACHE_DIR, else "
             "~/.cache/pp)"),
    cl::cat(runCategory));

cl::opt<std::string> writeJobPath(
    "write-job",
    cl::desc("Write the job description of this run to FILE (mode 0600) and "
             "exit without running it: start its ranks with torchrun "
             "--nproc-per-node N pp-rank --job FILE (docs/tools/pp-rank.md)"),
    cl::value_desc("file"), cl::cat(runCategory));
cl::opt<bool> printPeakRss(
    "print-peak-rss",
    cl::desc("After the job, print one line with each rank process's peak "
             "resident memory"),
    cl::cat(runCategory));

/// Prints `message` as an error and returns the failing exit code.
int error(const Twine &message) {
  WithColor::error(errs(), "pp-run") << message << "\n";
  return 1;
}

/// The schedule --lr, --lr-schedule, --warmup-steps, --min-lr and
/// --decay-steps give (checked by optionProblem).
LearningRateSchedule learningRateSchedule() {
  LearningRateSchedule schedule;
  schedule.peak = learningRate;
  schedule.decay = parseLearningRateDecay(lrScheduleName)
                       .value_or(LearningRateDecay::Constant);
  schedule.warmupSteps = warmupSteps;
  schedule.minimum = minLearningRate;
  schedule.decaySteps = decaySteps.getNumOccurrences() ? decaySteps : steps;
  return schedule;
}

/// The schedule --schedule, --schedule-file and --offload-activations
/// choose.
ScheduleChoice scheduleChoice() {
  return {*parseScheduleKind(scheduleOption), scheduleFile,
          offloadActivations};
}

/// What --weights, --weights-prefix, --weights-strict and --save-weights
/// say.
WeightsOptions weightsOptions() {
  WeightsOptions options;
  options.path = weightsPath;
  options.naming.prefix = weightsPrefix;
  options.naming.strict = weightsStrict;
  options.savePath = saveWeightsPath;
  return options;
}

OptimizerOptions optimizerOptions() {
  OptimizerOptions optimizer;
  optimizer.kind = optimizerName;
  // The optimizer computes in float: every rank rounds the same double.
  optimizer.momentum = static_cast<float>(momentum);
  optimizer.weightDecay = static_cast<float>(weightDecay);
  if (noDecay.getNumOccurrences())
    optimizer.noDecay = noDecay;
  return optimizer;
}

TrainerOptions trainerOptions() {
  TrainerOptions options;
  options.schedule = scheduleChoice();
  options.tracePath = tracePath;
  options.microbatches = microbatches;
  options.steps = steps;
  options.seed = seed;
  options.metricsPath = metricsPath;
  options.saveParamsPath = saveParamsPath;
  options.saveGradsPath = saveGradsPath;
  options.weights = weightsOptions();
  options.profilePath = profilePath;
  options.maxGradNorm = clipGradNorm;
  options.lossScaling.initialScale = lossScaleInit;
  options.lossScaling.growthInterval = lossScaleGrowthInterval;
  options.optimizer = optimizerOptions();
  options.learningRate = learningRateSchedule();
  options.init = *parseParameterInit(initName);
  options.zeroLevel = shardOptimizer ? 1 : zeroLevel;
  options.gradReduceDtype = *parseReduceDtype(gradReduceDtype);
  options.memoryPlan = memoryPlan;
  options.checkpoint.directory = checkpointDir;
  options.checkpoint.every = checkpointEvery;
  options.checkpoint.keepLast = keepLast;
  options.checkpoint.resume = resume;
  if (data != "synthetic") {
    options.data.path = data;
    options.data.tokenWidth = tokenWidth;
    options.data.sequenceLength = sequenceLength;
    options.data.padSequence = padSequence;
    options.data.inputName = dataInput;
    options.data.evalPath = evalData;
    options.data.evalEvery = evalEvery;
    options.data.evalBatches = evalBatches;
  }
  return options;
}

/// Why --lr-schedule, --init, --no-decay and the rates and steps of the
/// schedule are not valid ("" when they are).
std::string learningRateProblem() {
  std::optional<LearningRateDecay> decay =
      parseLearningRateDecay(lrScheduleName);
  if (!decay)
    return "unknown --lr-schedule '" + lrScheduleName +
           "'; use constant, cosine or linear";
  const cl::Option *decayOptions[] = {&minLearningRate, &decaySteps};
  if (*decay == LearningRateDecay::Constant)
    for (const cl::Option *option : decayOptions)
      if (option->getNumOccurrences())
        return "--" + option->ArgStr.str() +
               " applies to a decaying learning rate; add --lr-schedule "
               "cosine or linear";
  if (!parseParameterInit(initName))
    return "unknown --init '" + initName + "'; use model or random";
  try {
    (void)std::regex(noDecay.getValue());
  } catch (const std::regex_error &failure) {
    return "--no-decay '" + noDecay + "' is not a valid ECMAScript regular "
           "expression: " + failure.what();
  }
  return learningRateScheduleProblem(learningRateSchedule());
}

/// The most --threads a rank may have: more than 8 per CPU only wait for
/// one another (and thousands exhaust the process's threads).
int maxThreads() { return 8 * availableCpus(); }

/// Why the options are out of range ("" when they are not): each message
/// names the option, the valid range and the value given.
std::string optionProblem() {
  auto atLeastOne = [](const char *flag, int64_t value) {
    return "--" + std::string(flag) + " must be at least 1, got " +
           std::to_string(value);
  };
  if (microbatches < 1)
    return atLeastOne("microbatches", microbatches);
  if (virtualStages < 0)
    return "--virtual-stages must be at least 1 (or 0 for the default), got " +
           std::to_string(virtualStages);
  if (int most = maxThreads(); threads > most)
    return "--threads must be at most " + std::to_string(most) +
           " (8 per CPU this process may use), got " +
           std::to_string(threads);
  if (steps < 1)
    return atLeastOne("steps", steps);
  if (timeoutSeconds < 1)
    return atLeastOne("timeout", timeoutSeconds);
  if (!parseLinkIntegrity(linkIntegrity))
    return "unknown --link-integrity '" + linkIntegrity +
           "'; use across-hosts, always or off";
  if (!parseTensorCollectives(tensorCollectives))
    return "unknown --tp-collectives '" + tensorCollectives +
           "'; use auto, shm or tcp (or gloo, another name for tcp)";
  if (numProcesses.getNumOccurrences() && numProcesses < 1)
    return atLeastOne("nproc", numProcesses);
  if (stages < 1)
    return atLeastOne("stages", stages);
  if (microbatchSize.getNumOccurrences() && microbatchSize < 1)
    return atLeastOne("microbatch-size", microbatchSize);
  if (dataParallel < 1)
    return atLeastOne("dp", dataParallel);
  if (tensorParallel < 1)
    return atLeastOne("tp", tensorParallel);
  for (auto [flag, value] : {std::pair{"seq-len", sequenceLength.getValue()},
                             std::pair{"eval-every", evalEvery.getValue()},
                             std::pair{"eval-batches", evalBatches.getValue()},
                             std::pair{"checkpoint-every",
                                       checkpointEvery.getValue()},
                             std::pair{"keep-last", keepLast.getValue()}})
    if (value < 0)
      return "--" + std::string(flag) + " must be 0 or more, got " +
             std::to_string(value);
  if (checkpointDir.empty())
    for (const cl::Option *option : {static_cast<const cl::Option *>(
                                         &checkpointEvery),
                                     static_cast<const cl::Option *>(&keepLast),
                                     static_cast<const cl::Option *>(&resume)})
      if (option->getNumOccurrences())
        return "--" + option->ArgStr.str() +
               " applies to checkpoints; add --checkpoint-dir DIR";
  if (tokenWidth != 0 && tokenWidth != 2 && tokenWidth != 4)
    return "--token-width must be 2 (uint16 tokens) or 4 (uint32), got " +
           std::to_string(tokenWidth);
  if (data == "synthetic") {
    const cl::Option *tokenOptions[] = {&sequenceLength, &tokenWidth,
                                        &dataInput,      &evalData,
                                        &evalEvery,      &evalBatches,
                                        &padSequence};
    for (const cl::Option *option : tokenOptions)
      if (option->getNumOccurrences())
        return "--" + option->ArgStr.str() +
               " applies to token data; add --data FILE (a token dataset)";
  } else if (evalData.empty()) {
    for (const cl::Option *option : {&evalEvery, &evalBatches})
      if (option->getNumOccurrences())
        return "--" + option->ArgStr.str() +
               " applies to evaluation; add --eval-data FILE";
  }
  // Rates are rounded to float: they must be finite there too.
  struct Rate {
    const char *flag;
    double value;
    double below;
    const char *range;
  };
  for (const Rate &rate :
       {Rate{"momentum", momentum, 1, "a number in [0, 1)"},
        Rate{"weight-decay", weightDecay, HUGE_VAL, "a number in [0, 3.4e38]"},
        Rate{"clip-grad-norm", clipGradNorm, HUGE_VAL,
             "a number in [0, 3.4e38] (0: no clipping)"}})
    if (!(rate.value >= 0 && rate.value < rate.below &&
          std::isfinite(static_cast<float>(rate.value)))) {
      std::ostringstream given;
      given << rate.value;
      return "--" + std::string(rate.flag) + " must be " + rate.range +
             ", got " + given.str();
    }
  return learningRateProblem();
}

/// Why --precision, --grad-reduce-dtype and the loss scaling options
/// cannot apply: a type pp does not compute or reduce in, a scale that is no
/// power of two (dividing it out must be exact), loss scaling for a model
/// compiled in another precision.
std::string precisionProblem() {
  if (precision != "f32" && precision != "bf16" && precision != "fp16")
    return "--precision " + precision + ": use f32, bf16 or fp16";
  if (!parseReduceDtype(gradReduceDtype))
    return "--grad-reduce-dtype " + gradReduceDtype +
           ": use f32 (the default) or bf16";
  int exponent = 0;
  if (!(lossScaleInit >= 1 && lossScaleInit <= 0x1p64 &&
        std::frexp(lossScaleInit, &exponent) == 0.5)) {
    std::ostringstream given;
    given << lossScaleInit;
    return "--loss-scale-init must be a power of two from 1 to 2^64, got " +
           given.str();
  }
  if (lossScaleGrowthInterval < 1)
    return "--loss-scale-growth-interval must be at least 1, got " +
           std::to_string(lossScaleGrowthInterval);
  // A model file compiles in --precision (f32 without it); a package's
  // precision is checked against its manifest when it loads.
  if ((precision.getNumOccurrences() || !sys::fs::is_directory(input)) &&
      precision != "fp16")
    for (const cl::Option *option : {static_cast<const cl::Option *>(
                                          &lossScaleInit),
                                      static_cast<const cl::Option *>(
                                          &lossScaleGrowthInterval)})
      if (option->getNumOccurrences())
        return "--" + option->ArgStr.str() +
               " applies to fp16 training (--precision fp16); --precision " +
               precision + " scales no loss";
  return "";
}

/// The job's secret from --job-secret-file, else PP_JOB_SECRET, else ""
/// (the launcher of a one-machine job makes one); sets `problem` when the
/// file cannot be read or holds none.
std::string jobSecret(std::string &problem) {
  if (jobSecretFile.empty()) {
    const char *secret = std::getenv(pp::runtime::kJobSecretVariable);
    return secret ? secret : "";
  }
  sys::fs::file_status status;
  if (!sys::fs::status(jobSecretFile, status) &&
      (status.permissions() & (sys::fs::all_all & ~sys::fs::owner_all))) {
    char mode[16];
    std::snprintf(mode, sizeof(mode), "%04o",
                  static_cast<unsigned>(status.permissions()) & 07777u);
    problem = "--job-secret-file '" + jobSecretFile +
              "' can be read by other users (mode " + mode +
              "), who could join or alter the job: `chmod 600 " +
              jobSecretFile + "`";
    return "";
  }
  auto text = MemoryBuffer::getFile(jobSecretFile);
  if (!text) {
    problem = "cannot read --job-secret-file '" + jobSecretFile +
              "': " + text.getError().message();
    return "";
  }
  std::string secret = (*text)->getBuffer().trim().str();
  if (secret.empty())
    problem = "--job-secret-file '" + jobSecretFile +
              "' is empty; write a secret into it, e.g. `openssl rand -hex "
              "32 > " + jobSecretFile + "`";
  return secret;
}

/// Why the tensor-parallel groups of `mesh` span machines of
/// `perMachine` consecutive ranks each, or "": their collectives run in
/// every layer, so the default mesh order keeps them inside one machine.
std::string tensorGroupsAcrossMachines(const DeviceMesh &mesh,
                                       int64_t perMachine) {
  for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank) {
    std::vector<int64_t> members = mesh.group(rank, mesh.tensorAxes());
    if (members.front() / perMachine != members.back() / perMachine)
      return "with --nproc-per-node " + std::to_string(perMachine) +
             " the tensor-parallel groups of " +
             std::to_string(members.size()) +
             " ranks would span machines (ranks " +
             std::to_string(members.front()) + " to " +
             std::to_string(members.back()) +
             "), and their collectives run in every layer: give a "
             "--nproc-per-node that " +
             std::to_string(members.size()) +
             " divides, or --mesh-order to place the axes yourself";
  }
  return "";
}

/// Where this machine's ranks stand in a job on `mesh`
/// (--nnodes, --node-rank, --nproc-per-node, --nproc, --master-addr,
/// --master-port, the secret); nullopt with `problem` set when the options
/// do not fit the job.
std::optional<NodeLaunch> nodeLaunch(const DeviceMesh &mesh,
                                     std::string &problem) {
  int devices = static_cast<int>(mesh.deviceCount());
  NodeLaunch node;
  node.worldSize = devices;
  node.secret = jobSecret(problem);
  if (!problem.empty())
    return std::nullopt;
  int nodes = static_cast<int>(numNodes);
  if (nodes < 1 || static_cast<int>(nodeRank) >= nodes) {
    problem = "--node-rank " + std::to_string(nodeRank) +
              " is not one of the " + std::to_string(nodes) +
              " machines of --nnodes; give 0 to " + std::to_string(nodes - 1);
    return std::nullopt;
  }
  int perNode = procsPerNode ? static_cast<int>(procsPerNode)
                             : devices / nodes;
  if (perNode * nodes != devices) {
    problem = (procsPerNode ? "--nnodes " + std::to_string(nodes) +
                                  " x --nproc-per-node " +
                                  std::to_string(perNode) + " ranks is not"
                            : "--nnodes " + std::to_string(nodes) +
                                  " machines do not evenly share") +
              " the job's " + std::to_string(devices) +
              " ranks (stages x --dp x tp); give --nnodes and "
              "--nproc-per-node whose product is " +
              std::to_string(devices);
    return std::nullopt;
  }
  node.localRanks = perNode;
  node.firstRank = static_cast<int>(nodeRank) * perNode;
  if (nodes == 1 && !rendezvousBind.empty()) {
    problem = "--rdzv-bind places the rendezvous store of a job over "
              "several machines (--nnodes above 1); a job on one machine "
              "serves it on loopback";
    return std::nullopt;
  }
  if (nodes == 1) {
    // One machine: loopback, any free port unless one is asked for.
    if (!masterAddr.empty())
      node.masterAddr = masterAddr;
    node.masterPort =
        masterPort.getNumOccurrences() ? static_cast<int>(masterPort) : 0;
    return node;
  }
  if (numProcesses.getNumOccurrences()) {
    problem = "--nproc counts the ranks of a one-machine job; with --nnodes "
              "give --nproc-per-node";
    return std::nullopt;
  }
  if (meshOrder.empty())
    problem = tensorGroupsAcrossMachines(mesh, perNode);
  if (!problem.empty())
    return std::nullopt;
  if (masterAddr.empty()) {
    problem = "--nnodes " + std::to_string(nodes) +
              " needs --master-addr: an address of node 0 that every node "
              "reaches";
    return std::nullopt;
  }
  if (node.secret.empty()) {
    problem = "a job over " + std::to_string(nodes) +
              " machines needs the same secret on each, so that no other "
              "host can join it: write one with `openssl rand -hex 32 > "
              "job.secret` (readable only by you) and give --job-secret-file "
              "job.secret on every node, or export " +
              std::string(pp::runtime::kJobSecretVariable);
    return std::nullopt;
  }
  node.masterAddr = masterAddr;
  node.masterPort = static_cast<int>(masterPort);
  node.storeBind = rendezvousBind;
  return node;
}

/// Why --infer and the options given do not go together ("" when they
/// do): a forward-only run needs --outputs-dir and takes no training
/// options; --inputs and --outputs-dir need --infer.
std::string inferenceOptionProblem() {
  if (!inferMode) {
    for (const cl::Option *option :
         {static_cast<const cl::Option *>(std::addressof(inputFiles)),
          static_cast<const cl::Option *>(&outputsDir)})
      if (option->getNumOccurrences())
        return "--" + option->ArgStr.str() +
               " applies to forward-only runs; add --infer";
    return "";
  }
  if (outputsDir.empty())
    return "--infer needs --outputs-dir DIR, where the outputs go";
  const cl::Option *trainingOptions[] = {
      &loss,         &metricsPath,    &saveParamsPath, &saveWeightsPath,
      &freeze,       &microbatches,   &steps,
      &scheduleOption, &optimizerName,  &learningRate,
      &momentum,     &weightDecay,    &clipGradNorm,
      &data,         &dataParallel,   std::addressof(meshOrder),
      &evalData,     &shardOptimizer, &zeroLevel,     &exportOnnxPath,
      &initName,     &noDecay,        &lrScheduleName,
      &warmupSteps,  &minLearningRate, &decaySteps,
      &checkpointDir, &memoryPlan, &lossScaleInit, &lossScaleGrowthInterval,
      &gradReduceDtype, &recompute,    &recomputeOps, &offloadActivations};
  for (const cl::Option *option : trainingOptions)
    if (option->getNumOccurrences())
      return "--" + option->ArgStr.str() +
             " applies to training; a forward-only run (--infer) takes " +
             "--inputs, --outputs-dir and, compiling a model, --stages, " +
             "--microbatch-size, --split-points and --dim";
  return "";
}

/// The size of a symbolic batch dimension for a forward-only run of a
/// model file as given (no --microbatch-size): dimension 0 of the first
/// input file that has one, 0 when none has. Only the files' shapes are
/// read, so that the model is compiled (and refuses what it does not
/// support) before pp-run reads the values.
int64_t inferenceBatchSize() {
  for (const std::string &file : inputFiles) {
    Shape shape = readTensorFileShape(file);
    if (!shape.empty())
      return shape[0];
  }
  return 0;
}

/// True for a forward-only run of a model file without --microbatch-size:
/// pp-run compiled the model as given, one microbatch of its static shapes,
/// so every input file has exactly its input's shape.
bool runsModelAsGiven() {
  return inferMode && !sys::fs::is_directory(input) &&
         !microbatchSize.getNumOccurrences();
}

/// Why this process cannot write the output file `path` of `--flag`
/// (outputPathProblem), or "".
std::string outputProblem(const char *flag, const std::string &path) {
  return outputPathProblem(path, "--" + std::string(flag));
}

/// Why --tp, given, differs from the tensor-parallel degree `package` was
/// compiled for (its tensor axes' devices; 1 without any), or "".
std::string tensorParallelMismatch(const Package &package) {
  int64_t compiled = 1;
  for (const MeshAxis &axis : package.mesh.axes())
    if (axis.kind == AxisKind::Tensor)
      compiled *= axis.size;
  if (!tensorParallel.getNumOccurrences() || tensorParallel == compiled)
    return "";
  return "--tp " + std::to_string(tensorParallel) + " does not match the "
         "package '" + input + "', compiled for tp " +
         std::to_string(compiled) + " (mesh " + package.mesh.describe() +
         "); drop --tp, or recompile with --pp-compile=\"... tp=" +
         std::to_string(tensorParallel) + "\" or run the model file";
}

/// Why --export-onnx cannot go with `input` ("" when it can): it writes
/// into an ONNX model's graph, which a package or a TorchScript module has
/// not.
std::string exportInputProblem() {
  if (exportOnnxPath.empty() ||
      (!sys::fs::is_directory(input) &&
       pp::onnx_frontend::isOnnxModelPath(input)))
    return "";
  return "--export-onnx writes the trained weights into an ONNX model's "
         "graph, but '" +
         input +
         (sys::fs::is_directory(input) ? "' is a compiled package"
                                       : "' is no ONNX model") +
         "; run the ONNX model file (MODEL.onnx) it was compiled from";
}

/// Writes --export-onnx's file after training: the ONNX model `input` with
/// the trained parameters that job rank 0 wrote to `parametersPath`.
int exportTrainedModel(const std::string &parametersPath) {
  try {
    int64_t count = pp::onnx_frontend::exportTrainedWeights(
        input, untieSharedWeights, tieEqualWeights,
        readParameterFile(parametersPath),
        exportOnnxPath);
    std::cout << "exported " << count << " trained parameters into '"
              << exportOnnxPath << "'" << std::endl;
  } catch (const std::exception &failure) {
    return error(failure.what());
  }
  return 0;
}

/// Checks --weights against `package` (throws what does not fit) and says
/// what it loads.
void reportWeights(const Package &package) {
  PretrainedWeights weights = PretrainedWeights::open(weightsPath);
  WeightsNaming naming = weightsOptions().naming;
  WeightsBinding binding = bindPackageWeights(package, weights, naming);
  std::cout << describeBinding(weights, binding, package.parameters.size(),
                               initName == "random"
                                   ? "they start from --init random"
                                   : "they keep the model's values")
            << std::endl;
}

/// --dp and --zero (or --shard-optimizer) as the schedule's data
/// parallelism.
DataParallelism dataParallelism() {
  return {dataParallel, shardOptimizer ? 1 : zeroLevel.getValue()};
}

/// Prints every rank's action table under `--schedule` (or
/// `--schedule-file`) and `--microbatches`, with the data-parallel actions
/// of --dp and --zero, proven deadlock-free, with its predicted bubble;
/// with `--svg`, draws it.
int printScheduleOf(const std::string &packageDir) {
  try {
    Package package = Package::load(packageDir);
    PipelinePlan plan = planPipeline(package, scheduleChoice(), microbatches,
                                     dataParallelism());
    outs() << formatScheduleFile(plan.training, plan.layout);
    std::string summary =
        plan.label + ", " + std::to_string(plan.layout.stages()) +
        " stages on " + std::to_string(plan.layout.ranks) + " ranks, " +
        std::to_string(microbatches) + " microbatches: ideal bubble " +
        llvm::formatv("{0:F1}", 100 * plan.ideal.bubbleFraction).str() +
        "%, predicted " +
        llvm::formatv("{0:F1}", 100 * plan.predicted.bubbleFraction).str() +
        "% with the compiler's estimated stage costs";
    outs() << "# " << summary
           << "\n# no deadlock: every receive has its send earlier in the "
              "sender's order\n";
    if (hasDataParallelActions(plan.training))
      outs() << "# the reduces, gathers and releases run over each rank's "
                "--dp replicas, which run the same row: the same "
                "collectives in the same order\n";
    if (!svgPath.empty()) {
      writeOutputFile(svgPath,
                      renderScheduleSvg(plan.predicted, plan.layout, summary),
                      "--svg");
    }
  } catch (const std::exception &failure) {
    return error(failure.what());
  }
  return 0;
}

/// Prints the partition report of the package: its stages' estimates and
/// the schedule's simulated step, with the memory of --dp, --zero and
/// --optimizer.
int printReportOf(const std::string &packageDir) {
  try {
    Package package = Package::load(packageDir);
    if (package.stageEstimates.empty())
      return error("the package '" + packageDir +
                   "' has no stage cost estimates (compiled by an older pp); "
                   "recompile the model");
    // The run's optimizer, whatever the compile assumed.
    OptimizerOptions optimizer = optimizerOptions();
    PipelinePlan plan = planPipeline(package, scheduleChoice(), microbatches,
                                     dataParallelism(), &optimizer);
    double statePerByte =
        static_cast<double>(optimizerBufferNames(optimizer).size());
    std::vector<StageEstimate> stages = package.stageEstimates;
    for (StageEstimate &stage : stages) {
      stage.dataParallel = dataParallelism();
      stage.optimizerBytes = stage.gradientBytes * statePerByte;
    }
    recordStagePeaks(plan.predicted, stages);
    printStageReport(stages, std::cout);
    printScheduleReport(stages,
                        plan.label + " with " + std::to_string(microbatches) +
                            " microbatches",
                        plan.ideal, plan.predicted, std::cout);
  } catch (const std::exception &failure) {
    return error(failure.what());
  }
  return 0;
}

/// Gives pp-run's thread count the name --threads, which libLLVM takes for
/// an option of its own that pp-run never uses.
void claimThreadsOption() {
  auto options = cl::getRegisteredOptions();
  auto taken = options.find("threads");
  if (taken != options.end())
    taken->second->removeArgument();
  threads.setArgStr("threads");
}

/// `path` made absolute ("" stays ""), so that a rank started elsewhere
/// finds it.
std::string absolutePath(const std::string &path) {
  if (path.empty())
    return path;
  SmallString<256> full(path);
  sys::fs::make_absolute(full);
  return full.str().str();
}

/// The job this invocation describes on `packageDir`: the training or
/// forward-only options, every file path made absolute.
JobDescription jobDescription(const std::string &packageDir) {
  JobDescription job;
  job.packageDir = absolutePath(packageDir);
  job.device = deviceName;
  job.threads = threads;
  job.gemmEngine = gemmEngine;
  job.dataParallel = dataParallel;
  job.meshOrder.assign(meshOrder.begin(), meshOrder.end());
  job.tensorCollectives = *parseTensorCollectives(tensorCollectives);
  job.linkIntegrity = *parseLinkIntegrity(linkIntegrity);
  job.timeoutSeconds = timeoutSeconds;
  job.cacheDir = absolutePath(cacheRoot(cacheDir));
  job.trainer = trainerOptions();
  TrainerOptions &options = job.trainer;
  for (std::string *path :
       {&options.schedule.file, &options.tracePath, &options.metricsPath,
        &options.saveParamsPath, &options.saveGradsPath, &options.profilePath,
        &options.data.path, &options.data.evalPath,
        &options.checkpoint.directory, &options.weights.path,
        &options.weights.savePath})
    *path = absolutePath(*path);
  if (inferMode) {
    InferenceJob inference;
    for (const std::string &file : inputFiles)
      inference.inputs.push_back(absolutePath(file));
    inference.outputsDir = absolutePath(outputsDir);
    inference.asGiven = runsModelAsGiven();
    job.inference = inference;
  }
  return job;
}

/// pp-rank beside this pp-run's executable; throws when it is not there.
std::string rankWorkerPath() {
  SmallString<256> path(sys::path::parent_path(
      sys::fs::getMainExecutable(nullptr, nullptr)));
  sys::path::append(path, "pp-rank");
  if (!sys::fs::can_execute(path))
    throw std::runtime_error(
        "cannot find the rank worker '" + path.str().str() +
        "' beside pp-run; build it (cmake --build build --target pp-rank) "
        "or install it in the folder of pp-run");
  return path.str().str();
}

/// A descriptor of an anonymous file (memfd, inherited by the ranks, gone
/// with the last process holding it) that holds `job`'s description.
int jobDescriptionFd(const JobDescription &job) {
  int fd = ::memfd_create("pp-job", 0);
  if (fd < 0 || !writeAll(fd, formatJobDescription(job)))
    throw std::runtime_error(std::string("cannot write the job description: ") +
                             std::strerror(errno));
  return fd;
}

/// The path through which a process opens its descriptor `fd`.
std::string fdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

/// Runs this process's rank of a job torchrun started with pp-rank on
/// `job`: replaces this process by it, or, when `waitForIt` (rank 0
/// exports the trained model afterwards), runs it as a child that ends
/// with this process and returns its exit code.
int runRankWorker(const JobDescription &job, bool waitForIt) {
  std::string program = rankWorkerPath();
  std::string jobFile = fdPath(jobDescriptionFd(job));
  char *argv[] = {program.data(), const_cast<char *>("--job"), jobFile.data(),
                  nullptr};
  outs().flush();
  std::cout.flush();
  if (!waitForIt) {
    ::execv(program.c_str(), argv);
    throw std::runtime_error("cannot start the rank worker '" + program +
                             "': " + std::strerror(errno));
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::execv(program.c_str(), argv);
    ::_exit(127);
  }
  if (pid < 0)
    throw std::runtime_error("cannot start the rank worker '" + program +
                             "': " + std::strerror(errno));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

} // namespace

int main(int argc, char **argv) {
  claimThreadsOption();
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pp-run: trains a compiled pipeline, one process per rank\n\n"
      "  pp-run PACKAGE_DIR --nproc N --schedule gpipe|1f1b|interleaved-1f1b|zb-h1|zb-v --microbatches M\n"
      "         --steps S --data synthetic --seed K --metrics FILE\n"
      "  pp-run MODEL.onnx --stages N --microbatch-size B --loss KIND:OUTPUT\n"
      "         [--dim NAME=SIZE]... [--freeze REGEX] [--untie-shared-weights]\n"
      "         [--tie-equal-weights] [--export-onnx OUT.onnx]\n"
      "         [--tp T [--sp] [--shard NAME=DIM]... [--pad-sequence]] ...\n"
      "  pp-run MODEL.onnx|PACKAGE_DIR --infer --inputs a.pb,b.pb\n"
      "         --outputs-dir DIR [--stages N] [--microbatch-size B]\n"
      "  pp-run MODEL.pt --input-shape NAME=DIMSxTYPE... (as for .onnx)\n"
      "  pp-run MODEL.pt2 [--dim NAME=SIZE]... (as for .onnx)\n");

  if (!parseScheduleKind(scheduleOption) ||
      *parseScheduleKind(scheduleOption) == ScheduleKind::Eval)
    return error("unknown schedule '" + scheduleOption +
                 "'; use gpipe, 1f1b, interleaved-1f1b, zb-h1 or zb-v "
                 "(docs/schedules.md)");
  if (optimizerName != "sgd" && optimizerName != "adamw")
    return error("unknown optimizer '" + optimizerName + "'; use sgd or adamw");
  if (costRates != "measured" && costRates != "default")
    return error("unknown --cost-rates '" + costRates +
                 "'; use measured or default");
  if (!svgPath.empty() && !printSchedule)
    return error("--svg draws the table --print-schedule prints; add "
                 "--print-schedule");
  if (deviceName != "cpu" && deviceName != "cuda")
    return error("unknown device '" + deviceName + "'; use cpu or cuda");
  if (zeroLevel < 0 || zeroLevel > kMaxZeroLevel)
    return error("--zero " + Twine(zeroLevel.getValue()) +
                 " is not a ZeRO level; use 0, 1, 2 or 3");
  if (shardOptimizer && zeroLevel.getNumOccurrences() && zeroLevel != 1)
    return error("--shard-optimizer is ZeRO-1 but --zero is " +
                 Twine(zeroLevel.getValue()) +
                 "; give one of them (--zero " + Twine(zeroLevel.getValue()) +
                 " alone, or --zero 1)");
  if (zeroLevel == 3 && deviceName == "cuda")
    return error("--zero 3 cannot hand back a GPU's memory outside a "
                 "rank's parameter share yet (the CUDA device layer has no "
                 "virtual memory mapping, so a release keeps the buffer "
                 "whole); use --zero 2 or less with --device cuda");
  if (pp_set_gemm_engine(gemmEngine.c_str()) != PP_OK)
    return error(std::string("--gemm-engine: ") + pp_last_error());
  if (threads < 0)
    return error("--threads " + Twine(threads) +
                 " is negative; give a thread count per rank, or leave it "
                 "out for the machine's cores divided among the ranks");
  if (std::string problem = optionProblem(); !problem.empty())
    return error(problem);
  if (!sys::fs::exists(input))
    return error("no such package directory or model file: '" + input + "'");
  if (std::string problem = inferenceOptionProblem(); !problem.empty())
    return error(problem);
  if (std::string problem = exportInputProblem(); !problem.empty())
    return error(problem);
  if (std::string problem = precisionProblem(); !problem.empty())
    return error(problem);
  if (fuseAttention != "auto" && fuseAttention != "true" &&
      fuseAttention != "false")
    return error("--fuse-attention " + fuseAttention +
                 ": use auto (the default), true or false");
  if (fuseCrossEntropy != "auto" && fuseCrossEntropy != "true" &&
      fuseCrossEntropy != "false")
    return error("--fuse-cross-entropy " + fuseCrossEntropy +
                 ": use auto (the default), true or false");
  if (crossEntropyChunk < 0)
    return error("--cross-entropy-chunk " + std::to_string(crossEntropyChunk) +
                 " is negative: give the rows of logits made at once, or 0 "
                 "(the default) to let the compiler choose");

  std::string packageDir = input;
  if (sys::fs::is_directory(input)) {
    // (cl::list's operator& gives its storage.)
    const cl::Option *compileOptions[] = {&stages,
                                          &microbatchSize,
                                          &virtualStages,
                                          &memoryLimit,
                                          &costRates,
                                          &loss,
                                          std::addressof(splitPoints),
                                          &freeze,
                                          &precision,
                                          &recompute,
                                          &recomputeOps,
                                          &fuseAttention,
                                          &fuseCrossEntropy,
                                          &crossEntropyChunk,
                                          std::addressof(dims),
                                          std::addressof(inputShapes),
                                          &untieSharedWeights,
                                          &tieEqualWeights,
                                          &sequenceParallel,
                                          std::addressof(shards)};
    for (const cl::Option *option : compileOptions)
      if (option->getNumOccurrences())
        return error("--" + option->ArgStr +
                     " applies when pp-run compiles a model, but '" + input +
                     "' is a compiled package; recompile it with pp-opt " +
                     "(--dim NAME=SIZE, --untie-shared-weights, " +
                     "--tie-equal-weights, " +
                     "--pp-compile=\"... " +
                     "freeze=REGEX\", likewise sp and shard) or run the " +
                     "model file");
  } else {
    ModelCompileRequest request;
    request.modelPath = input;
    request.stages = stages;
    request.microbatchSize = microbatchSize;
    ScheduleKind kind = *parseScheduleKind(scheduleOption);
    std::optional<int64_t> required = requiredVirtualStages(kind);
    if (required && virtualStages > 0 && virtualStages != *required)
      return error("--schedule " + scheduleOption + " runs " +
                   (*required == 1 ? std::string("one stage")
                                   : std::to_string(*required) + " stages") +
                   " per rank; drop --virtual-stages " +
                   std::to_string(virtualStages) +
                   " (interleaved-1f1b and gpipe run any number)");
    request.virtualStages =
        virtualStages > 0 ? virtualStages
                          : requiredVirtualStages(kind).value_or(1);
    request.placement = placementName(placementFor(kind));
    request.splitBackward = needsSplitBackward(kind);
    request.memoryLimit = memoryLimit;
    request.schedule = scheduleOption;
    request.microbatches = microbatches;
    request.dataParallel = dataParallel;
    request.zeroLevel = dataParallelism().zeroLevel;
    request.optimizerState = static_cast<double>(
        optimizerBufferNames(optimizerOptions()).size());
    if (costRates == "measured") {
      // The rates of one rank of the job, which this launcher starts here.
      int ranks = stages * std::max<int>(dataParallel, 1) * tensorParallel;
      MachineRates rates = loadOrMeasureMachineRates(cacheRoot(cacheDir),
                                                     threadsAmong(threads, ranks))
                               .rates;
      request.flopRate = rates.flopsPerSecond;
      request.byteRate = rates.bytesPerSecond;
      request.linkRate = rates.linkBytesPerSecond;
    }
    if (runsModelAsGiven()) {
      try {
        request.symbolicBatchSize = inferenceBatchSize();
      } catch (const std::exception &failure) {
        return error(failure.what());
      }
    }
    request.loss = loss;
    request.infer = inferMode;
    request.splitPoints.assign(splitPoints.begin(), splitPoints.end());
    request.dims.assign(dims.begin(), dims.end());
    request.inputShapes.assign(inputShapes.begin(), inputShapes.end());
    request.freeze = freeze;
    request.precision = precision;
    request.recompute = recompute;
    request.recomputeOps = recomputeOps;
    request.fuseAttention = fuseAttention;
    request.fuseCrossEntropy = fuseCrossEntropy;
    request.crossEntropyChunk = crossEntropyChunk;
    request.offloadActivations = offloadActivations;
    request.untieSharedWeights = untieSharedWeights;
    request.tieEqualWeights = tieEqualWeights;
    request.tensorParallel = tensorParallel;
    request.sequenceParallel = sequenceParallel;
    request.shards.assign(shards.begin(), shards.end());
    request.padSequence = padSequence;
    request.cacheDir = cacheDir;
    std::string problem;
    std::optional<std::string> compiled = compileModel(request, problem);
    if (!compiled)
      return error(problem);
    packageDir = *compiled;
  }

  if (printSchedule)
    return printScheduleOf(packageDir);
  if (printReport)
    return printReportOf(packageDir);

  std::string problem;
  // srun with one task per rank: Slurm's variables say where this one is.
  if (numNodes == 1) {
    try {
      adoptSlurmEnvironment();
    } catch (const std::exception &failure) {
      return error(failure.what());
    }
  }
  std::optional<int> rank = environmentInt("RANK", problem);
  if (!problem.empty())
    return error(problem);
  if (rank && !jobSecretFile.empty()) {
    std::string secret = jobSecret(problem);
    if (!problem.empty())
      return error(problem);
    ::setenv(pp::runtime::kJobSecretVariable, secret.c_str(), 1);
  }
  bool writingJob = !writeJobPath.empty();
  if (writingJob && !exportOnnxPath.empty())
    return error("--export-onnx runs in pp-run after its own ranks, but "
                 "--write-job leaves the ranks to torchrun; drop "
                 "--export-onnx, keep --save-params FILE and run pp-run "
                 "MODEL.onnx --export-onnx on a later run");
  // The launcher checks the schedule once, before any rank starts.
  if ((!rank || writingJob) && !inferMode) {
    try {
      Package package = Package::load(packageDir);
      if (!package.forwardOnly())
        planPipeline(package, scheduleChoice(), microbatches,
                     dataParallelism());
    } catch (const std::exception &failure) {
      return error(failure.what());
    }
  }
  // --export-onnx: job rank 0 saves the trained parameters (to
  // --save-params' file, or else to a temporary one beside the export) and
  // this process writes them into the model once training succeeded.
  bool exporting = !exportOnnxPath.empty() && rank.value_or(0) == 0;
  std::optional<FileRemover> temporaryParameters;
  if (exporting) {
    if (std::string problem = outputProblem("export-onnx", exportOnnxPath);
        !problem.empty())
      return error(problem);
    if (saveParamsPath.empty()) {
      // Beside the export, unless that is a device or FIFO.
      SmallString<256> path;
      bool regular = !sys::fs::exists(exportOnnxPath) ||
                     sys::fs::is_regular_file(exportOnnxPath);
      if (std::error_code failure =
              regular ? sys::fs::createUniqueFile(
                            exportOnnxPath + ".params-%%%%%%", path)
                      : sys::fs::createTemporaryFile("pp-export", "params",
                                                     path))
        return error("cannot create a temporary parameter file beside "
                     "--export-onnx '" +
                     exportOnnxPath + "': " + failure.message());
      saveParamsPath = path.str().str();
      temporaryParameters.emplace(path);
    }
  }
  auto finish = [&](int status) {
    return status == 0 && exporting ? exportTrainedModel(saveParamsPath)
                                     : status;
  };
  JobDescription job = jobDescription(packageDir);
  if (rank && !writingJob) {
    // One rank of a job torchrun started: pp-rank runs it, in this process
    // unless this one exports the trained model after it.
    try {
      return finish(runRankWorker(job, exporting));
    } catch (const std::exception &failure) {
      return error(failure.what());
    }
  }
  // Job rank 0 writes the outputs: find out now, not after training, that
  // it cannot.
  if (std::string problem = jobOutputsProblem(job); !problem.empty())
    return error(problem);

  // Every rank checks the package and the data again; the launcher says
  // it once, before starting any.
  DeviceMesh mesh;
  try {
    Package package = Package::load(packageDir);
    if (inferMode) {
      checkForwardOnly(package);
      loadInferenceInputs(package, *job.inference);
    } else {
      checkTrainable(package);
      for (const std::string &warning :
           checkTrainingData(package, trainerOptions().data))
        WithColor::warning(errs(), "pp-run") << warning << "\n";
    }
    if (std::string problem = tensorParallelMismatch(package);
        !problem.empty())
      return error(problem);
    // A stage library the package does not carry (CUDA's, as a rule) is
    // built here, once, before any rank needs it.
    stageLibraryFor(package, *parseStageTarget(deviceName),
                    cacheRoot(cacheDir), std::cerr);
    if (!weightsPath.empty())
      reportWeights(package);
    mesh = dataParallelMesh(
        package.mesh, dataParallel,
        std::vector<std::string>(meshOrder.begin(), meshOrder.end()));
  } catch (const std::exception &failure) {
    return error(failure.what());
  }
  int devices = static_cast<int>(mesh.deviceCount());
  int count = numProcesses == 0 ? devices : static_cast<int>(numProcesses);
  if (numNodes == 1 && count != devices) {
    int64_t pipelineRanks = devices / dataParallel;
    std::string replicas =
        count % pipelineRanks == 0
            ? ", or --dp " + std::to_string(count / pipelineRanks) +
                  " for a mesh of " + std::to_string(count) + " ranks"
            : "";
    return error("--nproc " + Twine(count) + " does not match the job's mesh " +
                 mesh.describe() + ", whose device count is " + Twine(devices) +
                 " (stages x --dp x tp); run --nproc " + Twine(devices) +
                 replicas);
  }
  try {
    if (writingJob) {
      writeJobDescription(writeJobPath, job);
      outs() << "wrote the job description '" << writeJobPath << "' of "
             << count << " ranks; run it with torchrun --nproc-per-node "
             << count << " " << rankWorkerPath() << " --job " << writeJobPath
             << "\n";
      return 0;
    }
    std::string problem;
    std::optional<NodeLaunch> node = nodeLaunch(mesh, problem);
    if (!node)
      return error(problem);
    int jobFd = jobDescriptionFd(job);
    return finish(launchRanks({rankWorkerPath(), "--job", fdPath(jobFd)},
                              *node, printPeakRss));
  } catch (const std::exception &failure) {
    return error(failure.what());
  }
}
