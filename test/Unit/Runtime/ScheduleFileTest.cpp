//===- ScheduleFileTest.cpp - schedules as text and as Gantt charts -------===//

#include "runtime/schedules/ScheduleFile.h"
#include "ScheduleTesting.h"
#include "runtime/schedules/ScheduleSvg.h"

#include <gtest/gtest.h>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

/// The message parseScheduleFile throws for `text`.
std::string parseError(const std::string &text) {
  try {
    parseScheduleFile(text, "schedule.txt");
  } catch (const std::runtime_error &error) {
    return error.what();
  }
  return "(parsed)";
}

const std::string kHeader =
    "pp-schedule 1\nranks 2\nstage-ranks 0 1\nmicrobatches 1\n";

TEST(ScheduleFile, RoundTripsEveryBuiltInSchedule) {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneForwardOneBackward,
        ScheduleKind::Interleaved1F1B, ScheduleKind::ZeroBubbleH1,
        ScheduleKind::ZeroBubbleV, ScheduleKind::Eval}) {
    PipelineLayout layout =
        layoutFor(kind, 3,
                  kind == ScheduleKind::OneForwardOneBackward ||
                          kind == ScheduleKind::ZeroBubbleH1
                      ? 1
                      : 2,
                  5);
    ScheduleTable table = buildSchedule(
        kind, layout, chainMessages(layout.stages()), needsSplitBackward(kind));
    std::string text = formatScheduleFile(table, layout);
    ScheduleText parsed = parseScheduleFile(text, "schedule.txt");
    EXPECT_EQ(parsed.table, table) << scheduleName(kind);
    EXPECT_EQ(parsed.layout.ranks, layout.ranks);
    EXPECT_EQ(parsed.layout.stageRanks, layout.stageRanks);
    EXPECT_EQ(parsed.layout.microbatches, layout.microbatches);
    EXPECT_EQ(formatScheduleFile(parsed.table, parsed.layout), text);
  }
}

TEST(ScheduleFile, RoundTripsDataParallelActions) {
  PipelineLayout layout = layoutFor(ScheduleKind::ZeroBubbleV, 2, 2, 2);
  ScheduleTable table = buildSchedule(ScheduleKind::ZeroBubbleV, layout,
                                      chainMessages(4), true);
  addDataParallelActions(table, layout, {2, 3});
  std::string text = formatScheduleFile(table, layout);
  EXPECT_NE(text.find("rank 0: gather0 "), std::string::npos) << text;
  EXPECT_NE(text.find(" reduce3 release3"), std::string::npos) << text;
  ScheduleText parsed = parseScheduleFile(text, "zero3.txt");
  EXPECT_EQ(parsed.table, table);
  Action reduce = parsed.table[0][0];
  EXPECT_EQ(reduce.kind, ActionKind::GatherParameters);
  EXPECT_EQ(reduce.stage, 0);
  EXPECT_EQ(reduce.microbatch, -1);
}

TEST(ScheduleFile, TheFormat) {
  PipelineLayout layout = layoutFor(ScheduleKind::GPipe, 2, 1, 1);
  ScheduleTable table =
      buildSchedule(ScheduleKind::GPipe, layout, chainMessages(2), false);
  EXPECT_EQ(formatScheduleFile(table, layout),
            "# A pipeline schedule (docs/schedules.md): each rank's actions "
            "in order.\n" +
                kHeader +
                "rank 0: F0.0 sF0.0 rB0.0 B0.0 O\n"
                "rank 1: rF1.0 F1.0 B1.0 sB1.0 O\n");
  // Comments, blank lines and spaces are free.
  ScheduleText parsed = parseScheduleFile(
      "\n# mine\n  pp-schedule 1 # version\nmicrobatches 1\nranks 2\n"
      "stage-ranks 0 1\nrank 0:   F0.0 sF0.0\trB0.0 B0.0 O\nrank 1:\n",
      "schedule.txt");
  EXPECT_EQ(formatActions(parsed.table[0]), "F0.0 sF0.0 rB0.0 B0.0 O");
  EXPECT_TRUE(parsed.table[1].empty());
}

TEST(ScheduleFile, ErrorsNameTheFileTheLineAndTheFix) {
  const std::pair<std::string, std::string> errors[] = {
      {kHeader + "rank 0: F0.0 X0.1\nrank 1:\n",
       "schedule.txt:5: 'X0.1' is not an action; write F, B, I, W or E, then "
       "stage.microbatch (F2.0), with s or r before it for a send or recv of "
       "its messages (sF2.0), O for the optimizer, reduce, gather or "
       "release and a stage (reduce2), or offload or reload and "
       "stage.microbatch (offload2.0)"},
      {kHeader + "rank 0: gather0 reduce\nrank 1:\n",
       "schedule.txt:5: '' is not a stage in 'reduce' (write reduce2 for "
       "stage 2) (a count, 0 to 999999999)"},
      {kHeader + "rank 0: release0.1\nrank 1:\n",
       "schedule.txt:5: '0.1' is not a stage in 'release0.1' (write "
       "release2 for stage 2) (a count, 0 to 999999999)"},
      {kHeader + "rank 0: F0.99999999999\nrank 1:\n",
       "schedule.txt:5: '99999999999' is not a microbatch in "
       "'F0.99999999999' (a count, 0 to 999999999)"},
      {"ranks 2\n", "schedule.txt:1: expected 'pp-schedule 1' first (the "
                    "format and its version), not 'ranks 2'"},
      {"pp-schedule 2\n", "schedule.txt:1: expected 'pp-schedule 1' first "
                          "(the format and its version), not 'pp-schedule "
                          "2'"},
      {"", "schedule.txt: no 'pp-schedule 1' header; is this a schedule?"},
      {kHeader + "ranks 3\n", "schedule.txt:5: 'ranks' is given twice"},
      {kHeader + "speed 3\n",
       "schedule.txt:5: unknown line 'speed 3'; expected ranks, stage-ranks, "
       "microbatches or 'rank R: actions'"},
      {kHeader + "rank 1: F1.0\n",
       "schedule.txt:5: 'rank 1:' where 'rank 0:' comes; list ranks 0..1 in "
       "order, once each"},
      {kHeader + "rank 0 F0.0\n",
       "schedule.txt:5: expected 'rank 0:' before the actions"},
      {kHeader + "rank 0:\n", "schedule.txt: lists ranks 0..1 of 0..1; give "
                              "a 'rank R:' line for every rank"},
      {kHeader + "rank 0:\nrank 1:\nrank 2:\n",
       "schedule.txt:7: 'rank 2:', but the pipeline has ranks 0..1"},
      {"pp-schedule 1\nranks 2\nstage-ranks 0 5\nmicrobatches 1\nrank 0:\n",
       "schedule.txt:5: stage 1 is placed on rank 5, but the pipeline has "
       "ranks 0..1"},
      {"pp-schedule 1\nranks 2\nrank 0:\n",
       "schedule.txt:3: no 'stage-ranks' line before the ranks' actions"},
      {"pp-schedule 1\nranks 2 3\n",
       "schedule.txt:2: 'ranks' takes one count, not 2"},
      {"pp-schedule 1\nranks -1\n",
       "schedule.txt:2: '-1' is not ranks (a count, 0 to 999999999)"},
  };
  for (const auto &[text, error] : errors)
    EXPECT_EQ(parseError(text), error) << text;
  for (const char *bad : {"F0", "sF", "F.1", "F0.", "Fa.1", "rO", "s"})
    EXPECT_EQ(parseError(kHeader + "rank 0: " + bad + "\nrank 1:\n")
                  .rfind("schedule.txt:5: '", 0),
              0u)
        << bad;
}

/// How often `part` occurs in `text`.
size_t occurrences(const std::string &text, const std::string &part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1))
    ++count;
  return count;
}

TEST(ScheduleSvg, DrawsABoxPerComputeAction) {
  PipelineLayout layout = layoutFor(ScheduleKind::ZeroBubbleV, 2, 2, 4);
  MessageGraph messages = chainMessages(4);
  ScheduleTable table =
      buildSchedule(ScheduleKind::ZeroBubbleV, layout, messages, true);
  StageCosts costs = StageCosts::uniform(4, 1e-3, 1e-3, 1e-3);
  costs.optimizerSeconds = 2e-4;
  SimulatedStep step = simulateSchedule(table, layout, messages, costs);
  std::string svg = renderScheduleSvg(step, layout, "zb-v <2 ranks> & more");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // Well formed: every element opened is closed.
  for (const char *tag : {"text", "g", "title"})
    EXPECT_EQ(occurrences(svg, std::string("<") + tag + ">") +
                  occurrences(svg, std::string("<") + tag + " "),
              occurrences(svg, std::string("</") + tag + ">"))
        << tag;
  EXPECT_EQ(occurrences(svg, "<rect"),
            occurrences(svg, "/>") - occurrences(svg, "<line"));
  // 4 stages x 4 microbatches x F, I, W, and an optimizer per rank.
  EXPECT_EQ(occurrences(svg, "class=\"action"), 4u * 4 * 3 + 2);
  EXPECT_EQ(occurrences(svg, "class=\"action W\""), 16u);
  EXPECT_EQ(occurrences(svg, "class=\"legend\""), 6u);
  EXPECT_NE(svg.find("zb-v &lt;2 ranks&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("predicted bubble"), std::string::npos);
  EXPECT_NE(svg.find(">rank 1</text>"), std::string::npos);
  EXPECT_NE(svg.find(">F3.0</text>"), std::string::npos);
}

TEST(ScheduleSvg, DrawsCollectivesInALaneUnderTheirRank) {
  PipelineLayout layout = layoutFor(ScheduleKind::OneForwardOneBackward, 2, 1,
                                    2);
  MessageGraph messages = chainMessages(2);
  ScheduleTable table = buildSchedule(ScheduleKind::OneForwardOneBackward,
                                      layout, messages, false);
  StageCosts costs = StageCosts::uniform(2, 1e-3, 1e-3, 1e-3);
  costs.parameterBytes = {1e6, 1e6};
  costs.trainableBytes = {1e6, 1e6};
  costs.dataParallel = {2, 3};
  costs.dataParallelBytesPerSecond = 1e9;
  addDataParallelActions(table, layout, costs.dataParallel);
  std::string svg = renderScheduleSvg(
      simulateSchedule(table, layout, messages, costs), layout, "zero-3");
  for (const char *kind : {"reduce", "gather", "release"})
    EXPECT_EQ(occurrences(svg, std::string("class=\"action ") + kind + "\""),
              2u)
        << kind;
  EXPECT_EQ(occurrences(svg, "class=\"legend\""), 9u);
  EXPECT_NE(svg.find("rank 0: gather s0, 0 s to 500 us"), std::string::npos)
      << svg;
}

} // namespace
