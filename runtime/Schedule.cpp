//===- Schedule.cpp - pipeline schedules and their deadlock check ---------===//

#include "runtime/Schedule.h"

#include <algorithm>

namespace pp::runtime {

std::optional<ScheduleKind> parseScheduleKind(const std::string &name) {
  if (name == "gpipe")
    return ScheduleKind::GPipe;
  if (name == "1f1b")
    return ScheduleKind::OneForwardOneBackward;
  return std::nullopt;
}

std::vector<Action> buildSchedule(ScheduleKind kind, int64_t numStages,
                                  int64_t stage, int64_t microbatches) {
  std::vector<Action> actions;
  int64_t forwards = 0, backwards = 0;
  auto forward = [&] { actions.push_back({false, forwards++}); };
  auto backward = [&] { actions.push_back({true, backwards++}); };
  if (kind == ScheduleKind::GPipe) {
    while (forwards < microbatches)
      forward();
  } else {
    int64_t warmup = std::min(numStages - stage - 1, microbatches);
    while (forwards < warmup)
      forward();
    while (forwards < microbatches) {
      forward();
      backward();
    }
  }
  while (backwards < microbatches)
    backward();
  return actions;
}

std::string formatSchedule(const std::vector<Action> &actions) {
  std::string text;
  for (const Action &action : actions)
    text += (text.empty() ? "" : " ") +
            std::string(action.backward ? "B" : "F") +
            std::to_string(action.microbatch);
  return text;
}

std::string
checkDeadlockFree(const std::vector<std::vector<Action>> &schedules,
                  const std::vector<std::set<int64_t>> &forwardSources,
                  const std::vector<std::set<int64_t>> &backwardSources) {
  size_t stages = schedules.size();
  std::vector<size_t> next(stages, 0);
  // done[phase][stage] = microbatches finished, in order.
  std::vector<std::set<int64_t>> doneForward(stages), doneBackward(stages);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t s = 0; s < stages; ++s) {
      while (next[s] < schedules[s].size()) {
        const Action &action = schedules[s][next[s]];
        const auto &sources =
            action.backward ? backwardSources[s] : forwardSources[s];
        const auto &done = action.backward ? doneBackward : doneForward;
        bool ready =
            std::all_of(sources.begin(), sources.end(), [&](int64_t t) {
              return done[t].count(action.microbatch) != 0;
            });
        if (!ready)
          break;
        (action.backward ? doneBackward : doneForward)[s].insert(
            action.microbatch);
        ++next[s];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (size_t s = 0; s < stages; ++s)
    if (next[s] < schedules[s].size()) {
      const Action &action = schedules[s][next[s]];
      stuck += (stuck.empty() ? "" : ", ") + std::string("stage ") +
               std::to_string(s) + " waits in " +
               (action.backward ? "backward" : "forward") + " of microbatch " +
               std::to_string(action.microbatch);
    }
  return stuck.empty() ? "" : "the schedule deadlocks: " + stuck;
}

} // namespace pp::runtime
