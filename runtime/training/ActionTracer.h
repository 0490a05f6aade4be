//===- ActionTracer.h - the trace spans of a rank's actions -----*- C++ -*-===//

#ifndef PP_RUNTIME_TRAINING_ACTIONTRACER_H
#define PP_RUNTIME_TRAINING_ACTIONTRACER_H

#include "runtime/schedules/Schedule.h"
#include "runtime/training/Trace.h"

#include <cstdint>
#include <memory>

namespace pp::runtime {

/// Records, with --trace, a span per action of the training steps (not of
/// evaluations) on the rank's TraceRecorder; does nothing without.
class ActionTracer {
public:
  explicit ActionTracer(bool enabled)
      : recorder(enabled ? std::make_unique<TraceRecorder>() : nullptr) {}

  /// The recorder, or null without --trace.
  TraceRecorder *spans() const { return recorder.get(); }
  /// The clock spans are measured on (0 without --trace).
  double now() const { return recorder ? recorder->now() : 0; }
  /// Records `name` for `action` from `start` to now.
  void span(const char *name, const Action &action, double start) {
    if (recorder && !evaluating)
      recorder->add({name, step, action.stage, action.microbatch, start,
                     recorder->now()});
  }
  /// The training step the spans belong to.
  void beginStep(int64_t index) { step = index; }
  /// Evaluations between beginEval and endEval leave no spans.
  void beginEval() { evaluating = true; }
  void endEval() { evaluating = false; }

private:
  std::unique_ptr<TraceRecorder> recorder;
  int64_t step = 0;
  bool evaluating = false;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_ACTIONTRACER_H
