//===- ShardedKernelsTest.cpp - collective kernels against whole tensors --===//
//
// Each collective kernel runs on 2 and 3 thread "devices" sharing a
// CollectiveGroup in memory, and is checked against the unsharded nn kernel
// on the whole tensor; every device must get the same bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Shapes.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using pp::runtime::CollectiveGroup;
using pp::runtime::numElements;

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;
using Shape = std::vector<int64_t>;

template <typename T>
Tensor tensorOf(pp_dtype dtype, const Shape &shape, const std::vector<T> &data) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(dtype, shape.size(), shape.data(), &tensor),
            PP_OK);
  EXPECT_EQ(pp_tensor_nbytes(tensor), data.size() * sizeof(T));
  std::memcpy(pp_tensor_data(tensor), data.data(), data.size() * sizeof(T));
  return Tensor(tensor);
}

Tensor floatsOf(const Shape &shape, const std::vector<float> &data) {
  return tensorOf(PP_DTYPE_F32, shape, data);
}

Tensor indicesOf(const Shape &shape, const std::vector<int64_t> &data) {
  return tensorOf(PP_DTYPE_I64, shape, data);
}

std::vector<float> values(const Tensor &tensor) {
  if (!tensor)
    return {};
  const float *data = static_cast<const float *>(pp_tensor_data(tensor.get()));
  return std::vector<float>(data, data + pp_tensor_numel(tensor.get()));
}

/// `count` values spread over about [-3, 3] in no particular order.
std::vector<float> wiggly(int64_t count, float phase = 0.0f) {
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i)
    data[i] = 3.0f * std::sin(1.7f * static_cast<float>(i) + phase);
  return data;
}

/// Device `rank`'s shard of `whole` (of `shape`) along `dim` with `blocks`
/// blocks over `devices` devices, written from the contract's definition:
/// block k's elements [rank n / (b T), (rank + 1) n / (b T)).
std::vector<float> shardOf(const std::vector<float> &whole, const Shape &shape,
                           int64_t dim, int64_t blocks, int64_t devices,
                           int64_t rank) {
  int64_t outer = numElements(Shape(shape.begin(), shape.begin() + dim));
  int64_t inner = numElements(Shape(shape.begin() + dim + 1, shape.end()));
  int64_t block = shape[dim] / blocks, piece = block / devices;
  std::vector<float> shard;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < blocks; ++k)
      for (int64_t j = 0; j < piece; ++j)
        for (int64_t i = 0; i < inner; ++i)
          shard.push_back(
              whole[(o * shape[dim] + k * block + rank * piece + j) * inner +
                    i]);
  return shard;
}

/// The devices of one group as threads sharing memory: allGather writes
/// every member's bytes into a board and waits for all of them.
class ThreadGroups {
public:
  explicit ThreadGroups(int64_t size) : size(size), slots(size) {}

  class Member : public CollectiveGroup {
  public:
    Member(ThreadGroups &groups, int64_t rank) : groups(groups), me(rank) {}
    int64_t rank() const override { return me; }
    int64_t size() const override { return groups.size; }
    void allGather(const void *mine, size_t bytes, void *all,
                   pp::runtime::Queue &) override {
      const char *data = static_cast<const char *>(mine);
      groups.slots[me].assign(data, data + bytes);
      groups.barrier();
      for (int64_t q = 0; q < groups.size; ++q)
        std::memcpy(static_cast<char *>(all) + q * bytes,
                    groups.slots[q].data(), bytes);
      groups.barrier();
    }

  private:
    ThreadGroups &groups;
    int64_t me;
  };

  /// Runs `body(frame)` on one thread per device, each frame's collectives
  /// its member of the group.
  void run(const std::function<void(pp_frame &, int64_t rank)> &body) {
    std::vector<std::thread> threads;
    for (int64_t rank = 0; rank < size; ++rank)
      threads.emplace_back([&, rank] {
        Member member(*this, rank);
        pp_frame frame;
        frame.collectives = &member;
        body(frame, rank);
      });
    for (std::thread &thread : threads)
      thread.join();
  }

private:
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex);
    int64_t generation = passed;
    if (++arrived == size) {
      arrived = 0;
      ++passed;
      changed.notify_all();
      return;
    }
    changed.wait(lock, [&] { return passed != generation; });
  }

  int64_t size;
  std::vector<std::vector<char>> slots;
  std::mutex mutex;
  std::condition_variable changed;
  int64_t arrived = 0, passed = 0;
};

/// Runs `check(devices)` for groups of 2 and 3 devices.
void forGroupSizes(const std::function<void(int64_t)> &check) {
  for (int64_t devices : {2, 3}) {
    SCOPED_TRACE("group of " + std::to_string(devices));
    check(devices);
  }
}

/// The result of `kernel` on every device, each checked to have no error.
std::vector<std::vector<float>>
onEveryDevice(int64_t devices,
              const std::function<pp_tensor *(pp_frame &, int64_t)> &kernel) {
  std::vector<std::vector<float>> results(devices);
  std::vector<std::string> errors(devices);
  ThreadGroups(devices).run([&](pp_frame &frame, int64_t rank) {
    Tensor result(kernel(frame, rank));
    errors[rank] = frame.error;
    results[rank] = values(result);
  });
  for (int64_t rank = 0; rank < devices; ++rank)
    EXPECT_EQ(errors[rank], "") << "device " << rank;
  return results;
}

/// Every device's result has the same bits as the first's.
void expectSameBits(const std::vector<std::vector<float>> &results) {
  for (size_t rank = 1; rank < results.size(); ++rank) {
    ASSERT_EQ(results[rank].size(), results[0].size());
    EXPECT_EQ(std::memcmp(results[rank].data(), results[0].data(),
                          results[0].size() * sizeof(float)),
              0)
        << "device " << rank << " differs from device 0";
  }
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                float tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance * (1 + std::fabs(want[i])))
        << "element " << i;
}

TEST(ShardedKernels, AllReduceCombinesInGroupOrderOnEveryDevice) {
  forGroupSizes([](int64_t devices) {
    Shape shape = {3, 5};
    std::vector<std::vector<float>> inputs;
    for (int64_t rank = 0; rank < devices; ++rank)
      inputs.push_back(wiggly(15, 0.3f * rank));
    for (int reduction : {0, 1, 2}) {
      std::vector<std::vector<float>> results =
          onEveryDevice(devices, [&](pp_frame &frame, int64_t rank) {
            Tensor input = floatsOf(shape, inputs[rank]);
            return pp_cpu_all_reduce(&frame, input.get(), "tp", reduction);
          });
      expectSameBits(results);
      for (int64_t i = 0; i < 15; ++i) {
        double sum = 0;
        float max = inputs[0][i], min = inputs[0][i];
        for (int64_t rank = 0; rank < devices; ++rank) {
          sum += inputs[rank][i];
          max = std::max(max, inputs[rank][i]);
          min = std::min(min, inputs[rank][i]);
        }
        float want = reduction == 0   ? static_cast<float>(sum)
                     : reduction == 1 ? max
                                      : min;
        EXPECT_EQ(results[0][i], want) << "reduction " << reduction;
      }
    }
  });
}

TEST(ShardedKernels, GatherSliceAndReduceScatterFollowTheBlockLayout) {
  forGroupSizes([](int64_t devices) {
    for (int64_t blocks : {1, 3}) {
      for (int64_t dim : {0, 1}) {
        SCOPED_TRACE("blocks " + std::to_string(blocks) + ", dim " +
                     std::to_string(dim));
        Shape whole = {2, 2};
        whole[dim] = 2 * blocks * devices;
        whole.push_back(3);
        int64_t count = numElements(whole);
        std::vector<float> table = wiggly(count);
        std::vector<std::vector<float>> gathered =
            onEveryDevice(devices, [&](pp_frame &frame, int64_t rank) {
              Shape local = whole;
              local[dim] /= devices;
              Tensor shard = floatsOf(
                  local, shardOf(table, whole, dim, blocks, devices, rank));
              return pp_cpu_all_gather(&frame, shard.get(), "tp", blocks, dim);
            });
        for (const std::vector<float> &result : gathered)
          EXPECT_EQ(result, table);

        std::vector<std::vector<float>> sliced =
            onEveryDevice(devices, [&](pp_frame &frame, int64_t) {
              Tensor input = floatsOf(whole, table);
              return pp_cpu_shard_slice(&frame, input.get(), "tp", blocks, dim);
            });
        for (int64_t rank = 0; rank < devices; ++rank)
          EXPECT_EQ(sliced[rank],
                    shardOf(table, whole, dim, blocks, devices, rank));

        std::vector<std::vector<float>> partials;
        std::vector<float> sum(count);
        for (int64_t rank = 0; rank < devices; ++rank)
          partials.push_back(wiggly(count, 0.5f * rank));
        for (int64_t i = 0; i < count; ++i) {
          double total = 0;
          for (int64_t rank = 0; rank < devices; ++rank)
            total += partials[rank][i];
          sum[i] = static_cast<float>(total);
        }
        std::vector<std::vector<float>> scattered =
            onEveryDevice(devices, [&](pp_frame &frame, int64_t rank) {
              Tensor input = floatsOf(whole, partials[rank]);
              return pp_cpu_reduce_scatter(&frame, input.get(), "tp",
                                           blocks, dim, 0);
            });
        for (int64_t rank = 0; rank < devices; ++rank)
          EXPECT_EQ(scattered[rank],
                    shardOf(sum, whole, dim, blocks, devices, rank));
      }
    }
  });
}

TEST(ShardedKernels, ShardedGatherSumsToTheGatherOfTheWholeTable) {
  forGroupSizes([](int64_t devices) {
    for (int64_t axis : {0, 1}) {
      SCOPED_TRACE("axis " + std::to_string(axis));
      Shape whole = {3, 3};
      whole[axis] = 4 * devices;
      std::vector<float> table = wiggly(numElements(whole));
      int64_t size = whole[axis];
      // Every row, the last by a negative index, and repeats.
      std::vector<int64_t> indices = {0, size - 1, -1, 1, -size, 1};
      Shape indexShape = {2, 3};
      pp_frame plain;
      Tensor wholeTable = floatsOf(whole, table);
      Tensor index = indicesOf(indexShape, indices);
      Tensor want(pp_cpu_gather(&plain, wholeTable.get(), index.get(), axis));
      ASSERT_EQ(plain.error, "");
      std::vector<float> dy = wiggly(pp_tensor_numel(want.get()), 0.7f);
      Tensor grad = floatsOf(pp::runtime::shapeOf(want.get()), dy);
      Tensor wantGrad(pp_cpu_gather_grad(&plain, grad.get(), index.get(), axis,
                                         whole.size(), whole.data()));
      ASSERT_EQ(plain.error, "");

      Shape local = whole;
      local[axis] /= devices;
      std::vector<std::vector<float>> pieces =
          onEveryDevice(devices, [&](pp_frame &frame, int64_t rank) {
            Tensor shard = floatsOf(
                local, shardOf(table, whole, axis, 1, devices, rank));
            Tensor ids = indicesOf(indexShape, indices);
            return pp_cpu_sharded_gather(&frame, shard.get(), ids.get(), "tp", axis);
          });
      std::vector<float> summed(pieces[0].size(), 0.0f);
      for (const std::vector<float> &piece : pieces)
        for (size_t i = 0; i < piece.size(); ++i)
          summed[i] += piece[i];
      EXPECT_EQ(summed, values(want));

      std::vector<std::vector<float>> grads =
          onEveryDevice(devices, [&](pp_frame &frame, int64_t) {
            Tensor g = floatsOf(pp::runtime::shapeOf(want.get()), dy);
            Tensor ids = indicesOf(indexShape, indices);
            return pp_cpu_sharded_gather_grad(&frame, g.get(), ids.get(), "tp",
                                              axis, local.size(),
                                              local.data());
          });
      for (int64_t rank = 0; rank < devices; ++rank)
        EXPECT_EQ(grads[rank], shardOf(values(wantGrad), whole, axis, 1,
                                       devices, rank));
    }
  });
}

TEST(ShardedKernels, ShardedGatherRefusesIndicesOutsideTheWholeTable) {
  for (int64_t outside : {8, -9}) {
    std::vector<std::string> errors(2);
    ThreadGroups(2).run([&](pp_frame &frame, int64_t rank) {
      Tensor shard = floatsOf({4, 2}, wiggly(8));
      Tensor ids = indicesOf({2}, {1, outside});
      Tensor result(pp_cpu_sharded_gather(&frame, shard.get(), ids.get(), "tp", 0));
      EXPECT_FALSE(result);
      errors[rank] = frame.error;
    });
    for (const std::string &error : errors)
      EXPECT_NE(error.find("sharded_gather: index " + std::to_string(outside) +
                           " (element 1) is outside [-8, 8)"),
                std::string::npos)
          << error;
  }
}

TEST(ShardedKernels, ShardedCrossEntropyMatchesTheWholeLogits) {
  forGroupSizes([](int64_t devices) {
    int64_t classes = 4 * devices;
    Shape whole = {2, 3, classes};
    std::vector<float> logits = wiggly(numElements(whole));
    // Labels on every device's piece, and two ignored positions.
    std::vector<int64_t> labels = {0, -100, classes - 1, 5, -100, 2};
    Shape labelShape = {2, 3};
    pp_frame plain;
    Tensor z = floatsOf(whole, logits);
    Tensor y = indicesOf(labelShape, labels);
    Tensor want(pp_cpu_cross_entropy(&plain, z.get(), y.get(), -100, 1));
    Tensor scale = floatsOf({}, {0.7f});
    Tensor wantGrad(
        pp_cpu_cross_entropy_grad(&plain, scale.get(), z.get(), y.get(), -100, 1));
    ASSERT_EQ(plain.error, "");

    Shape local = {2, 3, 4};
    auto shard = [&](int64_t rank) {
      return floatsOf(local, shardOf(logits, whole, 2, 1, devices, rank));
    };
    std::vector<std::vector<float>> losses =
        onEveryDevice(devices, [&](pp_frame &frame, int64_t rank) {
          Tensor piece = shard(rank);
          Tensor ids = indicesOf(labelShape, labels);
          return pp_cpu_sharded_cross_entropy(&frame, piece.get(), ids.get(),
                                              "tp", -100);
        });
    expectSameBits(losses);
    expectNear(losses[0], values(want), 1e-6f);

    std::vector<std::vector<float>> grads =
        onEveryDevice(devices, [&](pp_frame &frame, int64_t rank) {
          Tensor piece = shard(rank);
          Tensor ids = indicesOf(labelShape, labels);
          Tensor g = floatsOf({}, {0.7f});
          return pp_cpu_sharded_cross_entropy_grad(&frame, g.get(), piece.get(),
                                                   ids.get(), "tp", -100);
        });
    for (int64_t rank = 0; rank < devices; ++rank) {
      std::vector<float> wantPiece =
          shardOf(values(wantGrad), whole, 2, 1, devices, rank);
      expectNear(grads[rank], wantPiece, 1e-6f);
      for (int64_t c = 0; c < 4; ++c) // Position 1 is ignored.
        EXPECT_EQ(grads[rank][4 + c], 0.0f);
    }
  });
}

TEST(ShardedKernels, ShardedCrossEntropyRefusesLabelsOutsideTheClasses) {
  std::vector<std::string> errors(2);
  ThreadGroups(2).run([&](pp_frame &frame, int64_t rank) {
    Tensor piece = floatsOf({2, 3}, wiggly(6));
    Tensor ids = indicesOf({2}, {5, 6});
    Tensor loss(
        pp_cpu_sharded_cross_entropy(&frame, piece.get(), ids.get(), "tp",
                                     -100));
    EXPECT_FALSE(loss);
    errors[rank] = frame.error;
  });
  for (const std::string &error : errors)
    EXPECT_NE(error.find("sharded_cross_entropy: label 6 (position 1) is "
                         "outside [0, 6)"),
              std::string::npos)
        << error;
}

TEST(ShardedKernels, ACollectiveWithoutAGroupFailsTheFrame) {
  pp_frame frame;
  Tensor input = floatsOf({2}, {1.0f, 2.0f});
  Tensor result(pp_cpu_all_reduce(&frame, input.get(), "tp", 0));
  EXPECT_FALSE(result);
  EXPECT_NE(frame.error.find("all_reduce: the stage function runs a "
                             "collective over the mesh axes 'tp', but the "
                             "runtime gave its frame no group over them "
                             "(none at all)"),
            std::string::npos)
      << frame.error;
}

/// A group of one device: every collective over it is the identity.
class OneDevice : public CollectiveGroup {
public:
  int64_t rank() const override { return 0; }
  int64_t size() const override { return 1; }
  void allGather(const void *mine, size_t bytes, void *all,
                   pp::runtime::Queue &) override {
    std::memcpy(all, mine, bytes);
  }
};

TEST(ShardedKernels, ACollectiveRunsOnTheGroupOfItsAxes) {
  // Over "tp" the threads' values add up; over "dp" (a group of one device
  // each) every thread keeps its own.
  ThreadGroups tensorParallel(3);
  std::vector<std::vector<float>> overTp(3), overDp(3);
  tensorParallel.run([&](pp_frame &frame, int64_t rank) {
    OneDevice alone;
    frame.collectiveGroups = {{"tp", frame.collectives}, {"dp", &alone}};
    frame.collectives = nullptr;
    Tensor input = floatsOf({2}, {1.0f + rank, 10.0f * rank});
    overTp[rank] = values(Tensor(pp_cpu_all_reduce(&frame, input.get(), "tp", 0)));
    overDp[rank] = values(Tensor(pp_cpu_all_reduce(&frame, input.get(), "dp", 0)));
    EXPECT_EQ(frame.error, "");
  });
  for (int64_t rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(overTp[rank], (std::vector<float>{6.0f, 30.0f}));
    EXPECT_EQ(overDp[rank],
              (std::vector<float>{1.0f + rank, 10.0f * rank}));
  }
}

TEST(ShardedKernels, ACollectiveOverAxesWithoutAGroupNamesThem) {
  OneDevice alone;
  pp_frame frame;
  frame.collectiveGroups = {{"tp", &alone}};
  // Keyed groups leave the unkeyed one out.
  frame.collectives = &alone;
  Tensor input = floatsOf({2}, {1.0f, 2.0f});
  Tensor result(pp_cpu_all_gather(&frame, input.get(), "dp,tp", 1, 0));
  EXPECT_FALSE(result);
  EXPECT_NE(frame.error.find("all_gather: the stage function runs a "
                             "collective over the mesh axes 'dp,tp', but the "
                             "runtime gave its frame no group over them (it "
                             "has groups over 'tp')"),
            std::string::npos)
      << frame.error;
}

} // namespace
