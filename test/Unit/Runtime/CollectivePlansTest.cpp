//===- CollectivePlansTest.cpp - collective layouts and arithmetic --------===//
//
// The strided copies that the CUDA collectives run (ShardLayout::piece and
// assemble) move the elements that the host kernels' runs (forEachRun)
// move, and reduceInOrder folds as std::max, std::min and a double sum do.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/CollectivePlans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

using namespace pp::runtime;

namespace {

using Offsets = std::vector<std::pair<int64_t, int64_t>>;

/// The (source, destination) offsets of every element `copy` moves, in
/// row-major order of its shape.
Offsets elementsOf(const StridedCopy &copy) {
  Offsets offsets;
  int64_t count = numElements(copy.shape);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, from = copy.sourceOffset, to = copy.destOffset;
    for (int64_t d = static_cast<int64_t>(copy.shape.size()) - 1; d >= 0; --d) {
      int64_t coordinate = rest % copy.shape[d];
      rest /= copy.shape[d];
      from += coordinate * copy.sourceStrides[d];
      to += coordinate * copy.destStrides[d];
    }
    offsets.push_back({from, to});
  }
  return offsets;
}

/// The (global, local) offsets of every element of device `rank`'s runs.
Offsets runsOf(const ShardLayout &layout, int64_t rank) {
  Offsets offsets;
  layout.forEachRun(rank, [&](int64_t local, int64_t global, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      offsets.push_back({global + i, local + i});
  });
  return offsets;
}

struct LayoutCase {
  Shape global;
  int64_t dim, blocks, devices;
};

const LayoutCase layoutCases[] = {
    {{8}, 0, 1, 2},    {{6, 4}, 0, 3, 2},    {{2, 12, 3}, 1, 2, 3},
    {{4, 6}, 1, 1, 2}, {{3, 2, 4}, 2, 2, 2}, {{9, 5}, 0, 3, 3},
};

TEST(CollectivePlansTest, PieceMovesTheDevicesRuns) {
  for (const LayoutCase &c : layoutCases) {
    pp_frame frame;
    std::optional<ShardLayout> layout =
        shardLayout(&frame, "test", c.global, c.dim, c.blocks, c.devices);
    ASSERT_TRUE(layout) << frame.error;
    for (int64_t rank = 0; rank < c.devices; ++rank) {
      Offsets runs = runsOf(*layout, rank),
              piece = elementsOf(layout->piece(rank));
      std::sort(runs.begin(), runs.end());
      std::sort(piece.begin(), piece.end());
      EXPECT_EQ(piece, runs)
          << formatShape(c.global) << " dim " << c.dim << " rank " << rank;
    }
  }
}

TEST(CollectivePlansTest, AssemblePlacesEveryDevicesPiece) {
  for (const LayoutCase &c : layoutCases) {
    pp_frame frame;
    std::optional<ShardLayout> layout =
        shardLayout(&frame, "test", c.global, c.dim, c.blocks, c.devices);
    ASSERT_TRUE(layout) << frame.error;
    int64_t pieceSize = numElements(c.global) / c.devices;
    // Device q's local element l sits at q * pieceSize + l of the stack.
    Offsets expected;
    for (int64_t q = 0; q < c.devices; ++q)
      for (auto [global, local] : runsOf(*layout, q))
        expected.push_back({q * pieceSize + local, global});
    Offsets assembled = elementsOf(layout->assemble());
    std::sort(expected.begin(), expected.end());
    std::sort(assembled.begin(), assembled.end());
    EXPECT_EQ(assembled, expected) << formatShape(c.global) << " dim " << c.dim;
    // Every element of the whole tensor is written once.
    std::vector<int64_t> targets;
    for (auto [from, to] : assembled)
      targets.push_back(to);
    std::sort(targets.begin(), targets.end());
    for (int64_t i = 0; i < static_cast<int64_t>(targets.size()); ++i)
      EXPECT_EQ(targets[i], i);
  }
}

TEST(CollectivePlansTest, ReduceInOrderFoldsInGroupOrder) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<float>> cases = {{1.0f, 2.0f, 3.0f},
                                           {1e8f, 1.0f, -1e8f},
                                           {nan, 1.0f},
                                           {1.0f, nan},
                                           {-0.0f, 0.0f},
                                           {0.0f, -0.0f},
                                           {0.1f, 0.2f, 0.3f, 0.4f}};
  for (const std::vector<float> &values : cases) {
    int64_t count = static_cast<int64_t>(values.size());
    // Strided as the gathered copies are: one value per device.
    std::vector<float> strided(2 * count, 7.0f);
    for (int64_t q = 0; q < count; ++q)
      strided[2 * q] = values[q];
    double sum = 0;
    float max = values[0], min = values[0];
    for (int64_t q = 0; q < count; ++q) {
      sum += values[q];
      if (q > 0) {
        max = std::max(max, values[q]);
        min = std::min(min, values[q]);
      }
    }
    auto same = [](float a, float b) {
      return std::memcmp(&a, &b, sizeof(float)) == 0;
    };
    EXPECT_TRUE(same(reduceInOrder(strided.data(), count, 2, 0),
                     static_cast<float>(sum)));
    EXPECT_TRUE(same(reduceInOrder(strided.data(), count, 2, 1), max));
    EXPECT_TRUE(same(reduceInOrder(strided.data(), count, 2, 2), min));
  }
}

TEST(CollectivePlansTest, AGroupReachesTheHostsMemory) {
  struct HostGroup : CollectiveGroup {
    int64_t rank() const override { return 0; }
    int64_t size() const override { return 1; }
    void allGather(const void *, size_t, void *, Queue &) override {}
  } group;
  EXPECT_TRUE(group.reaches(hostDevice()));
}

} // namespace
