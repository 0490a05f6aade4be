//===- Trainer.h - one rank's training loop ---------------------*- C++ -*-===//
//
// Runs the stage of a package that belongs to this rank: feeds its stage
// functions in schedule order, accumulates gradients, synchronizes the loss
// and the global gradient norm, and updates the parameters.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINER_H
#define PP_RUNTIME_TRAINER_H

#include "runtime/Backend.h"
#include "runtime/Communicator.h"
#include "runtime/Optimizer.h"
#include "runtime/Package.h"
#include "runtime/Schedule.h"

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
  /// Clip the global gradient norm to this value; 0 disables clipping.
  double maxGradNorm = 0;
  OptimizerOptions optimizer;
};

/// What a step reports (identical on every rank).
struct StepMetrics {
  int64_t step = 0;
  double loss = 0;
  double gradNorm = 0;
  double samplesPerSecond = 0;
};

/// Checks that `kind` with `microbatches` cannot deadlock on the messages
/// between `package`'s stages; "" when it cannot, else why it would.
std::string checkPackageSchedule(const Package &package, ScheduleKind kind,
                                 int64_t microbatches);

/// Trains `package` on this rank (one rank per stage), running its stage
/// functions on `backend` (whose stage library the package has loaded).
/// Rank 0 prints each step to `log` and writes the metrics file. Throws
/// std::runtime_error with a clear message on any failure.
void train(Package &package, Communicator &communicator, Backend &backend,
           const TrainerOptions &options, std::ostream &log);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINER_H
