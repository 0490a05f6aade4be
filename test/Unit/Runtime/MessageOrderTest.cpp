//===- MessageOrderTest.cpp - tables over a transport that pairs in order -===//

#include "runtime/schedules/MessageOrder.h"
#include "ScheduleTesting.h"
#include "runtime/schedules/ScheduleFile.h"

#include <gtest/gtest.h>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

TEST(MessageOrder, EveryBuiltInScheduleTakesMessagesAsTheyAreSent) {
  for (const BuiltTable &built : builtInTables())
    EXPECT_EQ(messageOrderProblem(built.table, built.layout, built.messages),
              "")
        << built.label;
}

TEST(MessageOrder, NamesTheFirstMessageTakenOutOfOrder) {
  // Stage 0 takes microbatch 1's input gradient first: valid where
  // messages are paired by name, not where the k-th receive of a stream
  // takes its k-th send.
  ScheduleText file = parseScheduleFile(
      "pp-schedule 1\nranks 2\nstage-ranks 0 1\nmicrobatches 2\n"
      "rank 0: F0.0 sF0.0 F0.1 sF0.1 rI0.1 I0.1 rI0.0 I0.0 W0.0 W0.1 O\n"
      "rank 1: rF1.0 F1.0 rF1.1 F1.1 I1.0 sI1.0 I1.1 sI1.1 W1.0 W1.1 O\n",
      "test");
  PipelineLayout layout = layoutFor(ScheduleKind::ZeroBubbleH1, 2, 1, 2);
  MessageGraph messages = chainMessages(2);
  ASSERT_EQ(checkSchedule(file.table, layout, messages, /*splitBackward=*/true),
            "");
  EXPECT_EQ(messageOrderProblem(file.table, layout, messages),
            "rank 1 sends the message of B s1 m0 to stage 0 as message 0 of "
            "its stream to rank 0, which takes the message of B s1 m1 to "
            "stage 0 there: a stream's messages must be taken in the order "
            "they are sent (the GPU transport pairs them in order); reorder "
            "the table's Sends or compute actions, or use --device cpu");
}

} // namespace
