//===- ScheduleSvg.h - a schedule as a Gantt chart --------------*- C++ -*-===//

#ifndef PP_RUNTIME_SCHEDULESVG_H
#define PP_RUNTIME_SCHEDULESVG_H

#include "runtime/schedules/ScheduleSimulation.h"

namespace pp::runtime {

/// A self-contained SVG image of `step`: one row per rank, time to the
/// right, a box per compute action labelled with its stage and microbatch
/// (forward, backward, input- and weight-gradient halves and the optimizer
/// in distinct colours, a legend), idle time blank, and `title` with the
/// predicted bubble above.
std::string renderScheduleSvg(const SimulatedStep &step,
                              const PipelineLayout &layout,
                              const std::string &title);

} // namespace pp::runtime

#endif // PP_RUNTIME_SCHEDULESVG_H
