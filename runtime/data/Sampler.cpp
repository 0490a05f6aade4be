//===- Sampler.cpp - which samples each rank reads, on any mesh -----------===//

#include "runtime/data/Sampler.h"

#include "runtime/core/CounterRng.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace pp::runtime {
namespace {

/// A uniform draw from [0, bound) (bound >= 1) by Lemire's multiply-shift
/// with rejection, so that no value is favored: the first try uses `bits`,
/// retry a uses counterStream(bits, a).
uint64_t boundedDraw(uint64_t bits, uint64_t bound) {
  unsigned __int128 product = static_cast<unsigned __int128>(bits) * bound;
  uint64_t low = static_cast<uint64_t>(product);
  if (low < bound) {
    uint64_t threshold = (0 - bound) % bound;
    for (uint64_t attempt = 1; low < threshold; ++attempt) {
      product =
          static_cast<unsigned __int128>(counterStream(bits, attempt)) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

/// Throws unless 0 <= value < limit, naming what `value` is.
void checkIndex(int64_t value, int64_t limit, const char *what,
                const char *limitName) {
  if (value < 0 || value >= limit)
    throw std::runtime_error(std::string(what) + " " + std::to_string(value) +
                             " is out of range; it must lie in [0, " +
                             std::to_string(limit) + ") (" + limitName + ")");
}

/// Throws unless a dataset of `samples` samples can be sampled.
void checkSampleCount(int64_t samples, const char *dataset) {
  if (samples < 1)
    throw std::runtime_error(std::string("the ") + dataset + " has " +
                             std::to_string(samples) +
                             " samples; it needs at least one (a longer "
                             "dataset, or a shorter sequence length)");
}

/// Throws unless `layout` is valid and the coordinate and microbatch lie
/// in it.
void checkMicrobatch(const BatchLayout &layout, int64_t dataRank,
                     int64_t microbatch) {
  layout.validate();
  checkIndex(dataRank, layout.dataParallel, "data-parallel coordinate",
             "the data-parallel degree");
  checkIndex(microbatch, layout.microbatches, "microbatch",
             "the microbatches per step");
}

} // namespace

void BatchLayout::validate() const {
  auto checkField = [](int64_t value, const char *name) {
    if (value < 1)
      throw std::runtime_error(std::string("the ") + name + " is " +
                               std::to_string(value) +
                               "; it must be at least 1");
  };
  checkField(microbatchSize, "microbatch size");
  checkField(microbatches, "number of microbatches per step");
  checkField(dataParallel, "data-parallel degree");
  int64_t perReplica = 0, global = 0;
  if (__builtin_mul_overflow(microbatchSize, microbatches, &perReplica) ||
      __builtin_mul_overflow(perReplica, dataParallel, &global))
    throw std::runtime_error(
        "the global batch (microbatch size " + std::to_string(microbatchSize) +
        " x microbatches " + std::to_string(microbatches) +
        " x data-parallel degree " + std::to_string(dataParallel) +
        ") does not fit in 64 bits");
}

int64_t BatchLayout::globalBatch() const {
  validate();
  return microbatchSize * microbatches * dataParallel;
}

TrainingSampler::TrainingSampler(uint64_t seed, int64_t samples)
    : seed(seed), sampleCount(samples) {
  checkSampleCount(samples, "training dataset");
}

const std::vector<int64_t> &TrainingSampler::permutation(int64_t epoch) const {
  CachedEpoch &slot = cache[epoch % 2];
  if (slot.epoch == epoch)
    return slot.order;
  slot.epoch = epoch;
  slot.order.resize(sampleCount);
  std::iota(slot.order.begin(), slot.order.end(), int64_t{0});
  uint64_t epochStream = counterStream(mix64(seed), epoch);
  for (int64_t i = sampleCount - 1; i > 0; --i) {
    uint64_t partner = boundedDraw(counterStream(epochStream, i), i + 1);
    std::swap(slot.order[i], slot.order[partner]);
  }
  return slot.order;
}

int64_t TrainingSampler::sampleAt(int64_t position) const {
  if (position < 0)
    throw std::runtime_error("sample position " + std::to_string(position) +
                             " is negative; positions count consumed "
                             "samples from 0");
  return permutation(epochOf(position))[positionInEpoch(position)];
}

std::vector<int64_t> TrainingSampler::microbatch(int64_t cursor,
                                                 const BatchLayout &layout,
                                                 int64_t dataRank,
                                                 int64_t microbatch) const {
  checkMicrobatch(layout, dataRank, microbatch);
  if (cursor < 0 ||
      cursor > std::numeric_limits<int64_t>::max() - layout.globalBatch())
    throw std::runtime_error("the consumed-samples cursor is " +
                             std::to_string(cursor) +
                             "; it must be at least 0, and a step from it "
                             "must end below 2^63");
  int64_t first = layout.firstPosition(cursor, dataRank, microbatch);
  std::vector<int64_t> result(layout.microbatchSize);
  for (int64_t j = 0; j < layout.microbatchSize; ++j)
    result[j] = sampleAt(first + j);
  return result;
}

EvalSampler::EvalSampler(int64_t samples, const BatchLayout &layout,
                         int64_t maxBatches)
    : sampleCount(samples), batchLayout(layout) {
  checkSampleCount(samples, "eval dataset");
  if (maxBatches < 0)
    throw std::runtime_error("the eval batch limit is " +
                             std::to_string(maxBatches) +
                             "; it must be at least 0 (0: every batch)");
  int64_t global = layout.globalBatch();
  batchCount = samples / global + (samples % global != 0);
  if (maxBatches > 0)
    batchCount = std::min(batchCount, maxBatches);
}

std::vector<int64_t> EvalSampler::microbatch(int64_t batch, int64_t dataRank,
                                             int64_t microbatch) const {
  checkIndex(batch, batchCount, "eval batch", "the eval batches");
  checkMicrobatch(batchLayout, dataRank, microbatch);
  int64_t first = batchLayout.firstPosition(batch * batchLayout.globalBatch(),
                                            dataRank, microbatch);
  std::vector<int64_t> result(batchLayout.microbatchSize);
  for (int64_t j = 0; j < batchLayout.microbatchSize; ++j)
    result[j] = first + j < sampleCount ? first + j : -1;
  return result;
}

DataNeeds dataNeeds(int64_t stage, int64_t stages) {
  if (stages < 1)
    throw std::runtime_error("the pipeline has " + std::to_string(stages) +
                             " stages; it needs at least one");
  checkIndex(stage, stages, "stage", "the pipeline's stages");
  return DataNeeds{stage == 0, stage == stages - 1};
}

DataCoordinates dataCoordinates(const DeviceMesh &mesh, int64_t rank) {
  checkIndex(rank, mesh.deviceCount(), "rank", "the mesh's devices");
  std::vector<int64_t> at = mesh.coordinates(rank);
  DataCoordinates result;
  for (size_t i = 0; i < at.size(); ++i) {
    const MeshAxis &axis = mesh.axes()[i];
    if (axis.kind == AxisKind::Pipeline)
      result.stage = at[i];
    if (axis.kind == AxisKind::DataReplicate ||
        axis.kind == AxisKind::DataShard) {
      result.dataRank = result.dataRank * axis.size + at[i];
      result.dataParallel *= axis.size;
    }
  }
  return result;
}

} // namespace pp::runtime
