//===- SamplerTest.cpp - which samples each rank reads, on any mesh -------===//

#include "runtime/data/Sampler.h"

#include "ErrorOf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace pp::runtime;

namespace {

/// Whether `block` holds each of 0 .. size-1 exactly once.
bool isPermutation(std::vector<int64_t> block, int64_t size) {
  std::sort(block.begin(), block.end());
  std::vector<int64_t> identity(size);
  for (int64_t i = 0; i < size; ++i)
    identity[i] = i;
  return block == identity;
}

TEST(Sampler, TheFirstEpochsForSeedZeroArePinned) {
  // An accidental change of the shuffle would change every run's data
  // order. The values come from a separate transcription of the algorithm
  // Sampler.h documents (Fisher-Yates, Lemire's bounded draw).
  TrainingSampler sampler(0, 10);
  std::vector<int64_t> first, second;
  for (int64_t p = 0; p < 10; ++p) {
    first.push_back(sampler.sampleAt(p));
    second.push_back(sampler.sampleAt(10 + p));
  }
  EXPECT_EQ(first, (std::vector<int64_t>{8, 3, 7, 4, 1, 5, 0, 2, 6, 9}));
  EXPECT_EQ(second, (std::vector<int64_t>{7, 5, 1, 0, 4, 6, 9, 2, 3, 8}));
}

TEST(Sampler, EpochsAreDistinctPermutationsKeyedBySeedAndEpoch) {
  TrainingSampler sampler(7, 50), other(8, 50);
  std::vector<std::vector<int64_t>> epochs(3), otherSeed(1);
  for (int64_t p = 0; p < 150; ++p) {
    epochs[sampler.epochOf(p)].push_back(sampler.sampleAt(p));
    EXPECT_EQ(sampler.positionInEpoch(p), p % 50);
  }
  for (int64_t p = 0; p < 50; ++p)
    otherSeed[0].push_back(other.sampleAt(p));
  for (const std::vector<int64_t> &epoch : epochs)
    EXPECT_TRUE(isPermutation(epoch, 50));
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  EXPECT_NE(epochs[0], otherSeed[0]);
  // Reading backwards, or epoch 2 first, gives the same order.
  TrainingSampler backwards(7, 50);
  for (int64_t p = 150; p-- > 0;)
    EXPECT_EQ(backwards.sampleAt(p), epochs[p / 50][p % 50]);
}

TEST(Sampler, MicrobatchesInterleaveDataRanksWithinAStep) {
  // b = 2, m = 2, D = 3: B = 12; microbatch k of rank d starts at
  // (k * 3 + d) * 2 after the cursor.
  TrainingSampler sampler(1, 20), reference(1, 20);
  BatchLayout layout{2, 2, 3};
  EXPECT_EQ(layout.globalBatch(), 12);
  // The cursor 12 starts the second step; it crosses into epoch 1.
  EXPECT_EQ(
      sampler.microbatch(12, layout, 0, 0),
      (std::vector<int64_t>{reference.sampleAt(12), reference.sampleAt(13)}));
  EXPECT_EQ(
      sampler.microbatch(12, layout, 2, 0),
      (std::vector<int64_t>{reference.sampleAt(16), reference.sampleAt(17)}));
  EXPECT_EQ(
      sampler.microbatch(12, layout, 1, 1),
      (std::vector<int64_t>{reference.sampleAt(20), reference.sampleAt(21)}));
}

TEST(Sampler, EvalReadsInOrderAndPadsTheLastBatch) {
  // 7 samples, b = 2, m = 1, D = 2: two batches of 4; the last one holds
  // 4, 5, 6 and one padding sample.
  EvalSampler eval(7, BatchLayout{2, 1, 2});
  EXPECT_EQ(eval.batches(), 2);
  EXPECT_EQ(eval.microbatch(0, 0, 0), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(eval.microbatch(0, 1, 0), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(eval.microbatch(1, 0, 0), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(eval.microbatch(1, 1, 0), (std::vector<int64_t>{6, -1}));
  EXPECT_EQ(EvalSampler(7, BatchLayout{2, 1, 2}, 1).batches(), 1);
  EXPECT_EQ(EvalSampler(7, BatchLayout{2, 1, 2}, 5).batches(), 2);
  EXPECT_EQ(EvalSampler(8, BatchLayout{2, 1, 2}).batches(), 2);
}

TEST(Sampler, FirstStageReadsInputsLastStageLabelsMiddleStagesNothing) {
  auto needs = [](int64_t stage, int64_t stages) {
    DataNeeds result = dataNeeds(stage, stages);
    return std::make_pair(result.inputs, result.labels);
  };
  EXPECT_EQ(needs(0, 1), std::make_pair(true, true));
  EXPECT_EQ(needs(0, 3), std::make_pair(true, false));
  EXPECT_EQ(needs(1, 3), std::make_pair(false, false));
  EXPECT_EQ(needs(2, 3), std::make_pair(false, true));
}

TEST(Sampler, DataCoordinatesComeFromTheDataAxesOnly) {
  // dp_replicate=2 x pp=3 x tp=2 x dp_shard=2: the data coordinate is
  // 2 * dp_replicate + dp_shard, whatever the pipeline and tensor ones.
  DeviceMesh mesh({{"dp_replicate", 2, AxisKind::DataReplicate},
                   {"pp", 3, AxisKind::Pipeline},
                   {"tp", 2, AxisKind::Tensor},
                   {"dp_shard", 2, AxisKind::DataShard}});
  for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank) {
    std::vector<int64_t> at = mesh.coordinates(rank);
    DataCoordinates data = dataCoordinates(mesh, rank);
    EXPECT_EQ(data.stage, at[1]);
    EXPECT_EQ(data.dataRank, 2 * at[0] + at[3]);
    EXPECT_EQ(data.dataParallel, 4);
  }
  DataCoordinates alone = dataCoordinates(DeviceMesh(), 0);
  EXPECT_EQ(alone.stage, 0);
  EXPECT_EQ(alone.dataRank, 0);
  EXPECT_EQ(alone.dataParallel, 1);
}

TEST(Sampler, BadArgumentsAreRefused) {
  EXPECT_EQ(errorOf([] { TrainingSampler(0, 0); }),
            "the training dataset has 0 samples; it needs at least one (a "
            "longer dataset, or a shorter sequence length)");
  EXPECT_EQ(errorOf([] { EvalSampler(-1, BatchLayout{}); }),
            "the eval dataset has -1 samples; it needs at least one (a "
            "longer dataset, or a shorter sequence length)");
  EXPECT_EQ(errorOf([] {
              BatchLayout{0, 1, 1}.validate();
            }),
            "the microbatch size is 0; it must be at least 1");
  EXPECT_EQ(errorOf([] {
              BatchLayout{1, -2, 1}.globalBatch();
            }),
            "the number of microbatches per step is -2; it must be at least 1");
  EXPECT_EQ(errorOf([] {
              EvalSampler(5, BatchLayout{1, 1, 0});
            }),
            "the data-parallel degree is 0; it must be at least 1");
  EXPECT_EQ(errorOf([] {
              BatchLayout{int64_t{1} << 40, 1, 1 << 24}.validate();
            }),
            "the global batch (microbatch size 1099511627776 x microbatches 1 "
            "x data-parallel degree 16777216) does not fit in 64 bits");
  EXPECT_EQ(errorOf([] { EvalSampler(5, BatchLayout{}, -1); }),
            "the eval batch limit is -1; it must be at least 0 (0: every "
            "batch)");

  TrainingSampler sampler(0, 10);
  BatchLayout layout{2, 3, 2};
  EXPECT_EQ(errorOf([&] { sampler.sampleAt(-1); }),
            "sample position -1 is negative; positions count consumed samples "
            "from 0");
  EXPECT_EQ(errorOf([&] { sampler.microbatch(-4, layout, 0, 0); }),
            "the consumed-samples cursor is -4; it must be at least 0, and a "
            "step from it must end below 2^63");
  EXPECT_EQ(errorOf([&] {
              sampler.microbatch(std::numeric_limits<int64_t>::max() - 5,
                                 layout, 0, 0);
            }),
            "the consumed-samples cursor is 9223372036854775802; it must be "
            "at least 0, and a step from it must end below 2^63");
  EXPECT_EQ(errorOf([&] { sampler.microbatch(0, layout, 2, 0); }),
            "data-parallel coordinate 2 is out of range; it must lie in [0, "
            "2) (the data-parallel degree)");
  EXPECT_EQ(errorOf([&] { sampler.microbatch(0, layout, 0, 3); }),
            "microbatch 3 is out of range; it must lie in [0, 3) (the "
            "microbatches per step)");
  EXPECT_EQ(errorOf([&] {
              sampler.microbatch(0, BatchLayout{2, 3, 0}, 0, 0);
            }),
            "the data-parallel degree is 0; it must be at least 1");

  EvalSampler eval(10, layout);
  EXPECT_EQ(errorOf([&] { eval.microbatch(1, 0, 0); }),
            "eval batch 1 is out of range; it must lie in [0, 1) (the eval "
            "batches)");
  EXPECT_EQ(errorOf([&] { eval.microbatch(0, -1, 0); }),
            "data-parallel coordinate -1 is out of range; it must lie in [0, "
            "2) (the data-parallel degree)");

  EXPECT_EQ(errorOf([] { dataNeeds(0, 0); }),
            "the pipeline has 0 stages; it needs at least one");
  EXPECT_EQ(errorOf([] { dataNeeds(3, 3); }),
            "stage 3 is out of range; it must lie in [0, 3) (the pipeline's "
            "stages)");
  EXPECT_EQ(errorOf([] {
              dataCoordinates(DeviceMesh({{"dp", 2, AxisKind::DataShard}}), 2);
            }),
            "rank 2 is out of range; it must lie in [0, 2) (the mesh's "
            "devices)");
}

//===----------------------------------------------------------------------===//
// The property test: random datasets, layouts, meshes and resumes.
//===----------------------------------------------------------------------===//

/// One random case; describe() prints it so that a failure reproduces.
struct SamplingCase {
  uint64_t seed = 0;
  int64_t samples = 1;
  BatchLayout layout;
  int64_t stages = 1;
  /// The size of the tensor axis, 0 for a mesh without one.
  int64_t tensor = 0;
  /// Whether a data-parallel degree of 4 is two axes, data_replicate=2 x
  /// data_shard=2.
  bool splitData = false;
  /// The axes' names, outermost first.
  std::vector<std::string> axisOrder;
  int64_t steps = 1;
  int64_t resumeStep = 0;
  BatchLayout resumedLayout;
  int64_t evalSamples = 1;
  int64_t evalMaxBatches = 0;

  std::string describe() const {
    auto layoutText = [](const BatchLayout &layout) {
      return "b=" + std::to_string(layout.microbatchSize) +
             " m=" + std::to_string(layout.microbatches) +
             " D=" + std::to_string(layout.dataParallel);
    };
    std::string order;
    for (const std::string &axis : axisOrder)
      order += (order.empty() ? "" : ",") + axis;
    return "seed=" + std::to_string(seed) + " N=" + std::to_string(samples) +
           " " + layoutText(layout) + " pp=" + std::to_string(stages) +
           " tp=" + std::to_string(tensor) +
           " splitData=" + std::to_string(splitData) + " order=" + order +
           " steps=" + std::to_string(steps) +
           " resumeStep=" + std::to_string(resumeStep) + " resumed " +
           layoutText(resumedLayout) + " evalN=" + std::to_string(evalSamples) +
           " evalMaxBatches=" + std::to_string(evalMaxBatches);
  }
};

/// The divisors of `value` in [1, 4].
std::vector<int64_t> smallDivisors(int64_t value) {
  std::vector<int64_t> result;
  for (int64_t divisor = 1; divisor <= 4; ++divisor)
    if (value % divisor == 0)
      result.push_back(divisor);
  return result;
}

SamplingCase drawCase(std::mt19937_64 &random) {
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(random);
  };
  auto pick = [&](const std::vector<int64_t> &choices) {
    return choices[uniform(0, choices.size() - 1)];
  };
  SamplingCase c;
  c.seed = random();
  c.samples = uniform(1, 300);
  c.layout = BatchLayout{uniform(1, 4), uniform(1, 4), uniform(1, 4)};
  c.stages = uniform(1, 4);
  c.tensor = uniform(0, 2);
  c.splitData = uniform(0, 1) == 1;
  c.axisOrder = {"pp", "dp"};
  if (c.tensor > 0)
    c.axisOrder.push_back("tp");
  std::shuffle(c.axisOrder.begin(), c.axisOrder.end(), random);
  // Enough steps to cross at least one epoch boundary.
  int64_t global = c.layout.globalBatch();
  c.steps = c.samples / global + 1 + uniform(0, 2);
  c.resumeStep = uniform(0, c.steps);
  // Resume with another data-parallel degree where B allows one, and
  // another split of B / D into b x m.
  std::vector<int64_t> degrees = smallDivisors(global);
  auto same = std::find(degrees.begin(), degrees.end(), c.layout.dataParallel);
  if (degrees.size() > 1 && same != degrees.end())
    degrees.erase(same);
  c.resumedLayout.dataParallel = pick(degrees);
  int64_t perReplica = global / c.resumedLayout.dataParallel;
  c.resumedLayout.microbatchSize = pick(smallDivisors(perReplica));
  c.resumedLayout.microbatches = perReplica / c.resumedLayout.microbatchSize;
  c.evalSamples = uniform(1, 300);
  int64_t evalBatches = (c.evalSamples + global - 1) / global;
  c.evalMaxBatches = uniform(0, 1) == 1 ? uniform(1, evalBatches + 1) : 0;
  return c;
}

/// The mesh of `c` for the data-parallel degree `dataParallel`: its axes
/// in `c.axisOrder`, the "dp" name standing for data_replicate x data_shard
/// when c.splitData and the degree is 4.
DeviceMesh meshOf(const SamplingCase &c, int64_t dataParallel) {
  std::vector<MeshAxis> axes;
  for (const std::string &name : c.axisOrder) {
    if (name == "pp")
      axes.push_back({"pp", c.stages, AxisKind::Pipeline});
    if (name == "tp")
      axes.push_back({"tp", c.tensor, AxisKind::Tensor});
    if (name == "dp" && c.splitData && dataParallel == 4) {
      axes.push_back({"dp_replicate", 2, AxisKind::DataReplicate});
      axes.push_back({"dp_shard", 2, AxisKind::DataShard});
    } else if (name == "dp") {
      axes.push_back({"dp", dataParallel, AxisKind::DataReplicate});
    }
  }
  return DeviceMesh(axes);
}

/// Checks dataCoordinates on `mesh` against the mesh's own groups: the
/// ranks of a pipeline-and-tensor group share a data coordinate, those of
/// a data group hold each of [0, D) once, and the stage is the pipeline
/// coordinate.
void checkDataCoordinates(const DeviceMesh &mesh, int64_t dataParallel) {
  std::vector<std::string> modelAxes, dataAxes;
  for (const MeshAxis &axis : mesh.axes())
    (axis.kind == AxisKind::Pipeline || axis.kind == AxisKind::Tensor
         ? modelAxes
         : dataAxes)
        .push_back(axis.name);
  for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank) {
    DataCoordinates data = dataCoordinates(mesh, rank);
    EXPECT_EQ(data.stage, mesh.coordinate(rank, "pp"));
    EXPECT_EQ(data.dataParallel, dataParallel);
    for (int64_t peer : mesh.group(rank, modelAxes))
      EXPECT_EQ(dataCoordinates(mesh, peer).dataRank, data.dataRank);
    std::vector<int64_t> replicas;
    for (int64_t peer : mesh.group(rank, dataAxes))
      replicas.push_back(dataCoordinates(mesh, peer).dataRank);
    EXPECT_TRUE(isPermutation(replicas, dataParallel));
  }
}

/// Runs one training step from `cursor` on every rank of `mesh`: each rank
/// that dataNeeds says reads something reads its microbatches; middle
/// stages read nothing. Checks that every rank with the same data
/// coordinate reads the same samples, and that the first and the last
/// stage of each replica read. Returns the step's samples in order of the
/// global microbatch index k * D + d.
std::vector<int64_t> runStep(const TrainingSampler &sampler,
                             const DeviceMesh &mesh, const BatchLayout &layout,
                             int64_t stages, int64_t cursor) {
  // (d, k) -> the samples read; per d, whether inputs and labels were read.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> read;
  std::vector<bool> inputsRead(layout.dataParallel, false),
      labelsRead(layout.dataParallel, false);
  for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank) {
    DataCoordinates data = dataCoordinates(mesh, rank);
    DataNeeds needs = dataNeeds(data.stage, stages);
    if (data.stage != 0 && data.stage != stages - 1) {
      EXPECT_FALSE(needs.inputs || needs.labels)
          << "middle stage " << data.stage << " reads data";
    }
    if (!needs.inputs && !needs.labels)
      continue;
    inputsRead[data.dataRank] = inputsRead[data.dataRank] || needs.inputs;
    labelsRead[data.dataRank] = labelsRead[data.dataRank] || needs.labels;
    for (int64_t k = 0; k < layout.microbatches; ++k) {
      std::vector<int64_t> samples =
          sampler.microbatch(cursor, layout, data.dataRank, k);
      auto [entry, first] = read.try_emplace({data.dataRank, k}, samples);
      EXPECT_TRUE(first || entry->second == samples)
          << "rank " << rank << " reads other samples than its peers for "
          << "data coordinate " << data.dataRank << ", microbatch " << k;
    }
  }
  std::vector<int64_t> step;
  for (int64_t k = 0; k < layout.microbatches; ++k)
    for (int64_t d = 0; d < layout.dataParallel; ++d) {
      EXPECT_TRUE(inputsRead[d] && labelsRead[d])
          << "replica " << d << " misses inputs or labels";
      const std::vector<int64_t> &samples = read[{d, k}];
      step.insert(step.end(), samples.begin(), samples.end());
    }
  return step;
}

/// Every eval sample below the batches' end is read once, padding only in
/// the last batch and only past the dataset's end.
void checkEval(const SamplingCase &c) {
  EvalSampler eval(c.evalSamples, c.layout, c.evalMaxBatches);
  int64_t global = c.layout.globalBatch();
  int64_t allBatches = (c.evalSamples + global - 1) / global;
  EXPECT_EQ(eval.batches(), c.evalMaxBatches > 0
                                ? std::min(allBatches, c.evalMaxBatches)
                                : allBatches);
  std::vector<int64_t> seen(c.evalSamples, 0);
  int64_t padding = 0;
  for (int64_t batch = 0; batch < eval.batches(); ++batch)
    for (int64_t d = 0; d < c.layout.dataParallel; ++d)
      for (int64_t k = 0; k < c.layout.microbatches; ++k)
        for (int64_t sample : eval.microbatch(batch, d, k)) {
          if (sample < 0) {
            EXPECT_EQ(batch, allBatches - 1) << "padding before the last batch";
            ++padding;
            continue;
          }
          ASSERT_LT(sample, c.evalSamples);
          ++seen[sample];
        }
  int64_t covered = std::min(c.evalSamples, eval.batches() * global);
  for (int64_t sample = 0; sample < c.evalSamples; ++sample)
    EXPECT_EQ(seen[sample], sample < covered ? 1 : 0)
        << "eval sample " << sample;
  EXPECT_EQ(padding, eval.batches() * global - covered);
}

void checkCase(const SamplingCase &c) {
  int64_t global = c.layout.globalBatch();
  DeviceMesh mesh = meshOf(c, c.layout.dataParallel);
  DeviceMesh resumedMesh = meshOf(c, c.resumedLayout.dataParallel);
  checkDataCoordinates(mesh, c.layout.dataParallel);
  checkDataCoordinates(resumedMesh, c.resumedLayout.dataParallel);

  // The uninterrupted run.
  TrainingSampler sampler(c.seed, c.samples);
  std::vector<std::vector<int64_t>> steps;
  std::vector<int64_t> consumed;
  for (int64_t t = 0; t < c.steps; ++t) {
    steps.push_back(runStep(sampler, mesh, c.layout, c.stages, t * global));
    consumed.insert(consumed.end(), steps.back().begin(), steps.back().end());
  }
  // It reads the global order's prefix, which takes no layout: the order
  // does not depend on D, b or m.
  TrainingSampler order(c.seed, c.samples);
  std::vector<int64_t> prefix;
  for (int64_t p = 0; p < c.steps * global; ++p)
    prefix.push_back(order.sampleAt(p));
  ASSERT_EQ(consumed, prefix);
  // Within an epoch nothing is lost or repeated; a full epoch holds every
  // sample once.
  ASSERT_GT(static_cast<int64_t>(consumed.size()), c.samples);
  for (int64_t start = 0; start < static_cast<int64_t>(consumed.size());
       start += c.samples) {
    int64_t end = std::min<int64_t>(start + c.samples, consumed.size());
    std::vector<int64_t> epoch(consumed.begin() + start,
                               consumed.begin() + end);
    if (end - start == c.samples) {
      EXPECT_TRUE(isPermutation(epoch, c.samples)) << "epoch at " << start;
      continue;
    }
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(std::adjacent_find(epoch.begin(), epoch.end()), epoch.end())
        << "the last, partial epoch repeats a sample";
  }

  // A fresh sampler resumed at the cursor of c.resumeStep, with another
  // layout of the same B, continues the run exactly.
  TrainingSampler resumed(c.seed, c.samples);
  for (int64_t t = c.resumeStep; t < c.steps; ++t)
    EXPECT_EQ(
        runStep(resumed, resumedMesh, c.resumedLayout, c.stages, t * global),
        steps[t])
        << "resumed step " << t;

  checkEval(c);
}

TEST(Sampler, RandomMeshesLayoutsAndResumesReadEverySampleOncePerEpoch) {
  std::mt19937_64 random(20240610);
  for (int caseIndex = 0; caseIndex < 10000; ++caseIndex) {
    SamplingCase c = drawCase(random);
    SCOPED_TRACE("case " + std::to_string(caseIndex) + ": " + c.describe());
    checkCase(c);
    if (::testing::Test::HasFailure())
      return;
  }
}

} // namespace
