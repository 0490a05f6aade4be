//===- Phase.h - the phases of a stage's work -------------------*- C++ -*-===//

#ifndef PP_RUNTIME_PHASE_H
#define PP_RUNTIME_PHASE_H

#include <optional>
#include <string>

namespace pp::runtime {

/// What a stage function computes for a microbatch. A backward may come
/// split in two: the gradient of the stage's inputs (backward_input), which
/// the previous stage waits for, and of its parameters (backward_weight),
/// which may run later (zero-bubble schedules).
enum class Phase { Forward, Backward, BackwardInput, BackwardWeight };

/// The phase spelled `name` ("forward", "backward", "backward_input",
/// "backward_weight"), or nullopt.
std::optional<Phase> parsePhase(const std::string &name);
/// The manifest's spelling of `phase`.
const char *phaseName(Phase phase);

/// Whether a schedule action of phase `action` runs a stage function of
/// phase `function`: the same phase, or a backward action running both
/// halves of a split backward.
bool actionRuns(Phase action, Phase function);

} // namespace pp::runtime

#endif // PP_RUNTIME_PHASE_H
