//===- MemoryPlan.cpp - static offsets for a stage function's tensors -----===//

#include "passes/codegen/MemoryPlan.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace pp;

namespace {

/// A planned tensor that may still be alive.
struct Placed {
  uint64_t offset;
  uint64_t size;
  int64_t released;
};

/// `bytes` rounded up to the alignment (at least one unit, as the runtime's
/// allocators hand out for empty tensors).
uint64_t alignedSize(uint64_t bytes) {
  uint64_t units = (bytes + kArenaAlignment - 1) / kArenaAlignment;
  return std::max<uint64_t>(units, 1) * kArenaAlignment;
}

} // namespace

ArenaPlan pp::planArena(llvm::ArrayRef<BufferLifetime> buffers) {
  ArenaPlan plan;
  // Alive tensors sorted by offset.
  llvm::SmallVector<Placed> alive;
  for (const BufferLifetime &buffer : buffers) {
    if (buffer.outlivesCall) {
      plan.offsets.push_back(-1);
      continue;
    }
    llvm::erase_if(alive, [&](const Placed &placed) {
      return placed.released < buffer.allocated;
    });
    uint64_t size = alignedSize(buffer.bytes);
    if (buffer.reuses >= 0 && plan.offsets[buffer.reuses] >= 0 &&
        alignedSize(buffers[buffer.reuses].bytes) == size) {
      // The same bytes, alive until the later of the two releases.
      uint64_t offset = static_cast<uint64_t>(plan.offsets[buffer.reuses]);
      Placed *taken = llvm::find_if(
          alive, [&](const Placed &placed) { return placed.offset == offset; });
      if (taken != alive.end()) {
        taken->released = std::max(taken->released, buffer.released);
        plan.offsets.push_back(static_cast<int64_t>(offset));
        continue;
      }
    }
    uint64_t offset = 0;
    auto *at = alive.begin();
    for (; at != alive.end(); ++at) {
      if (at->offset >= offset + size)
        break;
      offset = std::max(offset, at->offset + at->size);
    }
    alive.insert(at, {offset, size, buffer.released});
    plan.offsets.push_back(static_cast<int64_t>(offset));
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
  }
  return plan;
}
