//===- Sampler.h - which samples each rank reads, on any mesh ---*- C++ -*-===//
//
// The order in which training and eval read a dataset's samples, and which
// ranks of an N-D mesh read them (REFERENCE.md section 3, "Data sampling for
// N-D meshes"). Training reads a global order S, the concatenation of one
// permutation of the samples per epoch keyed only by (seed, epoch); a step
// that starts at the consumed-samples cursor c reads S[c, c + B) for the
// global batch B = b * m * D (microbatch size, microbatches, data-parallel
// degree), data-parallel coordinate d and microbatch k taking
// S[c + (k * D + d) * b, + b). Nothing depends on D, b or m but the split of
// a step, so resuming at any cursor, with any D, continues the same order.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_SAMPLER_H
#define PP_RUNTIME_SAMPLER_H

#include "runtime/communication/DeviceMesh.h"

#include <array>
#include <cstdint>
#include <vector>

namespace pp::runtime {

/// How a step's global batch splits: b samples per microbatch, m
/// microbatches per step on each of D data-parallel replicas.
struct BatchLayout {
  int64_t microbatchSize = 1;
  int64_t microbatches = 1;
  int64_t dataParallel = 1;

  /// The position in a sample order of the first sample that
  /// data-parallel coordinate `dataRank` reads for microbatch `microbatch`
  /// of the step or batch starting at `batchStart`:
  /// batchStart + (microbatch * D + dataRank) * b.
  int64_t firstPosition(int64_t batchStart, int64_t dataRank,
                        int64_t microbatch) const {
    return batchStart + (microbatch * dataParallel + dataRank) * microbatchSize;
  }
  /// B = b * m * D. Throws std::runtime_error like validate().
  int64_t globalBatch() const;
  /// Throws std::runtime_error, naming the field, unless every field is at
  /// least 1 and B fits in int64_t.
  void validate() const;
};

/// The training order of a dataset of N samples (numbered 0 .. N-1): epoch
/// e reads the permutation P_e of the samples, a Fisher-Yates shuffle whose
/// i-th swap (i = N-1 down to 1) draws its partner uniformly from [0, i]
/// with the bits counterStream(counterStream(mix64(seed), e), i) (Lemire's
/// unbiased bounded draw; rejected bits retry as counterStream(bits,
/// attempt), attempt = 1, 2, ...). Position p of the global
/// order is P_{p / N}[p % N]. The permutations of the last two epochs used
/// are cached (8 N bytes each), so reading positions in increasing order
/// costs O(1) per sample, and any position can be read first (resume). The
/// cache makes a sampler unsafe to share between threads.
class TrainingSampler {
public:
  /// Throws std::runtime_error when `samples` is below 1.
  TrainingSampler(uint64_t seed, int64_t samples);

  int64_t samples() const { return sampleCount; }
  /// S[position]: the sample read at `position` of the global order.
  /// Throws std::runtime_error when `position` is negative.
  int64_t sampleAt(int64_t position) const;
  /// The b samples that data-parallel coordinate `dataRank` reads for
  /// microbatch `microbatch` of the step starting at consumed-samples
  /// cursor `cursor`: S[cursor + (microbatch * D + dataRank) * b + j] for
  /// j < b. The next step starts at cursor + layout.globalBatch(). Throws
  /// std::runtime_error for an invalid layout, a negative cursor, or a
  /// coordinate or microbatch outside the layout.
  std::vector<int64_t> microbatch(int64_t cursor, const BatchLayout &layout,
                                  int64_t dataRank, int64_t microbatch) const;

  /// The epoch that position `position` of the global order belongs to.
  int64_t epochOf(int64_t position) const { return position / sampleCount; }
  /// The place of `position` in its epoch, in [0, N).
  int64_t positionInEpoch(int64_t position) const {
    return position % sampleCount;
  }

private:
  /// P_epoch, computed on first use and cached with the previous one.
  const std::vector<int64_t> &permutation(int64_t epoch) const;

  uint64_t seed;
  int64_t sampleCount;
  /// Epoch e lives in slot e % 2, so a step across an epoch boundary
  /// keeps both of its epochs.
  struct CachedEpoch {
    int64_t epoch = -1;
    std::vector<int64_t> order;
  };
  mutable std::array<CachedEpoch, 2> cache;
};

/// The eval order: samples 0 .. N-1 in dataset order, unshuffled, in
/// batches of B. Batch e, data-parallel coordinate d and microbatch k read
/// positions e * B + (k * D + d) * b + j (j < b); a position at or past N
/// is padding, returned as -1 for the loss to mask out. With every batch
/// read, each sample is read exactly once across ranks and microbatches,
/// and only the last batch holds padding.
class EvalSampler {
public:
  /// `maxBatches` caps batches() (0: every batch). Throws
  /// std::runtime_error when `samples` is below 1, the layout is invalid
  /// or `maxBatches` is negative.
  EvalSampler(int64_t samples, const BatchLayout &layout,
              int64_t maxBatches = 0);

  /// ceil(N / B), or at most `maxBatches` when it is above 0.
  int64_t batches() const { return batchCount; }
  /// The b samples (or -1 for padding) that data-parallel coordinate
  /// `dataRank` reads for microbatch `microbatch` of batch `batch`. Throws
  /// std::runtime_error for a batch, coordinate or microbatch out of range.
  std::vector<int64_t> microbatch(int64_t batch, int64_t dataRank,
                                  int64_t microbatch) const;

private:
  int64_t sampleCount;
  BatchLayout batchLayout;
  int64_t batchCount;
};

/// Which of a sample's parts a pipeline stage reads.
struct DataNeeds {
  bool inputs = false;
  bool labels = false;
};

/// The first stage reads the model's inputs, the last stage the labels, a
/// middle stage nothing (one stage reads both). Throws std::runtime_error
/// unless 0 <= stage < stages.
DataNeeds dataNeeds(int64_t stage, int64_t stages);

/// A rank's place for data: its pipeline stage and data-parallel
/// coordinate.
struct DataCoordinates {
  /// The coordinate on the mesh's pipeline axis (0 without one).
  int64_t stage = 0;
  /// The coordinate over the mesh's data axes (data_replicate and
  /// data_shard), row-major over them in mesh order, in [0, dataParallel).
  int64_t dataRank = 0;
  /// The product of the data axes' sizes (1 without any).
  int64_t dataParallel = 1;
};

/// `rank`'s DataCoordinates on `mesh`, whatever the axis order: ranks that
/// differ only along pipeline, tensor or context axes get the same
/// dataRank. Throws std::runtime_error unless 0 <= rank < deviceCount().
DataCoordinates dataCoordinates(const DeviceMesh &mesh, int64_t rank);

} // namespace pp::runtime

#endif // PP_RUNTIME_SAMPLER_H
