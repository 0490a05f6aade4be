//===- SharedMemoryCollectives.h - a group's all-gather in shared memory --===//
//
// The CollectiveGroup of ranks on one host: an all-gather copies through a
// POSIX shared-memory segment that every member maps, synchronized by
// counters in the segment, instead of through the ranks' TCP links
// (microseconds instead of milliseconds for the few KB of a tensor-parallel
// all-reduce).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_SHAREDMEMORYCOLLECTIVES_H
#define PP_RUNTIME_SHAREDMEMORYCOLLECTIVES_H

#include "runtime/communication/Communicator.h"
#include "runtime/communication/CollectiveGroup.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// The ranks of a group on one host as a frame's CollectiveGroup.
///
/// The segment holds two sets of slots of `slotBytes` each, one slot per
/// member in each set. An all-gather moves its bytes in rounds of at most a
/// slot: each member copies its piece into its slot of the round's set,
/// waits until every member has arrived at the round, and copies every slot
/// out in group order. Rounds alternate between the sets, so a member one
/// round ahead writes the set that the others may still be reading, never
/// the one they read, and one wait per round suffices. The segment has a
/// fixed size: a large all-gather takes more rounds, never more memory.
///
/// Waiting spins a few microseconds, then sleeps on a futex in the segment,
/// so that ranks sharing few cores still progress. It fails, naming the
/// group, the members that did not arrive and the all-gather, after the
/// group's time limit (the job's --timeout), or as soon as a member that
/// has not arrived is gone (its process ended, which releases its lock on
/// the segment). After a failure every call fails.
class SharedMemoryCollectives : public CollectiveGroup {
public:
  /// Bytes per slot unless told: an all-gather of up to this many bytes per
  /// member takes one round.
  static constexpr size_t kDefaultSlotBytes = size_t(1) << 20;

  /// Maps one segment shared by the ranks of `group`, every one of which
  /// calls this with the same `label` (the group's name in errors) and
  /// `slotBytes`. Group rank 0 creates the segment under a random name,
  /// readable by this user only, which it removes once every member has
  /// tried to map it. Returns null on every member, with the reasons in
  /// `whyNot`, when any member cannot map it (a member on another host or
  /// with another /dev/shm, no room in /dev/shm). Throws when the members
  /// fail to exchange their outcomes over `group`.
  static std::unique_ptr<SharedMemoryCollectives>
  connect(Communicator &group, const std::string &label, std::string &whyNot,
          size_t slotBytes = kDefaultSlotBytes);
  ~SharedMemoryCollectives() override;
  SharedMemoryCollectives(const SharedMemoryCollectives &) = delete;
  SharedMemoryCollectives &operator=(const SharedMemoryCollectives &) = delete;

  int64_t rank() const override { return myRank; }
  int64_t size() const override {
    return static_cast<int64_t>(jobRanks.size());
  }
  void allGather(const void *mine, size_t bytes, void *all,
                 Queue &queue) override;

private:
  SharedMemoryCollectives(const Communicator &group, const std::string &label,
                          size_t slotBytes);
  /// Group rank 0's part of connect(): creates and maps the segment under
  /// `name`, its header carrying `tag`. "" or why not.
  std::string create(const std::string &name, const std::string &tag);
  /// The other members' part: maps the segment `name` if its header
  /// carries `tag` and this group's shape. "" or why not.
  std::string open(const std::string &name, const std::string &tag);
  /// Maps the segment open on `fd` and takes this member's lock on it.
  /// "" or why not.
  std::string mapSegment();
  /// Marks this member as arrived at `round` and waits until every member
  /// has; throws (see the class) on a failure of the all-gather of `bytes`.
  void awaitRound(uint64_t round, size_t bytes);
  bool everyoneArrived(uint64_t round) const;
  /// Whether `member` is gone: nobody holds its lock on the segment.
  bool gone(int64_t member) const;
  /// Fails the group with the error of the all-gather of `bytes` in which
  /// `members` (group ranks) have `state` ("not arrived within ...").
  [[noreturn]] void fail(size_t bytes, const std::vector<int64_t> &members,
                         const std::string &state);

  int64_t myRank = 0;
  /// The job rank of each member.
  std::vector<int> jobRanks;
  /// The group in errors: its label and job ranks.
  std::string description;
  std::chrono::milliseconds timeLimit;
  size_t slotBytes = 0;
  int fd = -1;
  void *segment = nullptr;
  size_t segmentBytes = 0;
  /// The rounds this member has completed, over all all-gathers.
  uint64_t rounds = 0;
  /// The error of the all-gather that failed the group, or "".
  std::string failure;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_SHAREDMEMORYCOLLECTIVES_H
