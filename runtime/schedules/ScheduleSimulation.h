//===- ScheduleSimulation.h - timing an action table ------------*- C++ -*-===//
//
// Plays a schedule against per-stage action costs to predict what a step
// takes: when each action starts and ends on its rank, the step time, the
// bubble (the fraction of rank time spent idle) and the memory each rank
// holds at its peak: activations, and parameters, gradients and optimizer
// state as the data-parallel actions and the ZeRO level shard them. The
// partition report, the partitioner's memory model, --print-schedule's
// Gantt chart and pp-run's predicted bubble all come from here.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_SCHEDULESIMULATION_H
#define PP_RUNTIME_SCHEDULESIMULATION_H

#include "runtime/schedules/Schedule.h"

namespace pp::runtime {

/// Seconds per microbatch of each stage's compute actions, and the bytes a
/// forward keeps for its backward (indexed by stage).
struct StageCosts {
  std::vector<double> forward;
  /// The input-gradient half of the backward (the whole backward's cost is
  /// backwardInput + backwardWeight; an unsplit package may put it all in
  /// backwardInput).
  std::vector<double> backwardInput;
  std::vector<double> backwardWeight;
  /// Activation bytes one microbatch's forward keeps until its backward;
  /// BackwardInput frees `savedForInputBytes` of them, BackwardWeight the
  /// rest.
  std::vector<double> savedBytes;
  std::vector<double> savedForInputBytes;
  /// Bytes a BackwardInput keeps for its BackwardWeight (the values the
  /// weight half takes from the input half), freed by the BackwardWeight;
  /// empty: none.
  std::vector<double> inputToWeightBytes;
  /// Seconds a message between two ranks takes (0: free).
  double messageSeconds = 0;
  /// Bytes per second of an offload or reload copy of saved values between
  /// the stage functions' memory and the host's (0: free).
  double hostCopyBytesPerSecond = 0;
  /// Seconds of the Optimizer action on each rank (0: free).
  double optimizerSeconds = 0;

  /// The model's state per stage, whole (empty: none): the bytes of all
  /// its parameters, and of those that train (the size of their gradients;
  /// their optimizer state is optimizerStatePerByte times it).
  std::vector<double> parameterBytes, trainableBytes;
  /// Per stage (empty: none): the compute-type copies of its parameters,
  /// held whenever its values are whole (at ZeRO-3 from their first use
  /// after a gather to the release; counted from the gather).
  std::vector<double> computeCopyBytes;
  /// Optimizer state bytes per trainable byte: AdamW 2 (two moments), SGD
  /// 1 with momentum, 0 without.
  double optimizerStatePerByte = 2;
  /// The data-parallel group of every pipeline rank and its ZeRO level:
  /// what the state is sharded over (docs/schedules.md, "Memory").
  DataParallelism dataParallel;
  /// Bytes per second of a data-parallel collective (0: free). A ring
  /// all-reduce moves 2 (D-1)/D of the bytes, a reduce-scatter or an
  /// all-gather (D-1)/D.
  double dataParallelBytesPerSecond = 0;

  /// Equal costs for `stages` stages: forward f, backward input i and
  /// weight w seconds, `saved` bytes each.
  static StageCosts uniform(int64_t stages, double f, double i, double w,
                            double saved = 1);
};

/// Bytes held, by what they are.
struct HeldBytes {
  double parameters = 0, gradients = 0, optimizerState = 0, activations = 0;

  double total() const {
    return parameters + gradients + optimizerState + activations;
  }
  HeldBytes &operator+=(const HeldBytes &other);
};

/// One action as simulated.
struct SimulatedAction {
  int64_t rank = 0;
  Action action;
  double start = 0, end = 0;
};

/// What a step of a schedule is predicted to do.
struct SimulatedStep {
  /// From the first action's start to the last action's end.
  double stepSeconds = 0;
  /// 1 - (compute seconds of all ranks) / (ranks * stepSeconds).
  double bubbleFraction = 0;
  /// Per rank: seconds computing, and the most activation bytes held at
  /// once.
  std::vector<double> busySeconds;
  std::vector<double> peakActivationBytes;
  /// Per rank: what it holds when its total is largest (its predicted
  /// peak memory).
  std::vector<HeldBytes> peakMemory;
  /// Per stage: what it holds at the step's start and after each action
  /// of its rank, in the rank's order.
  std::vector<std::vector<HeldBytes>> stageMemory;
  /// Every action of every rank, each rank's in order.
  std::vector<SimulatedAction> actions;
};

/// Simulates `table` (which checkSchedule() accepted) with `costs`. A
/// compute action starts when its rank is free, its Recv's messages have
/// arrived (their Send's end plus messageSeconds) and its stage's
/// GatherParameters has ended; Send and Recv take no rank time.
/// ReduceGradients and GatherParameters run on the rank's communication
/// stream, one after another, overlapping its compute; the Optimizer waits
/// for them. OffloadActivations and ReloadActivations copy a microbatch's
/// saved bytes on the rank's copy stream, one after another, overlapping
/// its compute; a backward (B, or I) waits for its reload. An offload frees
/// the bytes where the stage functions run, a reload takes them again.
/// Memory follows docs/schedules.md, "Memory".
SimulatedStep simulateSchedule(const ScheduleTable &table,
                               const PipelineLayout &layout,
                               const MessageGraph &messages,
                               const StageCosts &costs);

/// simulateSchedule with equal stages (a forward and each backward half 1
/// second): the schedule's theoretical bubble.
SimulatedStep simulateEqualStages(const ScheduleTable &table,
                                  const PipelineLayout &layout,
                                  const MessageGraph &messages);

} // namespace pp::runtime

#endif // PP_RUNTIME_SCHEDULESIMULATION_H
