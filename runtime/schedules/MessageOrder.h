//===- MessageOrder.h - whether ranks take messages as they are sent -*- C++ -*-===//
//
// A transport that pairs the messages of a stream in order (NCCL's
// point-to-point calls carry no tag: on a link the k-th receive takes the
// k-th send) runs a table only when every stream's messages are taken in
// the order they are sent. A stream is the messages of one class (Forward,
// Eval or Backward) from one stage to one stage on another rank. The CPU
// transport pairs messages by name and needs no such order.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_MESSAGEORDER_H
#define PP_RUNTIME_MESSAGEORDER_H

#include "runtime/schedules/Schedule.h"

#include <string>

namespace pp::runtime {

/// Why `table` on `layout` cannot run over a transport that pairs the
/// messages of a stream in order ("" when it can): for every stream from a
/// stage on rank A to a stage on rank B, the microbatches of A's Sends, in
/// A's row order, must be those of B's compute actions that take the
/// stream, in B's row order. A table whose stages run each class of
/// actions in increasing microbatch order keeps every stream's order. The
/// problem names both ranks and the first message where the orders part.
/// Requires checkSchedule() == "".
std::string messageOrderProblem(const ScheduleTable &table,
                                const PipelineLayout &layout,
                                const MessageGraph &messages);

} // namespace pp::runtime

#endif // PP_RUNTIME_MESSAGEORDER_H
