//===- Phase.h - the phases of a stage's work -------------------*- C++ -*-===//

#ifndef PP_RUNTIME_PHASE_H
#define PP_RUNTIME_PHASE_H

#include <optional>
#include <string>

namespace pp::runtime {

/// What a stage function computes for a microbatch. A backward may come
/// split in two: the gradient of the stage's inputs (backward_input), which
/// the previous stage waits for, and of its parameters (backward_weight),
/// which may run later (zero-bubble schedules). Eval is a training
/// package's forward that keeps nothing for a backward: the loss of
/// held-out data (pp-derive-eval); it runs in eval schedules only.
enum class Phase { Forward, Backward, BackwardInput, BackwardWeight, Eval };

/// The phase spelled `name` ("forward", "backward", "backward_input",
/// "backward_weight", "eval"), or nullopt.
std::optional<Phase> parsePhase(const std::string &name);
/// The manifest's spelling of `phase`.
const char *phaseName(Phase phase);

/// Whether a schedule action of phase `action` runs a stage function of
/// phase `function`: the same phase, or a backward action running both
/// halves of a split backward. An eval action runs the eval function only,
/// and no training action runs it.
bool actionRuns(Phase action, Phase function);

} // namespace pp::runtime

#endif // PP_RUNTIME_PHASE_H
