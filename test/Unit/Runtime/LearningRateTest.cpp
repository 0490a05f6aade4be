//===- LearningRateTest.cpp - learning-rate schedules ---------------------===//

#include "runtime/training/LearningRate.h"

#include <gtest/gtest.h>

#include <vector>

using namespace pp::runtime;

namespace {

/// Peak 0.1, warmup 3, decay to 0.01 at step 10.
LearningRateSchedule schedule(LearningRateDecay decay) {
  return {0.1, decay, 3, 10, 0.01};
}

// The expected rates of steps 1..12 (peak 0.1, warmup 3, decay to 0.01 at
// step 10) come from this closed form in Python, rounded to float32
// (numpy):
//   t <= W: peak * t / W; constant: peak; t >= D: min; else, with
//   p = (t - W) / (D - W), min + (peak - min) * r, r = 0.5 * (1 + cos(pi p))
//   (cosine) or 1 - p (linear).
TEST(LearningRate, EachScheduleFollowsTheClosedForm) {
  const std::pair<LearningRateDecay, std::vector<float>> table[] = {
      {LearningRateDecay::Constant,
       {0.0333333351f, 0.0666666701f, 0.100000001f, 0.100000001f, 0.100000001f,
        0.100000001f, 0.100000001f, 0.100000001f, 0.100000001f, 0.100000001f,
        0.100000001f, 0.100000001f}},
      {LearningRateDecay::Cosine,
       {0.0333333351f, 0.0666666701f, 0.100000001f, 0.0955436006f,
        0.0830570385f, 0.0650134385f, 0.0449865572f, 0.0269429591f,
        0.0144564006f, 0.00999999978f, 0.00999999978f, 0.00999999978f}},
      {LearningRateDecay::Linear,
       {0.0333333351f, 0.0666666701f, 0.100000001f, 0.0871428549f,
        0.0742857158f, 0.061428573f, 0.0485714301f, 0.0357142873f,
        0.0228571426f, 0.00999999978f, 0.00999999978f, 0.00999999978f}}};
  for (const auto &[decay, expected] : table)
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_FLOAT_EQ(learningRateAt(schedule(decay), i + 1), expected[i])
          << "schedule " << static_cast<int>(decay) << " step " << i + 1;
}

TEST(LearningRate, BoundariesAreExact) {
  // No warmup: a constant schedule is the peak rounded once, as --lr was
  // before schedules; a decay starts one step below the peak.
  LearningRateSchedule constant{0.003, LearningRateDecay::Constant, 0, 5, 0};
  EXPECT_EQ(learningRateAt(constant, 1), 0.003f);
  LearningRateSchedule cosine{0.003, LearningRateDecay::Cosine, 0, 2, 0.001};
  EXPECT_EQ(learningRateAt(cosine, 1), static_cast<float>(0.002));
  EXPECT_EQ(learningRateAt(cosine, 2), 0.001f);
  // The warmup ends at the decay step: the peak there, the minimum after.
  LearningRateSchedule short_{0.5, LearningRateDecay::Linear, 2, 2, 0.25};
  EXPECT_EQ(learningRateAt(short_, 1), 0.25f);
  EXPECT_EQ(learningRateAt(short_, 2), 0.5f);
  EXPECT_EQ(learningRateAt(short_, 3), 0.25f);
}

TEST(LearningRate, InvalidSchedulesAreNamedByFlag) {
  using D = LearningRateDecay;
  const std::pair<LearningRateSchedule, std::string> table[] = {
      {{0.1, D::Cosine, 3, 10, 0.01}, ""},
      {{0.1, D::Cosine, 3, 10, 0.2},
       "--min-lr must be a number in [0, --lr = 0.1], got 0.2"},
      {{0.1, D::Linear, 11, 10, 0.01},
       "--warmup-steps must be in [0, 10] (--decay-steps, default --steps), "
       "got 11"},
      {{0.1, D::Constant, -1, 10, 0},
       "--warmup-steps must be in [0, 10] (--steps), got -1"},
      {{1e39, D::Constant, 0, 10, 0},
       "--lr must be a number in [0, 3.4e38], got 1e+39"},
      {{0.1, D::Cosine, 0, 0, 0}, "--decay-steps must be at least 1, got 0"}};
  for (const auto &[schedule, problem] : table)
    EXPECT_EQ(learningRateScheduleProblem(schedule), problem);
}

TEST(LearningRate, ParsesTheScheduleNames) {
  EXPECT_EQ(parseLearningRateDecay("cosine"), LearningRateDecay::Cosine);
  EXPECT_EQ(parseLearningRateDecay("linear"), LearningRateDecay::Linear);
  EXPECT_EQ(parseLearningRateDecay("constant"), LearningRateDecay::Constant);
  EXPECT_EQ(parseLearningRateDecay("step"), std::nullopt);
}

} // namespace
