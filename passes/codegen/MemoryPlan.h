//===- MemoryPlan.h - static offsets for a stage function's tensors -*- C++
//-*-===//
//
// Every shape in a stage function is static and its calls run in a fixed
// order, so where each tensor lives can be decided at compile time: one
// arena per function, each allocation at an offset that no tensor alive at
// the same time uses.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_CODEGEN_MEMORYPLAN_H
#define PP_PASSES_CODEGEN_MEMORYPLAN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace pp {

/// The attribute pp-lower-to-runtime gives each lowered stage function:
/// `{arena_bytes, allocations = array<i64: bytes, offset, ...>}`, one pair
/// per tensor the function allocates in call order (offset -1: a result,
/// not planned).
constexpr llvm::StringLiteral kMemoryPlanAttrName = "pp.memory_plan";

/// The alignment of every offset in an arena, as the runtime's allocators
/// align tensors.
constexpr uint64_t kArenaAlignment = 64;

/// One tensor a stage function allocates, in call order: its bytes and the
/// positions (in the function's straight-line code) of its allocation and
/// of its release.
struct BufferLifetime {
  uint64_t bytes = 0;
  int64_t allocated = 0;
  int64_t released = 0;
  /// Handed out as a result: it outlives the call and is not planned.
  bool outlivesCall = false;
  /// An earlier buffer of the same size whose bytes this one takes, or -1:
  /// a reshape's operand, released after the reshape and before the next
  /// allocation, whose values the reshape's result holds unchanged (the
  /// reshape's copy then finds them in place).
  int64_t reuses = -1;
};

/// Where each allocation of a function lives.
struct ArenaPlan {
  /// The arena's size: the end of the highest planned tensor.
  uint64_t arenaBytes = 0;
  /// Per allocation, in call order: its offset in the arena, or -1 for one
  /// that outlives the call (a result, allocated on its own).
  llvm::SmallVector<int64_t> offsets;
};

/// First fit in allocation order: each tensor takes the lowest offset
/// (a multiple of kArenaAlignment) where it overlaps no tensor whose
/// lifetime overlaps its own, or the offset of the planned buffer it
/// reuses. Lifetimes overlap when neither is released before the other is
/// allocated.
ArenaPlan planArena(llvm::ArrayRef<BufferLifetime> buffers);

} // namespace pp

#endif // PP_PASSES_CODEGEN_MEMORYPLAN_H
