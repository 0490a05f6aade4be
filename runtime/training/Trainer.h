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
#include "runtime/training/Optimizer.h"
#include "runtime/package/Package.h"
#include "runtime/schedules/Schedule.h"

#include <ostream>
#include <string>

namespace pp::runtime {

struct TrainerOptions {
  ScheduleKind schedule = ScheduleKind::OneForwardOneBackward;
  int64_t microbatches = 1;
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
};

/// What a step reports (identical on every rank).
struct StepMetrics {
  int64_t step = 0;
  double loss = 0;
  double gradNorm = 0;
  double seconds = 0;
  double samplesPerSecond = 0;
};

/// Checks that `kind` with `microbatches` cannot deadlock on the messages
/// between `package`'s stages; "" when it cannot, else why it would.
std::string checkPackageSchedule(const Package &package, ScheduleKind kind,
                                 int64_t microbatches);

/// Connects this rank's pipeline group: the ranks of `package.mesh` that
/// differ from `world.rank()` only in the pipeline coordinate. Its rank is
/// this rank's stage. Throws when the job's size is not the mesh's.
std::unique_ptr<Communicator> connectPipelineGroup(const Package &package,
                                                   Communicator &world);

/// Trains `package` on this rank of the job (`world`): the stage is its
/// pipeline coordinate in the package's mesh, and stages talk over
/// `pipeline` (from connectPipelineGroup). The stage functions run on
/// `backend` (whose stage library the package has loaded; its messages go
/// over `pipeline` too). Rank 0 prints each step to `log` and writes the
/// metrics file. Throws std::runtime_error with a clear message on any
/// failure.
void train(Package &package, Communicator &world, Communicator &pipeline,
           Backend &backend, const TrainerOptions &options, std::ostream &log);

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
/// along dimension 0; other stages return none. Throws std::runtime_error
/// for a training package and on any failure.
std::vector<TensorPtr> infer(Package &package, Communicator &pipeline,
                             Backend &backend,
                             const std::vector<pp_tensor *> &inputs,
                             int64_t microbatches);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINER_H
