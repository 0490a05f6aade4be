//===- ClockOffsets.h - the ranks' clocks against rank 0's ------*- C++ -*-===//
//
// The ranks of one machine read one steady clock; machines' clocks differ
// by arbitrary offsets. Before rank 0 merges the ranks' trace spans, each
// rank measures how far its clock is ahead of rank 0's, as NTP does: it
// sends a message, the other answers with its time, which it read halfway
// through the round trip. Of several rounds the shortest bounds the error
// best (half its round trip). An offset within the round trip is the same
// clock (ranks of one machine), taken as 0, so that their spans stay
// exactly as measured. A rank links only with its groups' members, so it
// measures against the first rank of its group on the tree to rank 0
// (JobExchanges.h), which adds its own offset.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_CLOCKOFFSETS_H
#define PP_RUNTIME_TRAINING_CLOCKOFFSETS_H

#include "runtime/communication/Communicator.h"
#include "runtime/training/RankGroups.h"

#include <functional>

namespace pp::runtime {

/// The microseconds this rank's clock `now` reads ahead of the clock of
/// `group`'s rank 0 (0 there, and for ranks that read the same clock).
/// Every rank of `group` calls it.
double clockAheadOfFirst(Communicator &group,
                         const std::function<double()> &now);

/// The microseconds this rank's clock `now` reads ahead of job rank 0's.
/// Every rank of the job calls it.
double clockAheadOfRank0(RankGroups &groups,
                         const std::function<double()> &now);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_CLOCKOFFSETS_H
