//===- TensorShardsTest.cpp - slicing and assembling sharded tensors ------===//
//
// A global tensor sliced into each device's shard by the contract's layout
// (blocks of the sharded dimension, each split over the devices) and put
// back together: from the shards in device order, from an all-gather over
// thread ranks, and by gathering to the first rank.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/TensorShards.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

ParameterSharding sharding(Shape globalShape, int64_t dim, int64_t blocks,
                           int64_t parts) {
  return {"tp", dim, blocks, parts, std::move(globalShape)};
}

/// 0, 1, 2, ...: each element its own row-major index.
std::vector<float> iota(const Shape &shape) {
  std::vector<float> values(numElements(shape));
  std::iota(values.begin(), values.end(), 0.0f);
  return values;
}

std::vector<float> slice(const ParameterSharding &layout, int64_t part,
                         const std::vector<float> &global) {
  std::vector<float> local(global.size() / layout.parts);
  sliceShard(layout, part, global.data(), local.data());
  return local;
}

TEST(TensorShards, APlainShardIsAContiguousRangeOfTheDimension) {
  // [2, 4] on dimension 1 over 2 devices: columns 0-1 and 2-3.
  ParameterSharding columns = sharding({2, 4}, 1, 1, 2);
  std::vector<float> global = iota({2, 4});
  EXPECT_EQ(slice(columns, 0, global), (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(slice(columns, 1, global), (std::vector<float>{2, 3, 6, 7}));
  // On dimension 0: whole rows.
  ParameterSharding rows = sharding({4, 2}, 0, 1, 2);
  EXPECT_EQ(slice(rows, 1, iota({4, 2})), (std::vector<float>{4, 5, 6, 7}));
}

TEST(TensorShards, BlocksGiveEachDeviceItsPieceOfEveryBlock) {
  // A fused QKV weight [3E, E], E = 4, over 2 devices: rows 0-1 of q, k
  // and v on device 0, rows 2-3 of each on device 1.
  ParameterSharding qkv = sharding({12, 1}, 0, 3, 2);
  std::vector<float> global = iota({12, 1});
  EXPECT_EQ(slice(qkv, 0, global), (std::vector<float>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(slice(qkv, 1, global), (std::vector<float>{2, 3, 6, 7, 10, 11}));
  // The same along an inner dimension, with a dimension after it.
  ParameterSharding inner = sharding({2, 6, 2}, 1, 3, 2);
  std::vector<float> local = slice(inner, 1, iota({2, 6, 2}));
  EXPECT_EQ(local, (std::vector<float>{2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22,
                                       23}));
}

TEST(TensorShards, AssemblingTheShardsGivesTheGlobalTensorBack) {
  for (int64_t blocks : {1, 3})
    for (int64_t parts : {1, 2, 4})
      for (int64_t dim : {0, 1, 2}) {
        Shape shape = {12, 12, 3};
        shape[dim] = 12 * (dim == 2 ? 2 : 1);
        ParameterSharding layout = sharding(shape, dim, blocks, parts);
        std::vector<float> global = iota(shape), shards;
        for (int64_t part = 0; part < parts; ++part) {
          std::vector<float> local = slice(layout, part, global);
          shards.insert(shards.end(), local.begin(), local.end());
        }
        std::vector<float> assembled(global.size(), -1.0f);
        assembleShards(layout, shards.data(), assembled.data());
        EXPECT_EQ(assembled, global)
            << "blocks " << blocks << ", parts " << parts << ", dim " << dim;
      }
}

TEST(TensorShards, ShardsGatheredOverRanksAssembleToTheGlobalTensor) {
  for (int64_t blocks : {1, 3}) {
    ParameterSharding layout = sharding({6, 5}, 0, blocks, 2);
    std::vector<float> global = iota({6, 5});
    runRanks(2, [&](Communicator &group) {
      std::vector<float> mine = slice(layout, group.rank(), global);
      // An all-gather: every rank assembles the same global tensor.
      std::vector<float> all(global.size()), assembled(global.size());
      group.allGather(mine.data(), mine.size(), all.data());
      assembleShards(layout, all.data(), assembled.data());
      EXPECT_EQ(assembled, global) << "blocks " << blocks;
      // To the first rank only.
      std::vector<float> first = gatherShardsToFirst(
          layout, group, messageSlot("shards"), mine.data());
      EXPECT_EQ(first, group.rank() == 0 ? global : std::vector<float>{})
          << "blocks " << blocks;
    });
  }
}

} // namespace
