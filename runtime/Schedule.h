//===- Schedule.h - pipeline schedules and their deadlock check -*- C++ -*-===//

#ifndef PP_RUNTIME_SCHEDULE_H
#define PP_RUNTIME_SCHEDULE_H

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pp::runtime {

enum class ScheduleKind { GPipe, OneForwardOneBackward };

/// "gpipe" or "1f1b".
std::optional<ScheduleKind> parseScheduleKind(const std::string &name);

/// One step of a stage's schedule: the forward or backward of a microbatch.
struct Action {
  bool backward = false;
  int64_t microbatch = 0;
};

/// The actions of `stage` in one training step. GPipe runs every forward,
/// then every backward; 1F1B runs `numStages - stage - 1` warm-up forwards,
/// then alternates one forward and one backward, then drains the backwards.
/// Both run backwards in microbatch order, so gradients accumulate in the
/// same order whatever the schedule and stage count.
std::vector<Action> buildSchedule(ScheduleKind kind, int64_t numStages,
                                  int64_t stage, int64_t microbatches);

/// "F0 F1 B0 ...": a stage's actions, forward (F) or backward (B) of each
/// microbatch, in order.
std::string formatSchedule(const std::vector<Action> &actions);

/// Runs every stage's schedule against blocking receives: the forward of a
/// microbatch waits for the forwards of the stages in `forwardSources`, a
/// backward for the backwards of `backwardSources`. Returns "" when all
/// stages finish, else which actions wait on each other.
std::string
checkDeadlockFree(const std::vector<std::vector<Action>> &schedules,
                  const std::vector<std::set<int64_t>> &forwardSources,
                  const std::vector<std::set<int64_t>> &backwardSources);

} // namespace pp::runtime

#endif // PP_RUNTIME_SCHEDULE_H
