//===- MemoryArena.h - a stage function's tensors at planned offsets -*- C++
//-*-===//
//
// pp-lower-to-runtime plans, for every stage function, where each tensor
// it allocates lives in one arena (passes/codegen/MemoryPlan.h); the
// manifest records the plan. The runtime serves the function's kernels
// from its arena by the plan: no allocation per op once the arena exists.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_MEMORYARENA_H
#define PP_RUNTIME_KERNELS_MEMORYARENA_H

#include "runtime/pp_kernels.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// One allocation of a stage function, in call order.
struct PlannedAllocation {
  uint64_t bytes = 0;
  /// Its offset in the arena, or kOutlivesCall for a result, which the
  /// frame's queue's allocator serves.
  int64_t offset = -1;
  static constexpr int64_t kOutlivesCall = -1;
};

/// A stage function's memory plan (manifest "memory_plan").
struct MemoryPlan {
  uint64_t arenaBytes = 0;
  std::vector<PlannedAllocation> allocations;
};

/// The buffer that the arenas of one rank's stage functions share: they
/// run one at a time, each call's tensors dead at its end, so the rank
/// needs the largest arena, not their sum. Allocated at its first use.
class ArenaBuffer {
public:
  explicit ArenaBuffer(uint64_t bytes) : bytes(bytes) {}
  ~ArenaBuffer();
  ArenaBuffer(const ArenaBuffer &) = delete;
  ArenaBuffer &operator=(const ArenaBuffer &) = delete;

  /// Its memory, or null when it cannot be allocated (or is empty).
  void *data();
  uint64_t size() const { return bytes; }

private:
  uint64_t bytes;
  void *buffer = nullptr;
};

/// Serves the allocations of one stage function's calls, one call at a
/// time, from `buffer` (at least plan.arenaBytes, shared with the rank's
/// other functions): allocation i of a call at its planned offset, in a
/// header the arena reuses. A request that is not the plan's next (another
/// size, or past its end) is an error naming the function, the
/// allocation's index and both sizes.
class MemoryArena {
public:
  MemoryArena(std::string function, MemoryPlan plan,
              std::shared_ptr<ArenaBuffer> buffer);
  ~MemoryArena();
  MemoryArena(const MemoryArena &) = delete;
  MemoryArena &operator=(const MemoryArena &) = delete;

  /// Starts a call: the next request is the plan's first allocation.
  void begin();
  /// The call's next allocation, of `dtype` and `shape`: a tensor in the
  /// arena; null with the error recorded in `frame` when the request is not
  /// the plan's; nullopt when the plan says it outlives the call (the
  /// caller allocates it on its own).
  std::optional<pp_tensor *> place(pp_frame *frame, pp_dtype dtype,
                                   const std::vector<int64_t> &shape);
  /// After a call without error: why it did not make every planned
  /// allocation, or "".
  std::string finish() const;

  const MemoryPlan &plan() const { return memoryPlan; }

private:
  std::string function;
  MemoryPlan memoryPlan;
  std::shared_ptr<ArenaBuffer> shared;
  /// The header of each planned allocation, made at its first use.
  std::vector<pp_tensor *> headers;
  size_t next = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_MEMORYARENA_H
