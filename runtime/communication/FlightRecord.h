//===- FlightRecord.h - a rank's last exchanges -----------------*- C++ -*-===//
//
// Each process keeps its last few exchanges with other ranks (sends,
// receives, collectives) and schedule actions, with the wall-clock time
// each began, in a ring. A rank that times out waiting for a peer writes
// the ring to its log: read beside the other ranks', on every machine, it
// shows who waited for whom, and since when.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COMMUNICATION_FLIGHTRECORD_H
#define PP_RUNTIME_COMMUNICATION_FLIGHTRECORD_H

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace pp::runtime {

/// One recorded event.
struct FlightEvent {
  std::chrono::system_clock::time_point at;
  /// "send", "recv", "an all-reduce", a schedule action ("F0.3"), ...
  std::string what;
  /// The job rank it was with; -1 for none or several.
  int peer = -1;
  size_t bytes = 0;
};

/// The events a process keeps.
inline constexpr size_t kFlightEvents = 48;

/// Records that `what` with job rank `peer` (-1: none or several) of
/// `bytes` bytes begins now. Thread-safe; drops the oldest past
/// kFlightEvents.
void recordFlight(std::string what, int peer, size_t bytes);

/// The events kept, oldest first.
std::vector<FlightEvent> flightRecord();

/// The events kept as lines, oldest first: "  12:03:04.512 UTC  send to
/// rank 3, 65536 bytes".
std::string formatFlightRecord();

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATION_FLIGHTRECORD_H
