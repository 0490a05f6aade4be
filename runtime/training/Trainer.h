//===- Trainer.h - one rank's training loop ---------------------*- C++ -*-===//
//
// Runs the stage of a package that belongs to this rank: feeds its stage
// functions in schedule order, accumulates gradients, synchronizes the loss
// and the global gradient norm, and updates the parameters.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINER_H
#define PP_RUNTIME_TRAINER_H

#include "runtime/training/Backend.h"
#include "runtime/communication/Communicator.h"
#include "runtime/kernels/Frame.h"
#include "runtime/training/LearningRate.h"
#include "runtime/training/Optimizer.h"
#include "runtime/checkpoints/PretrainedWeights.h"
#include "runtime/training/ParameterInit.h"
#include "runtime/package/Package.h"
#include "runtime/training/PipelinePlan.h"

#include <optional>
#include <ostream>
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
  /// Where rank 0 writes the trained and frozen parameters as F32
  /// safetensors under the file's names (the prefix stripped); "" for
  /// nowhere.
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
  OptimizerOptions optimizer;
  /// Each step's learning rate.
  LearningRateSchedule learningRate;
  /// Where trainable parameters start from; random draws from `seed`.
  ParameterInit init = ParameterInit::Model;
  /// The ZeRO level over the data-parallel replicas (ParameterUpdate.h):
  /// 0 none, 1 optimizer state, 2 also gradients, 3 also parameters
  /// between uses, each rank keeping 1/D of each stage's.
  int zeroLevel = 0;
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
};

/// A rank's place in the job's mesh and the groups it talks in.
struct RankGroups {
  /// The job's mesh: the package's axes (pipeline and tensor) and the "dp"
  /// axis.
  DeviceMesh mesh;
  int64_t stage = 0;
  int64_t dataParallelRank = 0, dataParallelSize = 1;
  /// This rank's coordinate over the package's tensor axes and their
  /// devices (1 without any).
  int64_t tensorParallelRank = 0, tensorParallelSize = 1;
  /// The ranks that differ from this one only in the pipeline coordinate
  /// (its rank is the stage), only in the dp coordinate (its rank is the
  /// dp coordinate), and only in the tensor axes' coordinates (its rank is
  /// tensorParallelRank).
  std::unique_ptr<Communicator> pipeline, dataParallel, tensorParallel;
  /// The stage functions' collectives: over `tensorParallel`.
  std::unique_ptr<CollectiveGroup> collectives;
};

/// What the stage functions' collectives (RankGroups::collectives) run
/// over, for a tensor-parallel group of more than one rank.
enum class TensorCollectives {
  /// Shared memory when every rank of the group can map the same segment
  /// (the ranks are on one host), else Tcp.
  Auto,
  /// Shared memory (SharedMemoryCollectives.h); an error where the ranks
  /// cannot share memory.
  SharedMemory,
  /// The communicator's collectives over the job's authenticated TCP links
  /// (CommunicatorCollectives.h).
  Tcp,
};

/// The TensorCollectives that `name` (auto, shm, tcp, or gloo: tcp's name
/// from when Gloo carried it) names, or nullopt.
std::optional<TensorCollectives>
parseTensorCollectives(const std::string &name);
/// The --tp-collectives spelling of `collectives` (auto, shm or tcp).
const char *tensorCollectivesName(TensorCollectives collectives);

/// Lays the job out as `package`'s mesh (pipeline and tensor axes) times
/// `dataParallel` replicas in `meshOrder` (dataParallelMesh) and connects
/// this rank's groups, the stage functions' collectives as `collectives`
/// says (the same on every rank). Throws when the job's size is not the
/// mesh's, the mesh has a context axis, or shared memory is demanded where
/// the ranks of a tensor-parallel group cannot share it.
RankGroups
connectRankGroups(const Package &package, Communicator &world,
                  int64_t dataParallel,
                  const std::vector<std::string> &meshOrder,
                  TensorCollectives collectives = TensorCollectives::Auto);

/// Trains `package` on this rank of the job (`world`) in its place in
/// `groups`: its stage's messages go over the pipeline group, its
/// gradients and loss terms are summed over the data-parallel group. The
/// stage functions run on `backend` (whose stage library the package has
/// loaded). Rank 0 prints each step to `log` and writes the metrics file.
/// Throws std::runtime_error with a clear message on any failure.
void train(Package &package, Communicator &world, RankGroups &groups,
           Backend &backend, const TrainerOptions &options, std::ostream &log);

/// Throws std::runtime_error, naming the file and the problem, unless
/// `package` can train on the token datasets `data` names (none for
/// synthetic data): their format, checksum, size and vocabulary. Returns
/// warnings about data that is likely misread (a flat uint32 file read as
/// uint16).
std::vector<std::string> checkTrainingData(const Package &package,
                                           const DataOptions &data);

/// Binds the parameters of `package` to `weights` under `naming`
/// (bindWeights); throws std::runtime_error listing what does not fit.
WeightsBinding bindPackageWeights(const Package &package,
                                  const PretrainedWeights &weights,
                                  const WeightsNaming &naming);

/// Throws std::runtime_error, saying what to do instead, when `package` is
/// forward-only.
void checkTrainable(const Package &package);

/// Throws std::runtime_error, saying how to get one, unless `package` is
/// forward-only.
void checkForwardOnly(const Package &package);

/// Runs the forward-only `package` once over `inputs` (host tensors, one
/// per Package::inputs entry, each holding `microbatches` microbatches of
/// the package's microbatch size along dimension 0, checked by the
/// caller) with dropout off. Returns on stage 0 the model's outputs in
/// Package::outputs order, each the microbatches' results concatenated
/// along dimension 0; other stages return none. Parameters start from
/// `weights` where its path is set. Throws std::runtime_error
/// for a training package and on any failure.
std::vector<TensorPtr> infer(Package &package, Communicator &world,
                             RankGroups &groups, Backend &backend,
                             const std::vector<pp_tensor *> &inputs,
                             int64_t microbatches,
                             const WeightsOptions &weights);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINER_H
