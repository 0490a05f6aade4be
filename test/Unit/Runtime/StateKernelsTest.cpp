//===- StateKernelsTest.cpp - the host's work on training state -----------===//

#include "runtime/training/StateKernels.h"

#include "runtime/core/ThreadPool.h"
#include "runtime/training/OptimizerOptions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace pp::runtime;

namespace {

TEST(StateKernels, SumsOfSquaresStartFromTheirInitialAndAddInElementOrder) {
  std::vector<float> values = {0.1f, -3.0f, 1e-4f, 7.5f, 0.3f, 2.0f};
  StateDevice host = hostStateDevice();
  // A range that continues an earlier share's running sum, an empty one
  // and one over the rest.
  std::vector<double> sums = host.kernels.sumSquares(
      host.queue, values.data(), {{0, 3, 0.25}, {3, 3, 1.5}, {3, 6, 0.0}});
  double first = 0.25, last = 0.0;
  for (int i = 0; i < 3; ++i)
    first += static_cast<double>(values[i]) * values[i];
  for (int i = 3; i < 6; ++i)
    last += static_cast<double>(values[i]) * values[i];
  EXPECT_EQ(sums, (std::vector<double>{first, 1.5, last}));
}

TEST(StateKernels, TheLossAddsUpInDoubleAndGradientsInPlace) {
  StateDevice host = hostStateDevice();
  double sum = 0;
  for (float loss : {0.1f, 0.2f, 0.3f})
    host.kernels.accumulateScalar(host.queue, &sum, &loss);
  EXPECT_EQ(sum, static_cast<double>(0.1f) + 0.2f + 0.3f);
  std::vector<float> gradient = {1, 2, 3}, contribution = {0.5f, -2, 4};
  host.kernels.accumulate(host.queue, gradient.data(), contribution.data(),
                          3);
  host.kernels.scale(host.queue, gradient.data(), 3, 0.5f);
  EXPECT_EQ(gradient, (std::vector<float>{0.75f, 0, 3.5f}));
}

/// Parameters, gradients and AdamW's two buffers after two steps over two
/// segments of `n` elements, with `threads` threads, and the gradients
/// accumulated and scaled on the way.
std::vector<float> adamWStepsWith(int threads, int64_t n) {
  setThreadCount(threads);
  StateDevice host = hostStateDevice();
  std::vector<float> values(n), gradients(n), first(n, 0.0f), second(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    values[i] = std::sin(0.37f * static_cast<float>(i));
    gradients[i] = std::cos(1.3f * static_cast<float>(i)) * 1e-2f;
  }
  std::vector<float> contribution = gradients;
  host.kernels.accumulate(host.queue, gradients.data(), contribution.data(), n);
  host.kernels.scale(host.queue, gradients.data(), n, 0.5f);
  OptimizerOptions options;
  options.kind = "adamw";
  for (int64_t step = 1; step <= 2; ++step)
    host.kernels.stepOptimizer(
        host.queue, options, {{0, n / 3, 0.1f, step}, {n / 3, n, 0.0f, step}},
        values.data(), gradients.data(), {first.data(), second.data()}, 1e-3f);
  setThreadCount(1);
  values.insert(values.end(), first.begin(), first.end());
  values.insert(values.end(), second.begin(), second.end());
  values.insert(values.end(), gradients.begin(), gradients.end());
  return values;
}

TEST(StateKernels, ElementwiseUpdatesGiveTheSameBitsOnTheThreadPool) {
  // Several chunks of the pool's 16384 elements, and a tail.
  const int64_t n = 100003;
  std::vector<float> one = adamWStepsWith(1, n), three = adamWStepsWith(3, n);
  ASSERT_EQ(one.size(), three.size());
  EXPECT_EQ(0, std::memcmp(one.data(), three.data(), one.size() * 4));
}

} // namespace
