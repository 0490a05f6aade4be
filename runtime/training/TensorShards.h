//===- TensorShards.h - a sharded parameter's pieces ------------*- C++ -*-===//
//
// A parameter sharded over a tensor axis (Package.h, ParameterSharding):
// dimension `dim` of its global shape, of size n, is viewed as `blocks`
// blocks of n / blocks; device r of the axis' T holds, for each block in
// order, elements [r * n / (blocks * T), (r + 1) * n / (blocks * T)) of
// the block. Slicing takes one device's shard of the global tensor;
// assembling puts every device's shards back into the global tensor.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TENSORSHARDS_H
#define PP_RUNTIME_TENSORSHARDS_H

#include "runtime/communication/Communicator.h"
#include "runtime/package/Package.h"

#include <cstdint>
#include <vector>

namespace pp::runtime {

/// Copies device `part`'s shard of the global tensor `global` (of
/// sharding.globalShape) into `local` (of the local shape).
void sliceShard(const ParameterSharding &sharding, int64_t part,
                const float *global, float *local);

/// Writes into `global` the tensor whose shards lie one after another, in
/// device order, at `shards` (sharding.parts local tensors: what an
/// all-gather of the shards returns).
void assembleShards(const ParameterSharding &sharding, const float *shards,
                    float *global);

/// Gathers the shards of a tensor over `group` (the ranks of the sharding's
/// axis, its rank the device): every rank passes its shard `local` and the
/// same `slot`; ranks other than 0 send theirs to rank 0 without waiting
/// and return an empty vector, rank 0 returns the global tensor.
std::vector<float> gatherShardsToFirst(const ParameterSharding &sharding,
                                       Communicator &group, uint64_t slot,
                                       const float *local);

} // namespace pp::runtime

#endif // PP_RUNTIME_TENSORSHARDS_H
