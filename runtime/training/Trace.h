//===- Trace.h - timed spans of a training run, per rank --------*- C++ -*-===//
//
// pp-run --trace FILE: every rank records what it did when (a forward or
// backward of a microbatch, a send, a receive, an all-reduce, the optimizer
// step) as spans; rank 0 gathers them (serialize/deserialize) and writes one
// Chrome trace (chromeTraceJson) with a track per rank, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. measuredBubble turns the
// spans into the pipeline's idle fraction, next to the schedule's
// predicted one.
//
// Times are microseconds of std::chrono::steady_clock, which on Linux is
// CLOCK_MONOTONIC: every process of one host reads the same clock, so the
// spans of the ranks of one host line up exactly. Hosts' clocks differ by
// an arbitrary offset, which rank 0 measures before it merges the spans
// (ClockOffsets.h) and takes off each rank's.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRACE_H
#define PP_RUNTIME_TRACE_H

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace pp::runtime {

/// One timed piece of a rank's work. `name` is an action of the schedule
/// ("F" forward, "B" backward, "I" backward_input, "W" backward_weight, "E"
/// eval: the compute spans) or "send", "recv", "all-reduce", "optimizer".
/// `stage` is the model chunk and `microbatch` the microbatch it concerns,
/// -1 where none does (the optimizer, the gradient all-reduce).
struct TraceSpan {
  std::string name;
  int64_t step = 0;
  int64_t stage = -1;
  int64_t microbatch = -1;
  double startMicros = 0;
  double endMicros = 0;
};

/// Whether `name` is a compute span's: F, B, I, W or E.
bool isComputeSpan(const std::string &name);

/// The spans of one rank. add() may be called from several threads.
class TraceRecorder {
public:
  /// Microseconds of the steady clock (since boot, on Linux).
  double now() const;

  void add(TraceSpan span);
  /// The spans so far, in the order they were added.
  std::vector<TraceSpan> spans() const;

  /// The spans as bytes (host byte order) for an exchange between ranks of
  /// one kind of machine, their times on a clock `clockAhead` microseconds
  /// behind this one's; deserializeTraceSpans reads them back.
  std::string serialize(double clockAhead = 0) const;

private:
  mutable std::mutex mutex;
  std::vector<TraceSpan> recorded;
};

/// The spans serialize() wrote. Throws std::invalid_argument naming what is
/// wrong with bytes it did not write (another format, truncated data).
std::vector<TraceSpan> deserializeTraceSpans(const std::string &bytes);

/// Records one span from its construction to its destruction; does nothing
/// without a recorder (tracing off). `name` must outlive the scope (a
/// literal).
class TraceScope {
public:
  TraceScope(TraceRecorder *recorder, const char *name, int64_t step,
             int64_t stage = -1, int64_t microbatch = -1);
  ~TraceScope();
  TraceScope(const TraceScope &) = delete;
  TraceScope &operator=(const TraceScope &) = delete;

private:
  TraceRecorder *recorder;
  const char *name;
  int64_t step, stage, microbatch;
  double startMicros = 0;
};

/// A Chrome trace (the JSON object format's "traceEvents") of the spans of
/// every rank: one thread per rank (pid 0, tid = rank) named
/// `rankLabels[rank]` ("rank 0 (pp0,dp0)": its mesh coordinates), each span
/// a complete ("X") event with its step, stage and microbatch as args. Compute spans are
/// named by action and microbatch ("F3"), the others by their name. Times
/// start at the earliest span of all ranks. Throws std::invalid_argument
/// when the labels do not match the ranks.
std::string
chromeTraceJson(const std::vector<std::vector<TraceSpan>> &perRank,
                const std::vector<std::string> &rankLabels);

/// The measured bubble of the pipeline made of the ranks `pipelineRanks`
/// (indices into perRank): per step, the window runs from the first
/// compute span's start to the last one's end over these ranks, each
/// rank's compute time is the time its compute spans cover minus the time
/// spent in send and recv spans inside them (waiting for a peer is not
/// compute), and the bubble is 1 - (sum of the compute times) / (ranks x
/// window). Returns the mean over the steps, leaving out the first one
/// (it warms up) when there are several. Throws std::invalid_argument for
/// an index outside perRank or when these ranks recorded no compute span.
double measuredBubble(const std::vector<std::vector<TraceSpan>> &perRank,
                      const std::vector<int64_t> &pipelineRanks);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRACE_H
