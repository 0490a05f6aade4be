//===- MemoryPlanTest.cpp - planArena -------------------------------------===//

#include "passes/codegen/MemoryPlan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace pp;

namespace {

/// True when the planned ranges of buffers `a` and `b` share a byte.
bool shareBytes(const ArenaPlan &plan, llvm::ArrayRef<BufferLifetime> buffers,
                size_t a, size_t b) {
  auto end = [&](size_t i) {
    return plan.offsets[i] +
           static_cast<int64_t>(std::max<uint64_t>(buffers[i].bytes, 1));
  };
  return plan.offsets[a] < end(b) && plan.offsets[b] < end(a);
}

/// True when `a` and `b` are alive at the same time.
bool overlapInTime(const BufferLifetime &a, const BufferLifetime &b) {
  return !(a.released < b.allocated || b.released < a.allocated);
}

/// The most bytes (aligned) alive at once.
uint64_t peakLiveBytes(llvm::ArrayRef<BufferLifetime> buffers) {
  uint64_t peak = 0;
  for (const BufferLifetime &at : buffers) {
    uint64_t live = 0;
    for (const BufferLifetime &other : buffers)
      if (!other.outlivesCall && other.allocated <= at.allocated &&
          other.released >= at.allocated)
        live += (other.bytes + kArenaAlignment - 1) / kArenaAlignment *
                kArenaAlignment;
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(MemoryPlanTest, AChainReusesTwoSlots) {
  // x0 -> x1 -> x2 -> x3: each input is released after the next is made.
  std::vector<BufferLifetime> buffers;
  for (int64_t i = 0; i < 4; ++i)
    buffers.push_back({256, 2 * i, 2 * i + 3, false});
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.arenaBytes, 512u);
  EXPECT_EQ(plan.offsets, (llvm::SmallVector<int64_t>{0, 256, 0, 256}));
}

TEST(MemoryPlanTest, ResultsAreNotPlanned) {
  std::vector<BufferLifetime> buffers = {
      {64, 1, 3, false}, {100, 2, 9, true}, {64, 4, 5, false}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.offsets, (llvm::SmallVector<int64_t>{0, -1, 0}));
  EXPECT_EQ(plan.arenaBytes, 64u);
}

TEST(MemoryPlanTest, OffsetsAreAlignedAndEmptyTensorsTakeAUnit) {
  std::vector<BufferLifetime> buffers = {
      {1, 1, 10, false}, {0, 2, 10, false}, {65, 3, 10, false}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.offsets, (llvm::SmallVector<int64_t>{0, 64, 128}));
  EXPECT_EQ(plan.arenaBytes, 256u);
}

TEST(MemoryPlanTest, FirstFitFillsTheLowestGap) {
  // a [0, 128) and b [128, 192) alive; a dies; c (64 bytes) takes a's place.
  std::vector<BufferLifetime> buffers = {
      {128, 1, 3, false}, {64, 2, 9, false}, {64, 4, 9, false}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.offsets, (llvm::SmallVector<int64_t>{0, 128, 0}));
  EXPECT_EQ(plan.arenaBytes, 192u);
}

TEST(MemoryPlanTest, AReshapeTakesItsDyingOperandsBytes) {
  // x [0, 256) alive; y = reshape(x) allocated at 3, x released at 4;
  // z made at 5 while y lives: y shares x's bytes, z goes after them.
  std::vector<BufferLifetime> buffers = {{64, 1, 9, false},
                                         {256, 2, 4, false},
                                         {256, 3, 8, false, 1},
                                         {256, 5, 8, false}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.offsets, (llvm::SmallVector<int64_t>{0, 64, 64, 320}));
  EXPECT_EQ(plan.arenaBytes, 576u);
}

TEST(MemoryPlanTest, AReuseOfAnotherSizeOrOfAResultIsIgnored) {
  std::vector<BufferLifetime> buffers = {{256, 1, 4, false},
                                         {128, 3, 8, false, 0},
                                         {256, 5, 9, true},
                                         {256, 6, 8, false, 2}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.offsets, (llvm::SmallVector<int64_t>{0, 256, -1, 0}));
}

/// Random programs: tensors alive at the same time never share a byte,
/// the arena holds every tensor, and it is at least the peak of live bytes;
/// for tensors of one size first fit reaches that peak exactly.
TEST(MemoryPlanTest, RandomLifetimesNeverShareBytes) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 500; ++trial) {
    bool oneSize = trial % 2 == 0;
    std::vector<BufferLifetime> buffers;
    int64_t count = 1 + random() % 40;
    for (int64_t i = 0; i < count; ++i) {
      int64_t allocated = 2 * i + 1;
      buffers.push_back({oneSize ? 64 : random() % 1000, allocated,
                         allocated + 1 + static_cast<int64_t>(random() % 30),
                         random() % 8 == 0});
    }
    ArenaPlan plan = planArena(buffers);
    ASSERT_EQ(plan.offsets.size(), buffers.size());
    for (size_t a = 0; a < buffers.size(); ++a) {
      if (buffers[a].outlivesCall) {
        EXPECT_EQ(plan.offsets[a], -1);
        continue;
      }
      EXPECT_EQ(plan.offsets[a] % static_cast<int64_t>(kArenaAlignment), 0);
      EXPECT_LE(plan.offsets[a] + static_cast<int64_t>(buffers[a].bytes),
                static_cast<int64_t>(plan.arenaBytes));
      for (size_t b = a + 1; b < buffers.size(); ++b) {
        if (!buffers[b].outlivesCall && overlapInTime(buffers[a], buffers[b])) {
          EXPECT_FALSE(shareBytes(plan, buffers, a, b))
              << "trial " << trial << ": buffers " << a << " and " << b;
        }
      }
    }
    uint64_t peak = peakLiveBytes(buffers);
    EXPECT_GE(plan.arenaBytes, peak) << "trial " << trial;
    if (oneSize) {
      EXPECT_EQ(plan.arenaBytes, peak) << "trial " << trial;
    }
  }
}

} // namespace
