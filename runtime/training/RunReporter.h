//===- RunReporter.h - what a run tells its user ----------------*- C++ -*-===//
//
// Job rank 0's log lines (the mesh, what trains, the pipeline, each step
// and evaluation), the --metrics file (a line per step and evaluation, the
// per-rank facts and params_sha256), the --trace file with the measured
// bubble, and the --profile file.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_RUNREPORTER_H
#define PP_RUNTIME_TRAINING_RUNREPORTER_H

#include "runtime/communication/Communicator.h"
#include "runtime/core/OutputFile.h"
#include "runtime/data/Sampler.h"
#include "runtime/kernels/OpProfile.h"
#include "runtime/package/Package.h"
#include "runtime/training/ActionTracer.h"
#include "runtime/training/Backend.h"
#include "runtime/training/ParameterStore.h"
#include "runtime/training/PipelinePlan.h"
#include "runtime/training/RankContext.h"
#include "runtime/training/RankGroups.h"
#include "runtime/training/RankStages.h"
#include "runtime/training/StepBreakdown.h"
#include "runtime/training/TrainerOptions.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace pp::runtime {

/// What the metrics' `ranks` line says of one rank.
struct RankFacts {
  /// Tokens or elements read from the data (a first stage its inputs, a
  /// last stage its labels, a middle stage none).
  int64_t elementsRead = 0;
  /// Its parameters (shards of sharded ones; frozen and constant
  /// included), gradients and optimizer state as resident in memory.
  ResidentBytes resident;
  /// Whether its stage functions' tensors come from arenas.
  bool usesArenas = false;
  /// Tensors the stage functions allocated on their own in a step.
  int64_t heapAllocationsPerStep = 0;
  /// The most it held in a training step (StepExecutor::peakHeld).
  HeldBytes measuredPeak;
  /// The most saved values it held at once (StepExecutor::
  /// mostActivationsHeld): measured against activation_bytes.
  double measuredActivations = 0;
  /// The most saved values it held offloaded in host memory at once
  /// (StepExecutor::mostActivationsOffloaded): measured against
  /// offloaded_activation_bytes.
  int64_t measuredOffloaded = 0;
  /// Bytes its last training step copied between the host and the device
  /// (Backend::hostDeviceBytes).
  int64_t hostDeviceBytesPerStep = 0;
};

/// Conversions made over a run, and the bytes they wrote.
struct ConversionCount {
  int64_t conversions = 0;
  int64_t bytes = 0;
};

/// What a run reports; every rank makes one, job rank 0 writes.
class RunReporter {
public:
  /// Reports the run of `rank` on the pipeline `plan`; a profile waits for
  /// `backend` (Backend::synchronize) before it reads its clock.
  RunReporter(const RankContext &rank, const PipelinePlan &plan,
              Backend &backend);

  /// Whether this rank prints and writes the metrics (job rank 0).
  bool reports() const { return context.reports(); }
  /// The spans of this rank's actions (recorded with --trace).
  ActionTracer &tracer() { return actions; }
  /// Seconds per op kind of this rank's stage functions; null without
  /// --profile.
  OpProfile *profile() const { return opProfile.get(); }

  /// The run's first lines: the mesh and every rank's coordinates on it,
  /// what trains, the pipeline with its bubble and each stage's activation
  /// memory (from arenas when `usesArenas`); and opens the metrics file.
  void begin(bool usesArenas);
  void reportStep(const StepMetrics &step);
  /// The evaluation after `step` steps: the loss over `tokens` eval tokens
  /// of `batches` batches, which took `seconds`.
  void reportEval(int64_t step, double loss, int64_t tokens, int64_t batches,
                  double seconds);
  /// Writes (rank 0) the metrics' `ranks` line: `mine` from every rank,
  /// with its activation memory (ActivationMemory.h), peak resident memory,
  /// the peak the schedule's simulation predicts for it (predictedPeak)
  /// and mesh coordinates. Every rank calls it.
  void reportRankFacts(const RankFacts &mine);
  /// Gathers every rank's spans to job rank 0, which writes the trace file
  /// and reports the measured bubble of its pipeline next to the predicted
  /// one. Every rank calls it, with --trace.
  void writeTrace();
  /// Gathers every pipeline rank's profile on rank 0, which writes them
  /// with the run's step seconds and the data-parallel reduction's
  /// seconds (reducing, and waited for) and bytes per step, the
  /// conversions of its parameters into compute copies over the run
  /// (ComputeCopies, evaluations included) and where its training steps
  /// went (`breakdown`) to --profile, and prints each rank's breakdown.
  /// Every rank of the first replica calls it, with --profile.
  void writeProfile(double stepSeconds, double reducingSeconds,
                    double reduceWaitSeconds, size_t reduceBytesPerStep,
                    const ConversionCount &computeCopies,
                    const StepBreakdown &breakdown);
  /// The run's last line, params_sha256 `digest`, and the metrics file
  /// committed.
  void finish(const std::string &digest);

private:
  void writeMetrics(const nlohmann::json &line);
  void printMesh();
  void printParameterKinds();
  void printPipeline();
  void printActivationMemory(bool usesArenas);
  void printBreakdowns(const nlohmann::json &stages);
  std::string coordinatesOf(int64_t rank) const;
  std::optional<HeldBytes> predictedPeak() const;

  RankContext context;
  const PipelinePlan &plan;
  ActionTracer actions;
  std::unique_ptr<OpProfile> opProfile;
  /// The --metrics file (rank 0), written a line at a time, so that a
  /// crash later keeps the steps so far, and failing at once on a failed
  /// write (a full disk).
  std::unique_ptr<OutputFile> metrics;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_RUNREPORTER_H
