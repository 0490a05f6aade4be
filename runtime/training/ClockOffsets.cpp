//===- ClockOffsets.cpp - the ranks' clocks against rank 0's --------------===//

#include "runtime/training/ClockOffsets.h"

#include <cmath>
#include <limits>

namespace pp::runtime {
namespace {

/// Round trips per rank; the shortest one's estimate is kept.
constexpr int kRounds = 8;

} // namespace

std::vector<double> clockOffsetsFromRank0(Communicator &world,
                                          const std::function<double()> &now) {
  uint64_t slot = messageSlot("clock offsets");
  if (world.rank() != 0) {
    for (int round = 0; round < kRounds; ++round) {
      double asked = 0;
      world.recv(0, slot, &asked, sizeof(asked));
      double mine = now();
      world.send(0, slot, &mine, sizeof(mine));
    }
    return {};
  }
  std::vector<double> offsets(world.worldSize(), 0.0);
  for (int rank = 1; rank < world.worldSize(); ++rank) {
    double shortest = std::numeric_limits<double>::infinity();
    for (int round = 0; round < kRounds; ++round) {
      double sent = now();
      world.send(rank, slot, &sent, sizeof(sent));
      double theirs = 0;
      world.recv(rank, slot, &theirs, sizeof(theirs));
      double received = now();
      if (received - sent < shortest) {
        shortest = received - sent;
        offsets[rank] = theirs - (sent + received) / 2;
      }
    }
    // Within the round trip: the same clock, read a little later.
    if (std::abs(offsets[rank]) <= shortest)
      offsets[rank] = 0;
  }
  return offsets;
}

} // namespace pp::runtime
