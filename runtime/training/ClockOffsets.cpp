//===- ClockOffsets.cpp - the ranks' clocks against rank 0's --------------===//

#include "runtime/training/ClockOffsets.h"
#include "runtime/training/JobExchanges.h"

#include <cmath>
#include <limits>

namespace pp::runtime {
namespace {

/// Round trips per rank; the shortest one's estimate is kept.
constexpr int kRounds = 8;

} // namespace

double clockAheadOfFirst(Communicator &group,
                         const std::function<double()> &now) {
  uint64_t slot = messageSlot("clock offsets");
  if (group.rank() == 0) {
    // Answers each rank's rounds in turn.
    for (int member = 1; member < group.worldSize(); ++member)
      for (int round = 0; round < kRounds; ++round) {
        char asked = 0;
        group.recv(member, slot, &asked, sizeof(asked));
        double mine = now();
        group.send(member, slot, &mine, sizeof(mine));
      }
    return 0;
  }
  double shortest = std::numeric_limits<double>::infinity(), ahead = 0;
  for (int round = 0; round < kRounds; ++round) {
    char ask = 0;
    double sent = now();
    group.send(0, slot, &ask, sizeof(ask));
    double theirs = 0;
    group.recv(0, slot, &theirs, sizeof(theirs));
    double received = now();
    if (received - sent < shortest) {
      shortest = received - sent;
      ahead = (sent + received) / 2 - theirs;
    }
  }
  // Within the round trip: the same clock, read a little earlier.
  return std::abs(ahead) <= shortest ? 0 : ahead;
}

double clockAheadOfRank0(RankGroups &groups,
                         const std::function<double()> &now) {
  // From the root down: a group's first rank knows its own offset before
  // its group measures against it.
  std::vector<Communicator *> levels = levelsToRank0(groups);
  double ahead = 0;
  for (auto level = levels.rbegin(); level != levels.rend(); ++level) {
    double againstFirst = clockAheadOfFirst(**level, now);
    double firstAhead = ahead;
    (*level)->broadcast(&firstAhead, sizeof(firstAhead), 0);
    ahead = (*level)->rank() == 0 ? ahead : againstFirst + firstAhead;
  }
  return ahead;
}

} // namespace pp::runtime
