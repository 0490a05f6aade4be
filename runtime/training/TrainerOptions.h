//===- TrainerOptions.h - what a training run is asked to do ---*- C++ -*-===//
//
// The options of a run (pp-run's flags, a job description's keys) and what
// each step reports.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_TRAINEROPTIONS_H
#define PP_RUNTIME_TRAINING_TRAINEROPTIONS_H

#include "runtime/checkpoints/PretrainedWeights.h"
#include "runtime/training/LearningRate.h"
#include "runtime/training/LossScaler.h"
#include "runtime/training/Optimizer.h"
#include "runtime/training/ParameterInit.h"
#include "runtime/training/PipelinePlan.h"
#include "runtime/training/ReduceDtype.h"

#include <cstdint>
#include <string>

namespace pp::runtime {

/// Where the training and eval samples come from.
struct DataOptions {
  /// A token dataset (TokenDataset.h); "" for synthetic samples.
  std::string path;
  /// 2 or 4 for flat token files; 0 for pp's own format only.
  int tokenWidth = 0;
  /// Tokens per sample: the model's data input takes S tokens, the labels
  /// the S that follow each by one.
  int64_t sequenceLength = 0;
  /// Pad samples shorter than the model's sequence (compiled for a multiple
  /// of the tensor-parallel degree, pp-run --pad-sequence) to its length:
  /// token 0 in the input, ignore_index in the labels.
  bool padSequence = false;
  /// The model input that takes the tokens; "" for its one integer input.
  std::string inputName;
  /// An eval token dataset; "" for no evaluation.
  std::string evalPath;
  /// Evaluate before step 1, after every `evalEvery` steps (0: only) and
  /// after the last.
  int64_t evalEvery = 0;
  /// Eval batches per evaluation; 0 for the whole eval dataset.
  int64_t evalBatches = 0;
};

/// Where and when the trainer saves checkpoints, and whether it resumes
/// from one (docs/checkpoints.md).
struct CheckpointOptions {
  /// The checkpoint directory; "" for no checkpoints.
  std::string directory;
  /// Save after every `every` steps and after the last (0: never).
  int64_t every = 0;
  /// After a save, keep only the newest `keepLast` complete checkpoints
  /// (0: keep all).
  int64_t keepLast = 0;
  /// Continue from the newest checkpoint in `directory` that passes
  /// verification (newestUsableCheckpoint: damaged newer ones are named on
  /// stderr and moved aside); from scratch when there is none.
  bool resume = false;
};

/// Pretrained weights in and trained weights out (PretrainedWeights.h).
struct WeightsOptions {
  /// The safetensors file, index or folder parameters start from; "" for
  /// the model's own values.
  std::string path;
  WeightsNaming naming;
  /// Where rank 0 writes the trained and frozen parameters as safetensors
  /// under the file's names (the prefix stripped), each in the type the
  /// model stores it in (F32, or BF16 / F16 rounded from its f32 master);
  /// "" for nowhere.
  std::string savePath;
};

struct TrainerOptions {
  /// The built-in schedule or schedule file the steps run.
  ScheduleChoice schedule;
  /// Where each rank's spans go (Trace.h); "" for no trace.
  std::string tracePath;
  int64_t microbatches = 1;
  /// The run's total step count: it ends after step `steps`, resumed or
  /// not.
  int64_t steps = 1;
  uint64_t seed = 0;
  /// One JSON object per step and a final params_sha256 line; "" for none.
  std::string metricsPath;
  /// Where rank 0 writes the trained parameters (ParameterFile.h); "" for
  /// nowhere.
  std::string saveParamsPath;
  /// Where rank 0 writes the first step's gradients, summed over its
  /// microbatches and before clipping (ParameterFile.h); "" for nowhere.
  std::string saveGradsPath;
  /// Where rank 0 writes each stage's seconds per op kind and the step
  /// times as JSON (docs/tools/pp-run.md); "" for no profile.
  std::string profilePath;
  /// Clip the global gradient norm to this value; 0 disables clipping.
  double maxGradNorm = 0;
  /// The dynamic loss scaling of an fp16 package (LossScaler.h).
  LossScalerOptions lossScaling;
  OptimizerOptions optimizer;
  /// Each step's learning rate.
  LearningRateSchedule learningRate;
  /// Where trainable parameters start from; random draws from `seed`.
  ParameterInit init = ParameterInit::Model;
  /// The ZeRO level over the data-parallel replicas (ParameterUpdate.h):
  /// 0 none, 1 optimizer state, 2 also gradients, 3 also parameters
  /// between uses, each rank keeping 1/D of each stage's.
  int zeroLevel = 0;
  /// The element type in which the gradients travel and add up over the
  /// data-parallel replicas (GradientReduction.h).
  ReduceDtype gradReduceDtype = ReduceDtype::F32;
  /// Serve each stage function's tensors from its arena by the package's
  /// memory plan (where the backend's kernels allocate through the frame);
  /// false allocates every tensor on its own.
  bool memoryPlan = true;
  DataOptions data;
  CheckpointOptions checkpoint;
  WeightsOptions weights;
};

/// What a step reports (identical on every rank).
struct StepMetrics {
  int64_t step = 0;
  double loss = 0;
  double gradNorm = 0;
  /// The learning rate the step's update used.
  double learningRate = 0;
  double seconds = 0;
  double samplesPerSecond = 0;
  /// Loss terms (tokens that are not ignore_index, or mse elements) of the
  /// global batch per second.
  double tokensPerSecond = 0;
  /// The loss scale the step ran with (fp16); 0 when the run scales none.
  double lossScale = 0;
  /// The step's gradients overflowed: the parameters were left as they
  /// were (fp16).
  bool skipped = false;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_TRAINEROPTIONS_H
