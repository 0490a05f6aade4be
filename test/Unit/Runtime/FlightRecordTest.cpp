//===- FlightRecordTest.cpp - a rank's last exchanges ---------------------===//

#include "runtime/communication/FlightRecord.h"

#include <gtest/gtest.h>

using namespace pp::runtime;

namespace {

TEST(FlightRecord, KeepsTheLastEventsOldestFirst) {
  for (int i = 0; i < 60; ++i)
    recordFlight("send to", i % 4, static_cast<size_t>(i));
  std::vector<FlightEvent> events = flightRecord();
  ASSERT_EQ(events.size(), kFlightEvents);
  EXPECT_EQ(events.front().bytes, 60 - kFlightEvents);
  EXPECT_EQ(events.back().bytes, 59u);
  EXPECT_EQ(events.back().peer, 3);
  for (size_t i = 1; i < events.size(); ++i)
    EXPECT_LE(events[i - 1].at, events[i].at);
  recordFlight("F0.3", -1, 0);
  std::string text = formatFlightRecord();
  EXPECT_NE(text.find(" UTC  send to rank 3, 59 bytes\n"), std::string::npos)
      << text;
  // No peer, no bytes: the action alone.
  EXPECT_EQ(text.substr(text.rfind("UTC")), "UTC  F0.3\n");
}

} // namespace
