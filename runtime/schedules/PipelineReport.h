//===- PipelineReport.h - what each stage and rank costs --------*- C++ -*-===//
//
// The partitioner's estimates per stage (pp.stage_costs in the IR, the
// manifest's "stage_costs") and the schedule's simulated step, as tables a
// user reads: per stage its rank, nodes, times, parameters, optimizer
// state, activations and boundary tensors; per rank its time and peak
// memory; for the schedule its predicted bubble and step time. pp-opt
// --pp-report and pp-run --report print it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PIPELINEREPORT_H
#define PP_RUNTIME_PIPELINEREPORT_H

#include "runtime/schedules/ScheduleSimulation.h"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace pp::runtime {

/// One stage's estimate (an entry of stage_costs).
struct StageEstimate {
  int64_t rank = 0;
  std::string firstNode, lastNode;
  /// Seconds per microbatch: the forward, the input-gradient and the
  /// weight-gradient parts of the backward, and all of it with the
  /// boundary traffic.
  double forwardSeconds = 0, backwardInputSeconds = 0,
         backwardWeightSeconds = 0, totalSeconds = 0;
  double parameterCount = 0, parameterBytes = 0, gradientBytes = 0,
         optimizerBytes = 0;
  /// The compute-type copies of its parameters its functions take, held
  /// while the values are whole (docs/precision.md).
  double computeCopyBytes = 0;
  /// Activations saved per microbatch, and the microbatches the
  /// partitioner's memory estimate holds in flight.
  double savedBytes = 0;
  int64_t inFlight = 0;
  /// The values sent to later stages: name and bytes.
  std::vector<std::pair<std::string, double>> boundary;
  /// The data parallelism the partition was made for (the same on every
  /// stage): it shards the state by its ZeRO level.
  DataParallelism dataParallel;
  /// The most the partitioner's memory model has the stage hold at once
  /// (0 when unknown: then its whole state and in-flight activations).
  double peakBytes = 0;

  /// Parameters, gradients and optimizer state.
  double stateBytes() const {
    return parameterBytes + gradientBytes + optimizerBytes;
  }
};

/// The simulator's costs for `stages`: times, activations, the state
/// (parameterBytes, gradientBytes as the trainable bytes, the optimizer
/// state per trainable byte their totals give) and the data parallelism.
StageCosts costsOf(const std::vector<StageEstimate> &stages);

/// Sets each stage's peakBytes to the most it holds at once in `step` (a
/// simulation with the stages' state, costsOf's).
void recordStagePeaks(const SimulatedStep &step,
                      std::vector<StageEstimate> &stages);

/// Prints the per-stage table and the per-rank time and memory (the sum
/// of its stages' peakBytes, the partitioner's memory model).
void printStageReport(const std::vector<StageEstimate> &stages,
                      std::ostream &os);

/// Prints the schedule `label`'s simulated step: the bubble (ideal with
/// equal stages, predicted with the estimates), the step time and per rank
/// its busy time, the most activations it holds, and its predicted peak
/// memory split into parameters, gradients, optimizer state and
/// activations (SimulatedStep::peakMemory).
void printScheduleReport(const std::vector<StageEstimate> &stages,
                         const std::string &label, const SimulatedStep &ideal,
                         const SimulatedStep &predicted, std::ostream &os);

} // namespace pp::runtime

#endif // PP_RUNTIME_PIPELINEREPORT_H
