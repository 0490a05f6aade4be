//===- DataParallelTest.cpp - gradient sums and sharded updates -----------===//
//
// Replicas of a stage as thread ranks: bucketed gradient all-reduces, and
// ZeRO-1 updates that give the unsharded update's bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/CommunicatorCollectives.h"
#include "runtime/training/Backend.h"
#include "runtime/training/GradientReduction.h"
#include "runtime/training/LearningRate.h"
#include "runtime/training/ParameterUpdate.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

/// A value that differs per rank, tensor and element, with fractional bits
/// so that the order of additions would show.
float gradientValue(int rank, size_t tensor, int64_t element) {
  return 0.1f * static_cast<float>(rank + 1) +
         1e-3f * static_cast<float>(tensor) + 1e-7f * element;
}

/// Gradient tensors of `sizes` on `rank`, filled for step `step`.
std::vector<TensorPtr> makeGradients(const std::vector<int64_t> &sizes,
                                     int rank, int step) {
  std::vector<TensorPtr> gradients;
  for (size_t t = 0; t < sizes.size(); ++t) {
    pp_tensor *tensor = nullptr;
    EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, 1, &sizes[t], &tensor), PP_OK);
    for (int64_t i = 0; i < sizes[t]; ++i)
      static_cast<float *>(pp_tensor_data(tensor))[i] =
          gradientValue(rank + step, t, i);
    gradients.emplace_back(tensor);
  }
  return gradients;
}

std::vector<pp_tensor *> pointersTo(const std::vector<TensorPtr> &owned) {
  std::vector<pp_tensor *> pointers;
  for (const TensorPtr &tensor : owned)
    pointers.push_back(tensor.get());
  return pointers;
}

/// The values of `tensors`, concatenated.
std::vector<float> valuesOf(const std::vector<TensorPtr> &tensors) {
  std::vector<float> values;
  for (const TensorPtr &tensor : tensors) {
    const float *data = static_cast<const float *>(pp_tensor_data(tensor.get()));
    values.insert(values.end(), data, data + pp_tensor_numel(tensor.get()));
  }
  return values;
}

// Tensor sizes around a bucket of 16 floats: several tensors share one, a
// larger one travels alone; buckets {0, 1, 2}, {3}, {4}, {5}, {6}.
const std::vector<int64_t> kSizes = {3, 5, 7, 40, 1, 16, 17};
const std::vector<std::vector<size_t>> kBuckets = {
    {0, 1, 2}, {3}, {4}, {5}, {6}};

TEST(DataParallel, ReducedGradientsAreTheSumOnEveryReplicaInAnyBucketing) {
  for (size_t bucketBytes : {size_t(64), kGradientBucketBytes}) {
    std::vector<std::vector<float>> results(3);
    runRanks(3, [&](Communicator &world) {
      std::vector<TensorPtr> gradients = makeGradients(kSizes, world.rank(), 0);
      CommunicatorCollectives buffers(world);
      GradientReducer reducer(buffers, pointersTo(gradients), bucketBytes,
                              {}, hostDevice().defaultQueue());
      reducer.begin();
      reducer.finish();
      results[world.rank()] = valuesOf(gradients);
    });
    size_t flat = 0;
    for (size_t t = 0; t < kSizes.size(); ++t)
      for (int64_t i = 0; i < kSizes[t]; ++i, ++flat) {
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

TEST(DataParallel, ABf16ReductionRoundsTheGradientsAndTheirSums) {
  // Whole gradients (all-reduced) and, as at ZeRO-2, gradients one after
  // another in a flat buffer whose shares of 30 elements the 3 ranks own
  // (reduce-scattered): each sum is the bf16 rounding of the rank-order
  // sum of the gradients rounded to bf16, on every rank that keeps it,
  // and half the f32 bytes travel.
  const int64_t share = 30;
  for (bool sharded : {false, true}) {
    std::vector<std::vector<float>> results(3);
    runRanks(3, [&](Communicator &world) {
      std::vector<TensorPtr> gradients = makeGradients(kSizes, world.rank(), 0);
      GradientShares shares;
      for (int64_t t = 0, offset = 0; sharded && t < int64_t(kSizes.size());
           offset += kSizes[t++]) {
        shares.flatOffsets.push_back(offset);
        shares.shareSizes.push_back(share);
      }
      CommunicatorCollectives buffers(world);
      GradientReducer reducer(buffers, pointersTo(gradients), 64, shares,
                              hostDevice().defaultQueue(), ReduceDtype::BF16,
                              &cpuStateKernels());
      EXPECT_EQ(reducer.bytesPerStep(), 89 * sizeof(BFloat16));
      reducer.begin();
      reducer.finish();
      results[world.rank()] = valuesOf(gradients);
    });
    int64_t flat = 0;
    for (size_t t = 0; t < kSizes.size(); ++t)
      for (int64_t i = 0; i < kSizes[t]; ++i, ++flat) {
        float sum = 0;
        for (int rank = 0; rank < 3; ++rank) {
          float rounded = toFloat(toBFloat16(gradientValue(rank, t, i)));
          sum = rank == 0 ? rounded : sum + rounded;
        }
        float expected = toFloat(toBFloat16(sum));
        for (int rank = 0; rank < 3; ++rank) {
          if (sharded && flat / share != rank)
            continue;
          EXPECT_EQ(results[rank][flat], expected)
              << (sharded ? "sharded " : "") << "tensor " << t << " element "
              << i << " on rank " << rank;
        }
      }
  }
}

TEST(DataParallel, AnOverlappedReductionGivesTheBlockingBits) {
  // Over two steps, the gradients become final one by one in an order of
  // their own (as a backward hands them over), the last bucket while the
  // others are pending; the result is each bucket's blocking all-reduce.
  runRanks(3, [&](Communicator &world) {
    int rank = world.rank();
    std::vector<TensorPtr> gradients = makeGradients(kSizes, rank, 0);
    CommunicatorCollectives buffers(world);
    GradientReducer reducer(buffers, pointersTo(gradients), 64, {},
                            hostDevice().defaultQueue());
    for (int step = 1; step <= 2; ++step) {
      reducer.begin();
      std::vector<TensorPtr> final = makeGradients(kSizes, rank, step);
      double before = reducer.reducingSeconds();
      for (size_t t : {size_t(6), size_t(2), size_t(5), size_t(0)}) {
        std::memcpy(pp_tensor_data(gradients[t].get()),
                    pp_tensor_data(final[t].get()),
                    pp_tensor_nbytes(final[t].get()));
        reducer.ready(t);
        if (t == 6) {
          // The communication thread reduces the last bucket now.
          auto deadline =
              std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (reducer.reducingSeconds() == before &&
                 std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          EXPECT_GT(reducer.reducingSeconds(), before) << "step " << step;
        }
      }
      // The rest become final when the backward is over.
      for (size_t t : {size_t(1), size_t(3), size_t(4)})
        std::memcpy(pp_tensor_data(gradients[t].get()),
                    pp_tensor_data(final[t].get()),
                    pp_tensor_nbytes(final[t].get()));
      reducer.finish();
      for (const std::vector<size_t> &bucket : kBuckets) {
        std::vector<float> blocking;
        for (size_t t : bucket) {
          const float *values =
              static_cast<const float *>(pp_tensor_data(final[t].get()));
          blocking.insert(blocking.end(), values, values + kSizes[t]);
        }
        world.allReduceSum(blocking.data(), blocking.size());
        std::vector<float> overlapped;
        for (size_t t : bucket) {
          const float *values =
              static_cast<const float *>(pp_tensor_data(gradients[t].get()));
          overlapped.insert(overlapped.end(), values, values + kSizes[t]);
        }
        EXPECT_EQ(overlapped, blocking) << "step " << step << " bucket of "
                                        << bucket.front();
      }
    }
  });
}

TEST(DataParallel, AShardedUpdateGivesTheUnshardedBitsWithAShareOfTheState) {
  // 3 replicas, 35 elements (not a multiple of 3), shares cutting through
  // parameters, the middle one without weight decay (a rank-1 parameter);
  // AdamW and SGD with momentum, clipping and a cosine learning rate, over
  // three steps.
  const std::vector<int64_t> sizes = {10, 4, 21};
  const std::vector<int64_t> ranks = {2, 1, 2};
  LearningRateSchedule schedule{0.01, LearningRateDecay::Cosine, 1, 3, 0.001};
  for (const char *kind : {"adamw", "sgd"}) {
    OptimizerOptions options;
    options.kind = kind;
    options.momentum = 0.9f;
    options.weightDecay = 0.1f;
    using States = std::map<std::string, ParameterState>;
    auto train = [&](bool sharded, std::vector<std::vector<float>> &finals,
                     std::vector<int64_t> &stateBytes,
                     std::vector<States> &gathered) {
      finals.assign(3, {});
      stateBytes.assign(3, 0);
      gathered.assign(3, {});
      runRanks(3, [&](Communicator &world) {
        std::vector<FlatParameter> laidOut;
        for (size_t p = 0; p < sizes.size(); ++p)
          laidOut.push_back({"w" + std::to_string(p), ranks[p], sizes[p]});
        FlatParameters flat(laidOut, 3, hostDevice().defaultQueue());
        CommunicatorCollectives buffers(world);
        ParameterUpdate update(options, flat, world, buffers,
                               sharded ? 1 : 0, hostStateDevice());
        for (int64_t i = 0; i < flat.size(); ++i)
          flat.values()[i] = 0.5f - 0.01f * static_cast<float>(i);
        for (int step = 1; step <= 3; ++step) {
          for (const FlatParameter &parameter : flat.parameters())
            for (int64_t i = 0; i < parameter.count; ++i)
              flat.gradients()[parameter.offset + i] =
                  gradientValue(step, parameter.offset, i);
          update.apply(/*clip=*/0.5f, learningRateAt(schedule, step));
        }
        finals[world.rank()].assign(flat.values(),
                                    flat.values() + flat.size());
        stateBytes[world.rank()] = update.stateBytes();
        gathered[world.rank()] = update.gatherState();
      });
    };
    std::vector<std::vector<float>> whole, sharded;
    std::vector<int64_t> wholeState, shardedState;
    std::vector<States> wholeStates, shardedStates;
    train(false, whole, wholeState, wholeStates);
    train(true, sharded, shardedState, shardedStates);
    for (int rank = 0; rank < 3; ++rank) {
      EXPECT_EQ(sharded[rank], whole[0]) << kind << " rank " << rank;
      EXPECT_EQ(whole[rank], whole[0]) << kind << " rank " << rank;
      // Gathered, the shares are the whole state, on every rank.
      ASSERT_EQ(shardedStates[rank].size(), sizes.size());
      for (const auto &[name, state] : wholeStates[0]) {
        EXPECT_EQ(shardedStates[rank].at(name).steps, 3) << name;
        EXPECT_EQ(shardedStates[rank].at(name).buffers, state.buffers)
            << kind << " " << name << " rank " << rank;
      }
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

TEST(DataParallel, ShardedGradientSquaresAreTheWholeSumsBits) {
  // 3 replicas at ZeRO-2 over 35 elements: shares of 12 cut w2 (elements
  // 14 to 34) over all three ranks and w0 | w1 at 12.
  const std::vector<int64_t> sizes = {10, 4, 21};
  runRanks(3, [&](Communicator &world) {
    std::vector<FlatParameter> laidOut;
    for (size_t p = 0; p < sizes.size(); ++p)
      laidOut.push_back({"w" + std::to_string(p), 2, sizes[p]});
    FlatParameters flat(laidOut, 3, hostDevice().defaultQueue());
    CommunicatorCollectives buffers(world);
    ParameterUpdate update(OptimizerOptions{}, flat, world, buffers, 2,
                           hostStateDevice());
    for (const FlatParameter &parameter : flat.parameters())
      for (int64_t i = 0; i < parameter.count; ++i)
        flat.gradients()[parameter.offset + i] =
            gradientValue(1, parameter.offset, i) * (1.0f + 1e-3f * i);
    std::map<std::string, double> squares = update.gradientSquares();
    // Below ZeRO-2 every rank holds the whole gradients and walks the same
    // shares itself: every sum, the same bits.
    ParameterUpdate unsharded(OptimizerOptions{}, flat, world, buffers, 1,
                              hostStateDevice());
    std::map<std::string, double> everySum = unsharded.gradientSquares();
    ASSERT_EQ(everySum.size(), sizes.size());
    // Each sum on the rank holding its last element: w0 on 0, w1 and w2
    // on 1 and 2.
    std::map<std::string, int> lastOn = {{"w0", 0}, {"w1", 1}, {"w2", 2}};
    for (const FlatParameter &parameter : flat.parameters()) {
      double whole = 0;
      for (int64_t i = 0; i < parameter.count; ++i) {
        float g = gradientValue(1, parameter.offset, i) * (1.0f + 1e-3f * i);
        whole += static_cast<double>(g) * g;
      }
      bool here = lastOn.at(parameter.name) == world.rank();
      ASSERT_EQ(squares.count(parameter.name), here ? 1u : 0u)
          << parameter.name << " on rank " << world.rank();
      if (here) {
        EXPECT_EQ(squares.at(parameter.name), whole) << parameter.name;
      }
      EXPECT_EQ(everySum.at(parameter.name), whole) << parameter.name;
    }
  });
}

TEST(DataParallel, ZeroLevelsTwoAndThreeKeepAShareBetweenUses) {
  // 3 replicas over 3 x 4096 elements (pages of their own): after a step
  // ZeRO-2 holds a third of the gradients, ZeRO-3 also a third of the
  // values until they are gathered again; every level updates alike.
  const int64_t elements = 3 * 4096;
  std::vector<std::vector<float>> finals(4);
  for (int level = 0; level <= 3; ++level)
    runRanks(3, [&](Communicator &world) {
      FlatParameters flat({{"w", 2, elements}}, 3,
                          hostDevice().defaultQueue());
      CommunicatorCollectives buffers(world);
      ParameterUpdate update(OptimizerOptions{}, flat, world, buffers,
                             level, hostStateDevice());
      for (int64_t i = 0; i < elements; ++i) {
        flat.values()[i] = 0.5f - 1e-5f * i;
        flat.gradients()[i] = gradientValue(0, 0, i);
      }
      update.apply(1.0f, 0.1f);
      int64_t whole = elements * 4;
      EXPECT_EQ(flat.residentGradientBytes(),
                level >= 2 ? whole / 3 : whole) << "level " << level;
      if (level == 3) {
        update.releaseValues();
        EXPECT_EQ(flat.residentValueBytes(), whole / 3);
        update.gatherValues(buffers, hostDevice().defaultQueue());
      }
      EXPECT_EQ(flat.residentValueBytes(), whole) << "level " << level;
      if (world.rank() == 2)
        finals[level].assign(flat.values(), flat.values() + elements);
    });
  for (int level = 1; level <= 3; ++level)
    EXPECT_EQ(finals[level], finals[0]) << "level " << level;
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
