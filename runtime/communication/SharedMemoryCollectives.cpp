//===- SharedMemoryCollectives.cpp - a group's all-gather in shared memory ===//

#include "runtime/communication/SharedMemoryCollectives.h"
#include "runtime/communication/JobSecret.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <thread>

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace pp::runtime {
namespace {

constexpr uint64_t kMagic = 0x6c6c6f636d737070; // "ppsmcoll"
constexpr size_t kTagBytes = 32;
constexpr size_t kCacheLine = 64;
/// The fixed size of a member's note in connect(): the segment's name and
/// tag from group rank 0, then every member's problem.
constexpr size_t kNoteBytes = 256;
/// How long a waiting member spins before it sleeps: the others of a group
/// usually arrive within microseconds.
constexpr std::chrono::microseconds kSpinTime(50);
/// Spins that only pause the core before spinning yields it to other
/// ranks sharing it.
constexpr int kPauseSpins = 64;
/// How often a sleeping member wakes to look for members that are gone.
constexpr std::chrono::milliseconds kGoneCheckInterval(100);

/// The start of the segment. The members' arrival counters follow it, then
/// the two sets of slots.
struct SegmentHeader {
  uint64_t magic = kMagic;
  uint64_t members = 0;
  uint64_t slotBytes = 0;
  /// Group rank 0's random tag, which the other members check.
  char tag[kTagBytes] = {};
  /// Bumped when a round completes: what sleeping members wait on.
  alignas(kCacheLine) std::atomic<uint32_t> completions{0};
  /// How many members sleep on `completions` (none: nobody to wake).
  std::atomic<uint32_t> sleepers{0};
};

/// A member's arrivals: the last round it arrived at. Only it writes them.
struct alignas(kCacheLine) Arrivals {
  std::atomic<uint64_t> round{0};
};

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free &&
                  sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "the segment's counters are shared between processes");

size_t segmentSize(size_t members, size_t slotBytes) {
  return sizeof(SegmentHeader) + members * sizeof(Arrivals) +
         2 * members * slotBytes;
}

SegmentHeader &headerOf(void *segment) {
  return *static_cast<SegmentHeader *>(segment);
}

Arrivals &arrivalsOf(void *segment, int64_t member) {
  return reinterpret_cast<Arrivals *>(&headerOf(segment) + 1)[member];
}

/// The slots of set `set` (0 or 1), each member's `slotBytes` in order.
uint8_t *slotSet(void *segment, size_t members, size_t slotBytes, int set) {
  return reinterpret_cast<uint8_t *>(&arrivalsOf(segment, members)) +
         set * members * slotBytes;
}

/// Tells the core that this thread spins.
void pauseCore() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Sleeps while `word` holds `expected`, at most `timeout`, or until woken.
void futexWait(std::atomic<uint32_t> &word, uint32_t expected,
               std::chrono::nanoseconds timeout) {
  timespec limit;
  limit.tv_sec = static_cast<time_t>(timeout.count() / 1000000000);
  limit.tv_nsec = static_cast<long>(timeout.count() % 1000000000);
  // EAGAIN (already changed), EINTR and ETIMEDOUT all mean: look again.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT,
            expected, &limit, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t> &word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE,
            INT_MAX, nullptr, nullptr, 0);
}

/// The lock of `member` on the segment: a write lock on byte `member`. An
/// open file description's lock lasts until its last descriptor closes,
/// which a process that ends does.
struct flock memberLock(int64_t member) {
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = member;
  lock.l_len = 1;
  return lock;
}

std::string systemError(const std::string &what, int error) {
  return what + ": " + std::strerror(error);
}

std::string secondsText(std::chrono::milliseconds time) {
  std::string text = std::to_string(time.count() / 1000.0);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.')
    text.pop_back();
  return text + " s";
}

/// Reads the string at `note` (at most kNoteBytes, NUL-terminated if
/// shorter).
std::string noteText(const char *note) {
  return std::string(note, strnlen(note, kNoteBytes));
}

} // namespace

SharedMemoryCollectives::SharedMemoryCollectives(const Communicator &group,
                                                 const std::string &label,
                                                 size_t slotBytes)
    : myRank(group.rank()), timeLimit(group.timeLimit()),
      slotBytes(slotBytes) {
  description = "group '" + label + "' (job ranks ";
  for (int member = 0; member < group.worldSize(); ++member) {
    jobRanks.push_back(group.jobRank(member));
    description += (member ? "," : "") + std::to_string(jobRanks.back());
  }
  description += ")";
  segmentBytes = segmentSize(jobRanks.size(), slotBytes);
}

SharedMemoryCollectives::~SharedMemoryCollectives() {
  if (segment)
    ::munmap(segment, segmentBytes);
  if (fd >= 0)
    ::close(fd);
}

std::unique_ptr<SharedMemoryCollectives>
SharedMemoryCollectives::connect(Communicator &group, const std::string &label,
                                 std::string &whyNot, size_t slotBytes) {
  if (slotBytes == 0)
    throw std::invalid_argument("a shared-memory group needs slots of at "
                                "least one byte");
  std::unique_ptr<SharedMemoryCollectives> self(
      new SharedMemoryCollectives(group, label, slotBytes));
  bool leader = group.rank() == 0;
  // Group rank 0 names the segment and its tag at random, so that no two
  // groups (of this job or any other) share a segment.
  std::array<char, kNoteBytes> invitation = {};
  std::string problem, name, tag;
  if (leader) {
    try {
      std::string random = generateJobSecret();
      name = "/pp-collectives-" + random.substr(0, 32);
      tag = random.substr(32, kTagBytes);
      problem = self->create(name, tag);
    } catch (const std::exception &error) {
      problem = error.what();
    }
    if (problem.empty())
      std::memcpy(invitation.data(), (name + '\0' + tag).c_str(),
                  name.size() + 1 + tag.size());
  }
  // However the exchange ends, the name that group rank 0 created goes: the
  // members that mapped the segment keep it.
  struct Unlink {
    std::string name;
    ~Unlink() {
      if (!name.empty())
        ::shm_unlink(name.c_str());
    }
  } unlink{leader && self->fd >= 0 ? name : ""};
  group.broadcast(invitation.data(), invitation.size(), 0);
  if (!leader && invitation[0]) {
    name = noteText(invitation.data());
    tag = noteText(invitation.data() + name.size() + 1);
    problem = self->open(name, tag);
  }
  // Every member learns every member's problem, so that all decide alike.
  std::array<char, kNoteBytes> mine = {};
  std::memcpy(mine.data(), problem.data(),
              std::min(problem.size(), kNoteBytes - 1));
  std::vector<char> problems(kNoteBytes * group.worldSize());
  group.allGatherBytes(mine.data(), kNoteBytes, problems.data());
  whyNot.clear();
  for (int member = 0; member < group.worldSize(); ++member) {
    std::string text = noteText(problems.data() + member * kNoteBytes);
    if (!text.empty())
      whyNot += (whyNot.empty() ? "" : "; ") + std::string("job rank ") +
                std::to_string(group.jobRank(member)) + ": " + text;
  }
  if (!whyNot.empty()) {
    whyNot = "the ranks of " + self->description +
             " cannot share memory (" + whyNot + ")";
    return nullptr;
  }
  return self;
}

std::string SharedMemoryCollectives::create(const std::string &name,
                                            const std::string &tag) {
  fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    return systemError("cannot create the shared memory segment " + name,
                       errno);
  if (::ftruncate(fd, static_cast<off_t>(segmentBytes)) != 0)
    return systemError("cannot size the shared memory segment", errno);
  // Allocated now, so that a full /dev/shm is this error, not a SIGBUS
  // when a slot is first written.
  if (int error = ::posix_fallocate(fd, 0, static_cast<off_t>(segmentBytes)))
    return systemError("cannot allocate " + std::to_string(segmentBytes) +
                           " bytes in /dev/shm",
                       error);
  if (std::string problem = mapSegment(); !problem.empty())
    return problem;
  SegmentHeader &header = *new (segment) SegmentHeader;
  header.members = jobRanks.size();
  header.slotBytes = slotBytes;
  std::memcpy(header.tag, tag.data(), std::min(tag.size(), kTagBytes));
  for (size_t member = 0; member < jobRanks.size(); ++member)
    new (&arrivalsOf(segment, static_cast<int64_t>(member))) Arrivals;
  return "";
}

std::string SharedMemoryCollectives::open(const std::string &name,
                                          const std::string &tag) {
  fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0)
    return systemError("cannot open job rank " + std::to_string(jobRanks[0]) +
                           "'s shared memory segment " + name +
                           " (is it on another host, or in a container "
                           "with another /dev/shm?)",
                       errno);
  struct stat status;
  if (::fstat(fd, &status) != 0 ||
      static_cast<size_t>(status.st_size) != segmentBytes)
    return "the shared memory segment " + name + " has another size";
  if (std::string problem = mapSegment(); !problem.empty())
    return problem;
  const SegmentHeader &header = headerOf(segment);
  if (header.magic != kMagic || header.members != jobRanks.size() ||
      header.slotBytes != slotBytes ||
      std::string(header.tag, strnlen(header.tag, kTagBytes)) != tag)
    return "the shared memory segment " + name + " is not this group's";
  return "";
}

std::string SharedMemoryCollectives::mapSegment() {
  void *address = ::mmap(nullptr, segmentBytes, PROT_READ | PROT_WRITE,
                         MAP_SHARED, fd, 0);
  if (address == MAP_FAILED)
    return systemError("cannot map the shared memory segment", errno);
  segment = address;
  struct flock lock = memberLock(myRank);
  if (::fcntl(fd, F_OFD_SETLK, &lock) != 0)
    return systemError("cannot lock the shared memory segment", errno);
  return "";
}

void SharedMemoryCollectives::allGather(const void *mine, size_t bytes,
                                        void *all, Queue &queue) {
  checkReaches(queue);
  if (!failure.empty())
    throw std::runtime_error("an earlier all-gather over " + description +
                             " failed: " + failure);
  size_t members = jobRanks.size();
  const auto *input = static_cast<const uint8_t *>(mine);
  auto *output = static_cast<uint8_t *>(all);
  for (size_t offset = 0; offset < bytes; offset += slotBytes) {
    size_t piece = std::min(slotBytes, bytes - offset);
    uint8_t *slots =
        slotSet(segment, members, slotBytes, static_cast<int>(rounds % 2));
    std::memcpy(slots + myRank * slotBytes, input + offset, piece);
    awaitRound(rounds + 1, bytes);
    ++rounds;
    for (size_t member = 0; member < members; ++member)
      std::memcpy(output + member * bytes + offset, slots + member * slotBytes,
                  piece);
  }
}

bool SharedMemoryCollectives::everyoneArrived(uint64_t round) const {
  for (size_t member = 0; member < jobRanks.size(); ++member)
    if (arrivalsOf(segment, static_cast<int64_t>(member)).round.load() < round)
      return false;
  return true;
}

void SharedMemoryCollectives::awaitRound(uint64_t round, size_t bytes) {
  SegmentHeader &header = headerOf(segment);
  // Sequentially consistent throughout: a member that arrives after the
  // others' checks sees them all and wakes them, and a sleeper either sees
  // the completion before it sleeps or is counted when the waker looks.
  arrivalsOf(segment, myRank).round.store(round);
  if (everyoneArrived(round)) {
    header.completions.fetch_add(1);
    if (header.sleepers.load() != 0)
      futexWakeAll(header.completions);
    return;
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  for (int spin = 0; !everyoneArrived(round); ++spin) {
    if (spin < kPauseSpins) {
      pauseCore();
      continue;
    }
    if (Clock::now() - start > kSpinTime)
      break;
    ::sched_yield();
  }
  Clock::time_point deadline = start + timeLimit;
  for (;;) {
    uint32_t seen = header.completions.load();
    if (everyoneArrived(round))
      return;
    Clock::time_point now = Clock::now();
    std::vector<int64_t> late, lost;
    for (size_t member = 0; member < jobRanks.size(); ++member)
      if (arrivalsOf(segment, static_cast<int64_t>(member)).round.load() <
          round) {
        late.push_back(static_cast<int64_t>(member));
        if (gone(late.back()))
          lost.push_back(late.back());
      }
    if (!lost.empty())
      fail(bytes, lost, " gone (the process ended) before arriving");
    if (now >= deadline)
      fail(bytes, late,
           " not arrived within " + secondsText(timeLimit) +
               " (stopped, stuck, or slower than --timeout allows)");
    header.sleepers.fetch_add(1);
    futexWait(header.completions, seen,
              std::min<Clock::duration>(kGoneCheckInterval, deadline - now));
    header.sleepers.fetch_sub(1);
  }
}

bool SharedMemoryCollectives::gone(int64_t member) const {
  struct flock lock = memberLock(member);
  return ::fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type == F_UNLCK;
}

void SharedMemoryCollectives::fail(size_t bytes,
                                   const std::vector<int64_t> &members,
                                   const std::string &state) {
  std::string who;
  for (size_t i = 0; i < members.size(); ++i)
    who += (i == 0 ? "" : i + 1 == members.size() ? " and " : ", ") +
           std::to_string(jobRanks[members[i]]);
  failure = "the all-gather of " + std::to_string(bytes) +
            " bytes per rank over " + description + " in shared memory: " +
            (members.size() == 1 ? "job rank " + who + " has"
                                 : "job ranks " + who + " have") +
            state;
  throw communicationFailure(failure,
                             members.size() == 1 ? jobRanks[members[0]] : -1);
}

} // namespace pp::runtime
