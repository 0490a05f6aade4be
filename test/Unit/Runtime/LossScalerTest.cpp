//===- LossScalerTest.cpp - dynamic loss scaling's rules ------------------===//

#include "runtime/training/LossScaler.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace pp::runtime;

namespace {

TEST(LossScaler, StartsAtTheInitialScale) {
  LossScaler scaler({1024.0, 3});
  EXPECT_EQ(scaler.scale(), 1024.0);
  EXPECT_EQ(scaler.state().cleanSteps, 0);
}

TEST(LossScaler, SkipsAnOverflowedStepAndHalvesTheScale) {
  LossScaler scaler({1024.0, 3});
  EXPECT_TRUE(scaler.update(true));
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.state().cleanSteps, 0) << "an overflow resets the count";
}

TEST(LossScaler, DoublesTheScaleAfterGrowthIntervalCleanStepsInARow) {
  LossScaler scaler({1024.0, 3});
  EXPECT_TRUE(scaler.update(true));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 1024.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 2048.0);
  EXPECT_EQ(scaler.state().cleanSteps, 0);
  // An overflow in between starts the count again.
  EXPECT_TRUE(scaler.update(true));
  EXPECT_FALSE(scaler.update(false));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 1024.0);
}

TEST(LossScaler, ContinuesFromARestoredState) {
  LossScaler scaler({65536.0, 2000});
  scaler.restore({256.0, 1999});
  EXPECT_EQ(scaler.scale(), 256.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 512.0);
}

TEST(LossScaler, CountsTheStepsSkippedInARow) {
  LossScaler scaler({1024.0, 3});
  EXPECT_FALSE(scaler.update(false));
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.state().skippedSteps, 2);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.state().skippedSteps, 0) << "a taken step ends the streak";
}

TEST(LossScaler, BacksOffDownToTheSmallestScaleAndIsExhaustedBelowIt) {
  // From 2^0, 24 overflows halve the scale to 2^-24; the 25th cannot halve
  // it again without flushing every gradient to zero.
  LossScaler scaler({1.0, 2000});
  for (int i = 1; i <= 24; ++i) {
    EXPECT_FALSE(scaler.update(false));
    EXPECT_FALSE(scaler.exhausted()) << "after overflow " << i;
  }
  EXPECT_EQ(scaler.scale(), LossScaler::kMinimumScale);
  EXPECT_EQ(LossScaler::kMinimumScale, std::ldexp(1.0, -24));
  EXPECT_FALSE(scaler.update(false));
  EXPECT_TRUE(scaler.exhausted());
  EXPECT_EQ(scaler.scale(), LossScaler::kMinimumScale)
      << "the scale never reaches 0, where loss x 0 would look clean";
  EXPECT_EQ(scaler.state().skippedSteps, 25);
}

TEST(LossScaler, AStepTakenAtTheSmallestScaleDoesNotExhaustIt) {
  LossScaler scaler({1.0, 2000});
  scaler.restore({LossScaler::kMinimumScale, 0, 24});
  EXPECT_TRUE(scaler.update(true));
  EXPECT_FALSE(scaler.exhausted());
  EXPECT_EQ(scaler.scale(), LossScaler::kMinimumScale);
}

TEST(LossScaler, ExhaustedMessageNamesTheStepTheSkipsTheCauseAndTheRemedy) {
  EXPECT_EQ(exhaustedMessage(36, {LossScaler::kMinimumScale, 0, 35}),
            "step 36: the gradients overflowed at every loss scale down to "
            "2^-24, f16's smallest (35 steps skipped in a row); a smaller "
            "scale would flush every gradient to zero, so the run stops. The "
            "forward is likely not finite: a NaN or an infinity in the loss, "
            "in the input data, or in weights that a diverging learning rate "
            "drove past f16's largest value (65504). Try --precision bf16 "
            "(f32's range), a lower --lr, or check the data");
}

} // namespace
