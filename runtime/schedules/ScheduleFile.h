//===- ScheduleFile.h - schedules as text -----------------------*- C++ -*-===//
//
// The text form of an action table (docs/schedules.md): what
// --print-schedule prints and --schedule-file reads.
//
//   # comment
//   pp-schedule 1
//   ranks 2
//   stage-ranks 0 1 1 0
//   microbatches 2
//   rank 0: F0.0 sF0.0 F0.1 sF0.1 rB0.0 B0.0 ... O
//   rank 1: ...
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_SCHEDULEFILE_H
#define PP_RUNTIME_SCHEDULEFILE_H

#include "runtime/schedules/Schedule.h"

namespace pp::runtime {

/// A table and the layout it was written for.
struct ScheduleText {
  PipelineLayout layout;
  ScheduleTable table;
};

/// The text form of `table` on `layout`.
std::string formatScheduleFile(const ScheduleTable &table,
                               const PipelineLayout &layout);

/// Parses the text form. Throws std::runtime_error naming `fileName`, the
/// line and what is wrong ("schedule.txt:5: 'X0.1' is not an action; write
/// F, B, I, W or E, then stage.microbatch, ...").
ScheduleText parseScheduleFile(const std::string &text,
                               const std::string &fileName);

} // namespace pp::runtime

#endif // PP_RUNTIME_SCHEDULEFILE_H
