//===- FlightRecord.cpp - a rank's last exchanges, for hangs --------------===//

#include "runtime/communication/FlightRecord.h"

#include <ctime>
#include <deque>
#include <mutex>

namespace pp::runtime {
namespace {

std::mutex flightMutex;
std::deque<FlightEvent> flightEvents;

/// "12:03:04.512 UTC".
std::string utcTime(std::chrono::system_clock::time_point at) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(at);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                    at.time_since_epoch())
                    .count() %
                1000;
  char text[32];
  std::snprintf(text, sizeof(text), "%02d:%02d:%02d.%03d UTC", parts.tm_hour,
                parts.tm_min, parts.tm_sec, static_cast<int>(millis));
  return text;
}

} // namespace

void recordFlight(std::string what, int peer, size_t bytes) {
  FlightEvent event{std::chrono::system_clock::now(), std::move(what), peer,
                    bytes};
  std::lock_guard<std::mutex> lock(flightMutex);
  if (flightEvents.size() == kFlightEvents)
    flightEvents.pop_front();
  flightEvents.push_back(std::move(event));
}

std::vector<FlightEvent> flightRecord() {
  std::lock_guard<std::mutex> lock(flightMutex);
  return {flightEvents.begin(), flightEvents.end()};
}

std::string formatFlightRecord() {
  std::string text;
  for (const FlightEvent &event : flightRecord()) {
    text += "  " + utcTime(event.at) + "  " + event.what;
    if (event.peer >= 0)
      text += " rank " + std::to_string(event.peer);
    if (event.bytes > 0)
      text += ", " + std::to_string(event.bytes) + " bytes";
    text += "\n";
  }
  return text;
}

} // namespace pp::runtime
