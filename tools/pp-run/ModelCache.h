//===- ModelCache.h - compile models for pp-run, cached ---------*- C++ -*-===//

#ifndef PP_TOOLS_PP_RUN_MODELCACHE_H
#define PP_TOOLS_PP_RUN_MODELCACHE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

/// What `pp-run MODEL.onnx ...` or `pp-run MODEL.pt ...` compiles.
struct ModelCompileRequest {
  std::string modelPath;
  /// Pipeline ranks (pp-compile stages=N).
  int64_t stages = 1;
  /// Stages per rank (virtual-stages=V) and their placement ("loop", "v").
  int64_t virtualStages = 1;
  std::string placement = "loop";
  /// Split each backward into input and weight halves (zero bubble).
  bool splitBackward = false;
  /// Bytes per rank the partition must fit (0: no limit), for `schedule`
  /// with `microbatches` per step.
  uint64_t memoryLimit = 0;
  std::string schedule = "1f1b";
  int64_t microbatches = 1;
  /// With a memory limit: the data-parallel replicas and the ZeRO level
  /// the memory counts (pp-compile data-parallel=D zero=L), and the
  /// optimizer's state bytes per trainable byte (optimizer-state=).
  int64_t dataParallel = 1;
  int zeroLevel = 0;
  double optimizerState = 2;
  /// The cost model's rates (pp-compile flop-rate, byte-rate, link-rate);
  /// 0 keeps the compiler's defaults.
  double flopRate = 0, byteRate = 0, linkRate = 0;
  /// Rows per microbatch: dimension 0 of every input. 0 only for a
  /// forward-only package (`infer`), which runs the model as given: one
  /// microbatch of the model's static shapes, no batch dimension required.
  int64_t microbatchSize = 0;
  /// The size of a symbolic dimension 0 of the model's inputs when it is
  /// not the microbatch size (a forward-only run of the model as given
  /// takes it from its first input file); 0: the microbatch size.
  int64_t symbolicBatchSize = 0;
  /// KIND:OUTPUT; "" for a forward-only package (`infer`).
  std::string loss;
  /// Compile a forward-only package (pp-compile infer=true).
  bool infer = false;
  std::vector<std::string> splitPoints;
  /// `--dim NAME=SIZE` options, as given: sizes of symbolic dimensions.
  std::vector<std::string> dims;
  /// `--input-shape NAME=TYPE` options, as given: types of a TorchScript
  /// module's arguments.
  std::vector<std::string> inputShapes;
  /// Regular expression of parameter names to freeze; "" freezes none.
  std::string freeze;
  /// What each stage's backward recomputes (pp-compile recompute=): none,
  /// full or selective; and a regular expression of op names to recompute.
  std::string recompute = "none", recomputeOps;
  /// Whether attention becomes nn.attention (pp-compile fuse-attention=):
  /// auto, true or false.
  std::string fuseAttention = "auto";
  /// Whether the LM head and its loss become nn.linear_cross_entropy
  /// (pp-compile fuse-cross-entropy=): auto, true or false; and the rows of
  /// logits it makes at once (cross-entropy-chunk=; 0: the compiler's
  /// choice).
  std::string fuseCrossEntropy = "auto";
  int64_t crossEntropyChunk = 0;
  /// Whether the run offloads activations (pp-compile
  /// offload-activations=): what a rank holds under memoryLimit.
  bool offloadActivations = false;
  /// The compute type (pp-compile precision=): f32, bf16 or fp16.
  std::string precision = "f32";
  /// Give every node its own copy of a shared floating-point initializer
  /// (ImportOptions::untieSharedWeights).
  bool untieSharedWeights = false;
  /// Tie initializers that are bitwise copies or transposes of earlier
  /// ones (ImportOptions::tieEqualWeights).
  bool tieEqualWeights = false;
  /// Devices of the tensor-parallel axis inside each stage (pp-compile
  /// tp=T); 1 compiles no tensor axis.
  int64_t tensorParallel = 1;
  /// Sequence parallelism on the tensor axis (pp-compile sp=true).
  bool sequenceParallel = false;
  /// `--shard NAME=DIM` options, as given: parameters sharded by hand
  /// (pp-compile shard=NAME=DIM,...).
  std::vector<std::string> shards;
  /// Compile for a sequence padded to a multiple of the tensor-parallel
  /// degree: dimension 1 of each `inputShapes` entry and each `dims` size
  /// that the degree does not divide is rounded up (the runtime pads the
  /// data and masks the padding out of the loss).
  bool padSequence = false;
  /// "" for $PP_CACHE_DIR, else ~/.cache/pp.
  std::string cacheDir;
};

/// Compiles the model into a package in the cache, keyed by a SHA-256 of the
/// model's bytes and the compile options (the pp-compile pipeline, with the
/// tensor-parallel options, and `dims`, `inputShapes`, `untieSharedWeights`
/// and `tieEqualWeights` as given),
/// unless a whole entry is there already: one whose manifest loads and
/// whose files match their recorded digests. A damaged entry is compiled
/// again (with a warning on stderr). Compiles of one model take turns (a
/// lock per entry); staging directories of compiles that died are removed.
/// Returns the package directory, or nullopt with `problem` set.
std::optional<std::string> compileModel(const ModelCompileRequest &request,
                                        std::string &problem);

#endif // PP_TOOLS_PP_RUN_MODELCACHE_H
