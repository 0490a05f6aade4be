//===- Schedule.cpp - pipeline schedules and their deadlock check ---------===//

#include "runtime/schedules/Schedule.h"

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
  auto forward = [&] { actions.push_back({Phase::Forward, forwards++}); };
  auto backward = [&] { actions.push_back({Phase::Backward, backwards++}); };
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

std::vector<Action> buildEvalSchedule(int64_t microbatches) {
  std::vector<Action> actions;
  for (int64_t microbatch = 0; microbatch < microbatches; ++microbatch)
    actions.push_back({Phase::Eval, microbatch});
  return actions;
}

std::string formatSchedule(const std::vector<Action> &actions) {
  std::string text;
  for (const Action &action : actions) {
    const char *letter = "F";
    if (action.phase == Phase::Backward)
      letter = "B";
    else if (action.phase == Phase::BackwardInput)
      letter = "I";
    else if (action.phase == Phase::BackwardWeight)
      letter = "W";
    else if (action.phase == Phase::Eval)
      letter = "E";
    text += (text.empty() ? "" : " ") + std::string(letter) +
            std::to_string(action.microbatch);
  }
  return text;
}

std::string checkDeadlockFree(const std::vector<std::vector<Action>> &schedules,
                              const MessageSources &sources) {
  size_t stages = schedules.size();
  std::vector<size_t> next(stages, 0);
  // done[stage][phase] = microbatches finished.
  std::vector<std::map<Phase, std::set<int64_t>>> done(stages);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t s = 0; s < stages; ++s) {
      while (next[s] < schedules[s].size()) {
        const Action &action = schedules[s][next[s]];
        auto from = sources[s].find(action.phase);
        bool ready =
            from == sources[s].end() ||
            std::all_of(
                from->second.begin(), from->second.end(), [&](int64_t t) {
                  return done[t][action.phase].count(action.microbatch) != 0;
                });
        if (!ready)
          break;
        done[s][action.phase].insert(action.microbatch);
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
               std::to_string(s) + " waits in " + phaseName(action.phase) +
               " of microbatch " + std::to_string(action.microbatch);
    }
  return stuck.empty() ? "" : "the schedule deadlocks: " + stuck;
}

} // namespace pp::runtime
