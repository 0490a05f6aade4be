//===- Schedule.h - pipeline schedules and their deadlock check -*- C++ -*-===//

#ifndef PP_RUNTIME_SCHEDULE_H
#define PP_RUNTIME_SCHEDULE_H

#include "runtime/schedules/Phase.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pp::runtime {

enum class ScheduleKind { GPipe, OneForwardOneBackward };

/// "gpipe" or "1f1b".
std::optional<ScheduleKind> parseScheduleKind(const std::string &name);

/// One step of a stage's schedule: a phase of a microbatch (it runs the
/// stage functions actionRuns() matches).
struct Action {
  Phase phase = Phase::Forward;
  int64_t microbatch = 0;
};

/// The actions of `stage` in one training step. GPipe runs every forward,
/// then every backward; 1F1B runs `numStages - stage - 1` warm-up forwards,
/// then alternates one forward and one backward, then drains the backwards.
/// Both run backwards in microbatch order, so gradients accumulate in the
/// same order whatever the schedule and stage count.
std::vector<Action> buildSchedule(ScheduleKind kind, int64_t numStages,
                                  int64_t stage, int64_t microbatches);

/// The actions of every stage in one evaluation: the eval function of each
/// microbatch in order. Nothing is kept between them, so no schedule
/// interleaves anything else.
std::vector<Action> buildEvalSchedule(int64_t microbatches);

/// "F0 F1 B0 ...": a stage's actions in order, each a phase (F forward, B
/// backward, I backward_input, W backward_weight, E eval) and a microbatch.
std::string formatSchedule(const std::vector<Action> &actions);

/// The stages each stage receives from, per action phase: an action of
/// phase P on stage s waits for the actions of phase P (same microbatch) of
/// the stages in sources[s][P].
using MessageSources = std::vector<std::map<Phase, std::set<int64_t>>>;

/// Runs every stage's schedule against blocking receives (sends never
/// block). Returns "" when all stages finish, else which actions wait on
/// each other.
std::string checkDeadlockFree(const std::vector<std::vector<Action>> &schedules,
                              const MessageSources &sources);

} // namespace pp::runtime

#endif // PP_RUNTIME_SCHEDULE_H
