//===- TraceTest.cpp - trace spans, Chrome trace and measured bubble ------===//

#include "runtime/training/Trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <tuple>

using namespace pp::runtime;
using nlohmann::json;

namespace {

TraceSpan span(const std::string &name, int64_t step, int64_t stage,
               int64_t microbatch, double start, double end) {
  return {name, step, stage, microbatch, start, end};
}

/// One action of a synthetic pipeline: forward or backward of a
/// microbatch.
struct SyntheticAction {
  bool forward;
  int64_t microbatch;
};

/// 1F1B's order on `stage` of `stages`: warm-up forwards, then one forward
/// and one backward alternating, then the remaining backwards.
std::vector<SyntheticAction> oneForwardOneBackward(int64_t stages,
                                                   int64_t stage,
                                                   int64_t microbatches) {
  int64_t warmUp = std::min(stages - stage - 1, microbatches);
  std::vector<SyntheticAction> actions;
  for (int64_t m = 0; m < warmUp; ++m)
    actions.push_back({true, m});
  for (int64_t m = 0; m < microbatches - warmUp; ++m) {
    actions.push_back({true, warmUp + m});
    actions.push_back({false, m});
  }
  for (int64_t m = microbatches - warmUp; m < microbatches; ++m)
    actions.push_back({false, m});
  return actions;
}

/// The timeline of one 1F1B step with one stage per rank, every forward
/// taking `forward` and every backward `backward` microseconds: each action
/// starts when its rank is free and its input has arrived (a forward needs
/// the previous stage's forward, a backward the next stage's backward).
/// Appends the spans of step `step`, starting at `start`, to `perRank`.
void simulateOneForwardOneBackward(std::vector<std::vector<TraceSpan>> &perRank,
                                   int64_t microbatches, double forward,
                                   double backward, int64_t step,
                                   double start) {
  int64_t stages = static_cast<int64_t>(perRank.size());
  std::vector<std::vector<SyntheticAction>> orders;
  for (int64_t s = 0; s < stages; ++s)
    orders.push_back(oneForwardOneBackward(stages, s, microbatches));
  std::map<std::tuple<bool, int64_t, int64_t>, double> ends;
  std::vector<size_t> next(stages, 0);
  std::vector<double> free(stages, start);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < stages; ++s) {
      if (next[s] == orders[s].size())
        continue;
      SyntheticAction action = orders[s][next[s]];
      int64_t from = action.forward ? s - 1 : s + 1;
      double ready = free[s];
      if (from >= 0 && from < stages) {
        auto input = ends.find({action.forward, from, action.microbatch});
        if (input == ends.end())
          continue;
        ready = std::max(ready, input->second);
      }
      double end = ready + (action.forward ? forward : backward);
      ends[{action.forward, s, action.microbatch}] = end;
      perRank[s].push_back(span(action.forward ? "F" : "B", step, s,
                                action.microbatch, ready, end));
      free[s] = end;
      ++next[s];
      progress = true;
    }
  }
}

TEST(Trace, ChromeTraceHasOneThreadPerRankAndEverySpan) {
  std::vector<std::vector<TraceSpan>> perRank = {
      {span("F", 0, 0, 0, 1000, 1010), span("send", 0, 0, 0, 1010, 1011),
       span("optimizer", 0, -1, -1, 1050, 1060)},
      {span("recv", 0, 1, 0, 1005, 1011), span("F", 0, 1, 0, 1011, 1020),
       span("all-reduce", 0, -1, -1, 1040, 1045)}};
  json trace = json::parse(
      chromeTraceJson(perRank, {"rank 0 (stage 0)", "rank 1 (stage 1)"}));

  std::map<int64_t, std::string> threadNames;
  std::map<int64_t, std::vector<json>> events;
  for (const json &event : trace.at("traceEvents")) {
    EXPECT_EQ(event.at("pid"), 0);
    if (event.at("ph") == "M" && event.at("name") == "thread_name")
      threadNames[event.at("tid")] = event.at("args").at("name");
    if (event.at("ph") == "X")
      events[event.at("tid")].push_back(event);
  }
  EXPECT_EQ(threadNames, (std::map<int64_t, std::string>{
                             {0, "rank 0 (stage 0)"}, {1, "rank 1 (stage 1)"}}));
  ASSERT_EQ(events[0].size(), 3u);
  ASSERT_EQ(events[1].size(), 3u);

  // Times start at the earliest span; compute spans carry their microbatch
  // in the name, every span its step, stage and microbatch in args.
  const json &forward = events[1][1];
  EXPECT_EQ(forward.at("name"), "F0");
  EXPECT_EQ(forward.at("cat"), "compute");
  EXPECT_DOUBLE_EQ(forward.at("ts").get<double>(), 11);
  EXPECT_DOUBLE_EQ(forward.at("dur").get<double>(), 9);
  EXPECT_EQ(forward.at("args"),
            (json{{"step", 0}, {"stage", 1}, {"microbatch", 0}}));
  EXPECT_DOUBLE_EQ(events[0][0].at("ts").get<double>(), 0);
  EXPECT_EQ(events[0][1].at("name"), "send");
  EXPECT_EQ(events[0][2].at("name"), "optimizer");
  EXPECT_EQ(events[0][2].at("args"), (json{{"step", 0}}));
  EXPECT_EQ(events[1][2].at("name"), "all-reduce");
}

TEST(Trace, ChromeTraceNeedsALabelPerRank) {
  try {
    chromeTraceJson({{}, {}}, {"rank 0"});
    FAIL() << "one label for two ranks was accepted";
  } catch (const std::invalid_argument &error) {
    EXPECT_STREQ(error.what(),
                 "a trace of 2 ranks needs as many rank labels, not 1");
  }
}

TEST(Trace, SerializedSpansReadBackTheSame) {
  TraceRecorder recorder;
  recorder.add(span("F", 3, 1, 7, 12.5, 20.25));
  recorder.add(span("all-reduce", 3, -1, -1, 30, 41.125));
  recorder.add(span("", 0, 0, 0, 0, 0));
  std::vector<TraceSpan> read = deserializeTraceSpans(recorder.serialize());
  std::vector<TraceSpan> written = recorder.spans();
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].name, written[i].name);
    EXPECT_EQ(read[i].step, written[i].step);
    EXPECT_EQ(read[i].stage, written[i].stage);
    EXPECT_EQ(read[i].microbatch, written[i].microbatch);
    EXPECT_EQ(read[i].startMicros, written[i].startMicros);
    EXPECT_EQ(read[i].endMicros, written[i].endMicros);
  }
  EXPECT_TRUE(deserializeTraceSpans(TraceRecorder().serialize()).empty());
}

TEST(Trace, DeserializeNamesWhatIsWrong) {
  TraceRecorder recorder;
  recorder.add(span("F", 0, 0, 0, 1, 2));
  std::string bytes = recorder.serialize();
  EXPECT_THROW(
      {
        try {
          deserializeTraceSpans(bytes.substr(0, bytes.size() - 3));
        } catch (const std::invalid_argument &error) {
          EXPECT_NE(std::string(error.what()).find("truncated"),
                    std::string::npos)
              << error.what();
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_THROW(deserializeTraceSpans("not a trace"), std::invalid_argument);
  EXPECT_THROW(deserializeTraceSpans(bytes + "x"), std::invalid_argument);
}

TEST(Trace, ScopeRecordsItsSpanAndNothingWithoutARecorder) {
  TraceRecorder recorder;
  double before = recorder.now();
  { TraceScope scope(&recorder, "W", 2, 1, 5); }
  { TraceScope scope(nullptr, "W", 2, 1, 5); }
  std::vector<TraceSpan> spans = recorder.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].name, "W");
  EXPECT_EQ(spans[0].step, 2);
  EXPECT_EQ(spans[0].stage, 1);
  EXPECT_EQ(spans[0].microbatch, 5);
  EXPECT_LE(before, spans[0].startMicros);
  EXPECT_LE(spans[0].startMicros, spans[0].endMicros);
}

TEST(Trace, MeasuredBubbleOfOneForwardOneBackwardIsTheFormula) {
  for (auto [stages, microbatches] :
       {std::pair<int64_t, int64_t>{2, 4}, {3, 5}, {4, 8}, {4, 2}}) {
    std::vector<std::vector<TraceSpan>> perRank(stages);
    // Step 0 warms up slowly and unevenly; the bubble leaves it out.
    simulateOneForwardOneBackward(perRank, microbatches, 7, 3, 0, 0);
    simulateOneForwardOneBackward(perRank, microbatches, 10, 20, 1, 1e4);
    simulateOneForwardOneBackward(perRank, microbatches, 10, 20, 2, 2e4);
    std::vector<int64_t> ranks(stages);
    for (int64_t r = 0; r < stages; ++r)
      ranks[r] = r;
    double expected = static_cast<double>(stages - 1) /
                      static_cast<double>(microbatches + stages - 1);
    EXPECT_NEAR(measuredBubble(perRank, ranks), expected, 1e-12)
        << stages << " stages, " << microbatches << " microbatches";
  }
}

TEST(Trace, MeasuredBubbleCountsWaitsInsideComputeAsIdle) {
  // One step (not left out): rank 0 computes 10 us, 4 of them waiting in a
  // receive; rank 1 computes 5 of the 10 us window.
  std::vector<std::vector<TraceSpan>> perRank = {
      {span("F", 0, 0, 0, 0, 10), span("recv", 0, 0, 0, 2, 6),
       span("optimizer", 0, -1, -1, 10, 30)},
      {span("B", 0, 1, 0, 5, 10), span("all-reduce", 0, -1, -1, 10, 40)}};
  EXPECT_NEAR(measuredBubble(perRank, {0, 1}), 1 - (6.0 + 5.0) / 20.0, 1e-12);
  // A pipeline of rank 1 alone: busy all its window.
  EXPECT_NEAR(measuredBubble(perRank, {1}), 0.0, 1e-12);
}

TEST(Trace, MeasuredBubbleNeedsRanksWithComputeSpans) {
  std::vector<std::vector<TraceSpan>> perRank = {
      {span("optimizer", 0, -1, -1, 0, 1)}};
  EXPECT_THROW(measuredBubble(perRank, {0}), std::invalid_argument);
  EXPECT_THROW(measuredBubble(perRank, {1}), std::invalid_argument);
}

} // namespace
