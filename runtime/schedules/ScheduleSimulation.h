//===- ScheduleSimulation.h - timing an action table ------------*- C++ -*-===//
//
// Plays a schedule against per-stage action costs to predict what a step
// takes: when each action starts and ends on its rank, the step time, the
// bubble (the fraction of rank time spent idle) and the activation memory
// each rank holds at its peak. The partition report, --print-schedule's
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
  /// Seconds a message between two ranks takes (0: free).
  double messageSeconds = 0;
  /// Seconds of the Optimizer action on each rank (0: free).
  double optimizerSeconds = 0;

  /// Equal costs for `stages` stages: forward f, backward input i and
  /// weight w seconds, `saved` bytes each.
  static StageCosts uniform(int64_t stages, double f, double i, double w,
                            double saved = 1);
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
  /// Every action of every rank, each rank's in order.
  std::vector<SimulatedAction> actions;
};

/// Simulates `table` (which checkSchedule() accepted) with `costs`. A
/// compute action starts when its rank is free and its Recv's messages have
/// arrived (their Send's end plus messageSeconds); Send and Recv take no
/// rank time.
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
