//===- Trace.cpp - timed spans of a training run, per rank ----------------===//

#include "runtime/training/Trace.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

using namespace pp::runtime;
using nlohmann::json;

namespace {

/// The first bytes of serialize()'s output: the format and its version.
constexpr char kMagic[] = "pptrace1";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;

double steadyMicros() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <typename T> void append(std::string &bytes, T value) {
  bytes.append(reinterpret_cast<const char *>(&value), sizeof(value));
}

/// Reads serialize()'s fields in order, checking that each one is there.
class ByteReader {
public:
  explicit ByteReader(const std::string &bytes) : bytes(bytes) {}

  template <typename T> T read(const char *what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what), sizeof(T));
    return value;
  }
  std::string readString(size_t size, const char *what) {
    return std::string(take(size, what), size);
  }
  bool atEnd() const { return offset == bytes.size(); }

private:
  const char *take(size_t size, const char *what) {
    if (bytes.size() - offset < size)
      throw std::invalid_argument(
          "trace spans are truncated: " + std::to_string(bytes.size()) +
          " bytes end inside " + what + " at byte " + std::to_string(offset));
    const char *at = bytes.data() + offset;
    offset += size;
    return at;
  }

  const std::string &bytes;
  size_t offset = 0;
};

/// A time interval [start, end).
using Interval = std::pair<double, double>;

/// The union of `intervals` as sorted, disjoint intervals.
std::vector<Interval> unionOf(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval &interval : intervals) {
    if (interval.second <= interval.first)
      continue;
    if (!merged.empty() && interval.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, interval.second);
    else
      merged.push_back(interval);
  }
  return merged;
}

double lengthOf(const std::vector<Interval> &disjoint) {
  double total = 0;
  for (const Interval &interval : disjoint)
    total += interval.second - interval.first;
  return total;
}

/// The length of the overlap of two sorted, disjoint interval lists.
double overlap(const std::vector<Interval> &a, const std::vector<Interval> &b) {
  double total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    double start = std::max(a[i].first, b[j].first);
    double end = std::min(a[i].second, b[j].second);
    if (end > start)
      total += end - start;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return total;
}

/// One step of one rank: where its compute spans lie.
struct StepOfRank {
  std::vector<Interval> compute;
  double first = std::numeric_limits<double>::infinity();
  double last = -std::numeric_limits<double>::infinity();
};

} // namespace

bool pp::runtime::isComputeSpan(const std::string &name) {
  return name == "F" || name == "B" || name == "I" || name == "W" ||
         name == "E";
}

double TraceRecorder::now() const { return steadyMicros(); }

void TraceRecorder::add(TraceSpan span) {
  std::lock_guard<std::mutex> lock(mutex);
  recorded.push_back(std::move(span));
}

std::vector<TraceSpan> TraceRecorder::spans() const {
  std::lock_guard<std::mutex> lock(mutex);
  return recorded;
}

std::string TraceRecorder::serialize(double clockAhead) const {
  std::lock_guard<std::mutex> lock(mutex);
  std::string bytes(kMagic, kMagicSize);
  append<uint64_t>(bytes, recorded.size());
  for (const TraceSpan &span : recorded) {
    append<uint32_t>(bytes, span.name.size());
    bytes += span.name;
    append(bytes, span.step);
    append(bytes, span.stage);
    append(bytes, span.microbatch);
    append(bytes, span.startMicros - clockAhead);
    append(bytes, span.endMicros - clockAhead);
  }
  return bytes;
}

std::vector<TraceSpan>
pp::runtime::deserializeTraceSpans(const std::string &bytes) {
  if (bytes.compare(0, kMagicSize, kMagic) != 0)
    throw std::invalid_argument(
        "trace spans do not start with '" + std::string(kMagic) +
        "': they come from another format or another pp version");
  ByteReader reader(bytes);
  reader.readString(kMagicSize, "the format");
  auto count = reader.read<uint64_t>("the span count");
  std::vector<TraceSpan> spans;
  for (uint64_t i = 0; i < count; ++i) {
    TraceSpan span;
    auto nameSize = reader.read<uint32_t>("a span's name size");
    span.name = reader.readString(nameSize, "a span's name");
    span.step = reader.read<int64_t>("a span's step");
    span.stage = reader.read<int64_t>("a span's stage");
    span.microbatch = reader.read<int64_t>("a span's microbatch");
    span.startMicros = reader.read<double>("a span's start");
    span.endMicros = reader.read<double>("a span's end");
    spans.push_back(std::move(span));
  }
  if (!reader.atEnd())
    throw std::invalid_argument("trace spans have bytes after their " +
                                std::to_string(count) + " spans");
  return spans;
}

TraceScope::TraceScope(TraceRecorder *recorder, const char *name,
                       int64_t step, int64_t stage, int64_t microbatch)
    : recorder(recorder), name(name), step(step), stage(stage),
      microbatch(microbatch) {
  if (recorder)
    startMicros = recorder->now();
}

TraceScope::~TraceScope() {
  if (recorder)
    recorder->add({name, step, stage, microbatch, startMicros, recorder->now()});
}

std::string
pp::runtime::chromeTraceJson(const std::vector<std::vector<TraceSpan>> &perRank,
                             const std::vector<std::string> &rankLabels) {
  if (rankLabels.size() != perRank.size())
    throw std::invalid_argument(
        "a trace of " + std::to_string(perRank.size()) + " ranks needs as "
        "many rank labels, not " + std::to_string(rankLabels.size()));
  double origin = std::numeric_limits<double>::infinity();
  for (const std::vector<TraceSpan> &spans : perRank)
    for (const TraceSpan &span : spans)
      origin = std::min(origin, span.startMicros);

  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0},
                    {"args", {{"name", "pp training"}}}});
  for (size_t rank = 0; rank < perRank.size(); ++rank) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0},
                      {"tid", rank}, {"args", {{"name", rankLabels[rank]}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0},
                      {"tid", rank}, {"args", {{"sort_index", rank}}}});
    for (const TraceSpan &span : perRank[rank]) {
      bool compute = isComputeSpan(span.name);
      json args = {{"step", span.step}};
      if (span.stage >= 0)
        args["stage"] = span.stage;
      if (span.microbatch >= 0)
        args["microbatch"] = span.microbatch;
      std::string name = span.name;
      if (compute && span.microbatch >= 0)
        name += std::to_string(span.microbatch);
      events.push_back({{"name", name},
                        {"cat", compute ? "compute" : span.name},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", rank},
                        {"ts", span.startMicros - origin},
                        {"dur", span.endMicros - span.startMicros},
                        {"args", std::move(args)}});
    }
  }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}
      .dump();
}

double
pp::runtime::measuredBubble(const std::vector<std::vector<TraceSpan>> &perRank,
                            const std::vector<int64_t> &pipelineRanks) {
  // Per step, per pipeline rank: its compute intervals.
  std::map<int64_t, std::vector<StepOfRank>> steps;
  std::vector<std::vector<Interval>> waits(pipelineRanks.size());
  for (size_t i = 0; i < pipelineRanks.size(); ++i) {
    int64_t rank = pipelineRanks[i];
    if (rank < 0 || rank >= static_cast<int64_t>(perRank.size()))
      throw std::invalid_argument(
          "the measured bubble's pipeline names rank " + std::to_string(rank) +
          ", but the trace has ranks 0 to " +
          std::to_string(static_cast<int64_t>(perRank.size()) - 1));
    for (const TraceSpan &span : perRank[rank]) {
      Interval interval{span.startMicros, span.endMicros};
      if (span.name == "send" || span.name == "recv") {
        waits[i].push_back(interval);
        continue;
      }
      if (!isComputeSpan(span.name))
        continue;
      std::vector<StepOfRank> &ranks = steps[span.step];
      ranks.resize(pipelineRanks.size());
      ranks[i].compute.push_back(interval);
      ranks[i].first = std::min(ranks[i].first, span.startMicros);
      ranks[i].last = std::max(ranks[i].last, span.endMicros);
    }
  }
  if (steps.empty())
    throw std::invalid_argument(
        "the trace has no compute span (F, B, I, W or E) on the pipeline's "
        "ranks: nothing to measure a bubble of");
  for (std::vector<Interval> &intervals : waits)
    intervals = unionOf(std::move(intervals));

  double total = 0;
  int64_t counted = 0;
  auto step = steps.begin();
  if (steps.size() > 1)
    ++step; // the first step warms up
  for (; step != steps.end(); ++step) {
    double first = std::numeric_limits<double>::infinity();
    double last = -first, compute = 0;
    for (size_t i = 0; i < step->second.size(); ++i) {
      const StepOfRank &rank = step->second[i];
      first = std::min(first, rank.first);
      last = std::max(last, rank.last);
      std::vector<Interval> busy = unionOf(rank.compute);
      compute += lengthOf(busy) - overlap(busy, waits[i]);
    }
    double window = last - first;
    if (window <= 0)
      continue;
    total += 1 - compute / (static_cast<double>(pipelineRanks.size()) * window);
    ++counted;
  }
  if (counted == 0)
    throw std::invalid_argument("the trace's compute spans all take no time: "
                                "nothing to measure a bubble of");
  return total / static_cast<double>(counted);
}
