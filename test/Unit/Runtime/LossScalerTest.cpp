//===- LossScalerTest.cpp - dynamic loss scaling's rules ------------------===//

#include "runtime/training/LossScaler.h"

#include <gtest/gtest.h>

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

} // namespace
