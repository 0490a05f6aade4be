//===- DataParallelTest.cpp - gradient sums and sharded updates -----------===//
//
// Replicas of a stage as thread ranks: bucketed gradient all-reduces, and
// ZeRO-1 updates that give the unsharded update's bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/Backend.h"
#include "runtime/training/GradientReduction.h"
#include "runtime/training/LearningRate.h"
#include "runtime/training/ParameterUpdate.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

/// A value that differs per rank, tensor and element, with fractional bits
/// so that the order of additions would show.
float gradientValue(int rank, size_t tensor, int64_t element) {
  return 0.1f * static_cast<float>(rank + 1) +
         1e-3f * static_cast<float>(tensor) + 1e-7f * element;
}

TEST(DataParallel, AllReducedGradientsAreTheSumOnEveryReplicaInAnyBucketing) {
  // Tensor sizes around a bucket of 16 floats: several tensors share one,
  // a larger one travels alone.
  const std::vector<int64_t> sizes = {3, 5, 7, 40, 1, 16, 17};
  for (size_t bucketBytes : {size_t(64), kGradientBucketBytes}) {
    std::vector<std::vector<float>> results(3);
    runRanks(3, [&](Communicator &world) {
      std::vector<TensorPtr> owned;
      std::vector<pp_tensor *> gradients;
      for (size_t t = 0; t < sizes.size(); ++t) {
        pp_tensor *tensor = nullptr;
        ASSERT_EQ(pp_tensor_create(PP_DTYPE_F32, 1, &sizes[t], &tensor), PP_OK);
        for (int64_t i = 0; i < sizes[t]; ++i)
          static_cast<float *>(pp_tensor_data(tensor))[i] =
              gradientValue(world.rank(), t, i);
        owned.emplace_back(tensor);
        gradients.push_back(tensor);
      }
      allReduceGradients(world, gradients, bucketBytes);
      for (pp_tensor *tensor : gradients) {
        const float *values = static_cast<const float *>(pp_tensor_data(tensor));
        results[world.rank()].insert(results[world.rank()].end(), values,
                                     values + pp_tensor_numel(tensor));
      }
    });
    size_t flat = 0;
    for (size_t t = 0; t < sizes.size(); ++t)
      for (int64_t i = 0; i < sizes[t]; ++i, ++flat) {
        float expected = gradientValue(0, t, i) + gradientValue(1, t, i) +
                         gradientValue(2, t, i);
        EXPECT_NEAR(results[0][flat], expected, 1e-6f)
            << "tensor " << t << " element " << i;
      }
    // The same bits everywhere, so that the replicas stay equal.
    EXPECT_EQ(results[1], results[0]);
    EXPECT_EQ(results[2], results[0]);
  }
}

TEST(DataParallel, AShardedUpdateGivesTheUnshardedBitsWithAShareOfTheState) {
  // 3 replicas, 35 elements (not a multiple of 3), shares cutting through
  // parameters, the middle one without weight decay; AdamW and SGD with
  // momentum, clipping and a cosine learning rate, over three steps.
  const std::vector<int64_t> sizes = {10, 4, 21};
  const std::vector<bool> decayed = {true, false, true};
  LearningRateSchedule schedule{0.01, LearningRateDecay::Cosine, 1, 3, 0.001};
  for (const char *kind : {"adamw", "sgd"}) {
    OptimizerOptions options;
    options.kind = kind;
    options.momentum = 0.9f;
    options.weightDecay = 0.1f;
    auto train = [&](bool sharded, std::vector<std::vector<float>> &finals,
                     std::vector<int64_t> &stateBytes) {
      finals.assign(3, {});
      stateBytes.assign(3, 0);
      runRanks(3, [&](Communicator &world) {
        ParameterUpdate update(options, world, sharded);
        std::vector<std::vector<float>> values, gradients;
        for (size_t p = 0; p < sizes.size(); ++p) {
          values.emplace_back(sizes[p]);
          for (int64_t i = 0; i < sizes[p]; ++i)
            values[p][i] = 0.5f - 0.01f * static_cast<float>(i + 3 * p);
        }
        for (int step = 1; step <= 3; ++step) {
          std::vector<ParameterSlot> slots;
          gradients.assign(sizes.size(), {});
          for (size_t p = 0; p < sizes.size(); ++p) {
            gradients[p].resize(sizes[p]);
            for (int64_t i = 0; i < sizes[p]; ++i)
              gradients[p][i] = gradientValue(step, p, i);
            slots.push_back({"w" + std::to_string(p), values[p].data(),
                             gradients[p].data(), sizes[p], decayed[p]});
          }
          update.apply(slots, /*clip=*/0.5f, learningRateAt(schedule, step));
        }
        for (const std::vector<float> &parameter : values)
          finals[world.rank()].insert(finals[world.rank()].end(),
                                      parameter.begin(), parameter.end());
        stateBytes[world.rank()] = update.stateBytes();
      });
    };
    std::vector<std::vector<float>> whole, sharded;
    std::vector<int64_t> wholeState, shardedState;
    train(false, whole, wholeState);
    train(true, sharded, shardedState);
    for (int rank = 0; rank < 3; ++rank) {
      EXPECT_EQ(sharded[rank], whole[0]) << kind << " rank " << rank;
      EXPECT_EQ(whole[rank], whole[0]) << kind << " rank " << rank;
    }
    // AdamW keeps two moments per element, SGD one momentum buffer; shares
    // of ceil(35 / 3) = 12 elements: 12, 12 and 11.
    int64_t floats = std::string(kind) == "adamw" ? 2 : 1;
    EXPECT_EQ(wholeState, std::vector<int64_t>(3, 35 * floats * 4)) << kind;
    EXPECT_EQ(shardedState,
              (std::vector<int64_t>{12 * floats * 4, 12 * floats * 4,
                                    11 * floats * 4}))
        << kind;
  }
}

TEST(DataParallel, AllGatherConcatenatesInRankOrder) {
  runRanks(3, [](Communicator &world) {
    float mine[2] = {static_cast<float>(world.rank()), 10.0f + world.rank()};
    float all[6] = {};
    world.allGather(mine, 2, all);
    EXPECT_EQ(std::vector<float>(all, all + 6),
              (std::vector<float>{0, 10, 1, 11, 2, 12}));
  });
}

} // namespace
