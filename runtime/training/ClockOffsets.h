//===- ClockOffsets.h - the ranks' clocks against rank 0's ------*- C++ -*-===//
//
// The ranks of one machine read one steady clock; machines' clocks differ
// by arbitrary offsets. Before rank 0 merges the ranks' trace spans it
// measures, per rank, how far that rank's clock is ahead of its own, as
// NTP does: it sends its time, the rank answers with its own, and the
// rank's clock read the answer halfway through the round trip. Of several
// rounds the shortest bounds the error best (half its round trip). An
// offset within the round trip is the same clock (ranks of one machine),
// taken as 0, so that their spans stay exactly as measured.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_CLOCKOFFSETS_H
#define PP_RUNTIME_TRAINING_CLOCKOFFSETS_H

#include "runtime/communication/Communicator.h"

#include <functional>
#include <vector>

namespace pp::runtime {

/// On rank 0 of `world`, per rank, the microseconds its clock `now` reads
/// ahead of rank 0's (0 for rank 0 and for ranks that read the same clock);
/// empty on the other ranks. Every rank of `world` calls it.
std::vector<double> clockOffsetsFromRank0(Communicator &world,
                                          const std::function<double()> &now);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_CLOCKOFFSETS_H
