//===- LinkCollectives.h - collectives over a job's message links -*- C++ -*-===//
//
// All-reduce, all-gather and broadcast between the ranks of a group, made
// of point-to-point messages on the job's MessageLinks (connections that
// proved the job's secret), on the group's channel and on slots of their
// own (from 2^56 up, above every messageSlot()).
//
// The all-reduce is a reduce-scatter then an all-gather: in each round the
// buffer's next part (at most kPieceBytes per rank) is cut into one chunk
// per rank; every rank sends chunk c to rank c, which sums the ranks'
// chunks in rank order 0, 1, ..., n-1 and sends the sum to all. So every
// element is summed once, in an order that depends on neither timing nor
// the rank, and copied: the same bits on every rank, equal to the sum in
// rank order; each rank sends and receives 2 (n-1)/n of the buffer, as in
// a ring. The reduce-scatter alone (ZeRO-2) sums each range on one owner
// in the same order. Messages are at most kPieceBytes, and a rank starts a round's
// sends at most one round ahead of its receives, so what waits in a rank's
// queues stays bounded by a few pieces per peer whatever the buffer's size.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_LINKCOLLECTIVES_H
#define PP_RUNTIME_LINKCOLLECTIVES_H

#include "runtime/core/ElementTypes.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pp::runtime {

class MessageLinks;

/// The largest message a collective sends.
inline constexpr size_t kPieceBytes = size_t(1) << 20;

/// A group's ranks on the job's links: the job rank of each, this rank's
/// place among them and the channel of the group's messages.
struct LinkGroup {
  MessageLinks &links;
  uint64_t channel;
  int rank;
  const std::vector<int64_t> &jobRanks;

  int size() const { return static_cast<int>(jobRanks.size()); }
};

/// Sums `count` values at `values` element-wise over `group`, leaving the
/// sum in `values` on every rank (see the file comment). Throws
/// std::runtime_error when a peer fails or times out.
void allReduceSumOverLinks(const LinkGroup &group, float *values,
                           size_t count);
void allReduceSumOverLinks(const LinkGroup &group, double *values,
                           size_t count);
/// The all-reduce of bf16 values (half the bytes of f32's): an element's
/// sum adds the ranks' values widened to float and is rounded to bf16
/// once.
void allReduceSumOverLinks(const LinkGroup &group, BFloat16 *values,
                           size_t count);

/// A range of a buffer whose sum over a group one of its ranks keeps.
struct OwnedRange {
  size_t begin = 0, count = 0;
  /// The group rank that keeps the sum.
  int owner = 0;
};

/// Throws std::invalid_argument, naming the first, unless every range of
/// `ranges` lies in a buffer of `count` elements and is owned by one of
/// `ranks` ranks.
void checkOwnedRanges(const std::vector<OwnedRange> &ranges, size_t count,
                      int ranks);

/// Sums each range of `ranges` (of the buffer at `values`) element-wise
/// over `group` and leaves the sum on the range's owner only: the
/// reduce-scatter half of allReduceSumOverLinks, adding in the same rank
/// order 0, 1, ..., n-1, so that an owner's elements are the bits the
/// all-reduce gives; the other ranks' copies keep their values. Every rank
/// passes the same ranges. Throws std::runtime_error when a peer fails or
/// times out.
void reduceScatterSumOverLinks(const LinkGroup &group, float *values,
                               const std::vector<OwnedRange> &ranges);
/// The reduce-scatter of bf16 values, summed as their all-reduce sums them.
void reduceScatterSumOverLinks(const LinkGroup &group, BFloat16 *values,
                               const std::vector<OwnedRange> &ranges);

/// Gathers every rank's `bytes` bytes at `mine` into `all` (`bytes` x the
/// ranks), in rank order, on every rank.
void allGatherOverLinks(const LinkGroup &group, const void *mine, size_t bytes,
                        void *all);

/// Copies `size` bytes at `bytes` from group rank `root` to every rank.
void broadcastOverLinks(const LinkGroup &group, void *bytes, size_t size,
                        int root);

} // namespace pp::runtime

#endif // PP_RUNTIME_LINKCOLLECTIVES_H
