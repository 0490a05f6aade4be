//===- TensorShards.cpp - a sharded parameter's pieces --------------------===//

#include "runtime/training/TensorShards.h"

#include <algorithm>

namespace pp::runtime {
namespace {

/// Calls `copy(globalOffset, localOffset, count)` for each contiguous run
/// of device `part`'s shard: per index of the dimensions before `dim`, per
/// block, the device's piece of the block with everything after `dim`.
template <typename Copy>
void forEachRun(const ParameterSharding &sharding, int64_t part,
                const Copy &copy) {
  const Shape &shape = sharding.globalShape;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < sharding.dim; ++d)
    outer *= shape[d];
  for (size_t d = sharding.dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t size = shape[sharding.dim];
  int64_t block = size / sharding.blocks;
  int64_t piece = block / sharding.parts;
  int64_t localSize = size / sharding.parts;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t b = 0; b < sharding.blocks; ++b)
      copy((o * size + b * block + part * piece) * inner,
           (o * localSize + b * piece) * inner, piece * inner);
}

} // namespace

void sliceShard(const ParameterSharding &sharding, int64_t part,
                const float *global, float *local) {
  forEachRun(sharding, part,
             [&](int64_t globalAt, int64_t localAt, int64_t count) {
               std::copy(global + globalAt, global + globalAt + count,
                         local + localAt);
             });
}

void assembleShards(const ParameterSharding &sharding, const float *shards,
                    float *global) {
  int64_t localCount = numElements(sharding.globalShape) / sharding.parts;
  for (int64_t part = 0; part < sharding.parts; ++part) {
    const float *local = shards + part * localCount;
    forEachRun(sharding, part,
               [&](int64_t globalAt, int64_t localAt, int64_t count) {
                 std::copy(local + localAt, local + localAt + count,
                           global + globalAt);
               });
  }
}

std::vector<float> gatherShardsToFirst(const ParameterSharding &sharding,
                                       Communicator &group, uint64_t slot,
                                       const float *local) {
  int64_t localCount = numElements(sharding.globalShape) / sharding.parts;
  size_t bytes = localCount * sizeof(float);
  if (group.rank() != 0) {
    group.send(0, slot, local, bytes);
    return {};
  }
  std::vector<float> shards(localCount * sharding.parts);
  std::copy(local, local + localCount, shards.begin());
  for (int from = 1; from < group.worldSize(); ++from)
    group.recv(from, slot, shards.data() + from * localCount, bytes);
  std::vector<float> global(shards.size());
  assembleShards(sharding, shards.data(), global.data());
  return global;
}

} // namespace pp::runtime
