//===- StateKernelsTest.cpp - the host's work on training state -----------===//

#include "runtime/training/StateKernels.h"

#include <gtest/gtest.h>

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

} // namespace
