//===- StepBreakdownTest.cpp - where a rank's training steps go -----------===//

#include "runtime/training/StepBreakdown.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace pp::runtime;

namespace {

double part(const PartSeconds &parts, StepPart which) {
  return parts[static_cast<size_t>(which)];
}

double sum(const PartSeconds &parts) {
  double total = 0;
  for (double seconds : parts)
    total += seconds;
  return total;
}

TEST(StepBreakdown, TheDataParallelWaitIsWaitingNotOptimizer) {
  OpProfile::CategorySeconds categories{};
  categories[PP_PROFILE_GEMM] = 0.5;
  categories[PP_PROFILE_ATTENTION] = 0.25;
  categories[PP_PROFILE_OTHER] = 0.125;
  categories[PP_PROFILE_COMMUNICATION] = 0.0625;
  ActionSeconds actions{/*waiting=*/0.75, /*communication=*/0.5,
                        /*optimizer=*/2.0};
  PartSeconds parts = measuredParts(categories, actions,
                                    /*reduceWaitSeconds=*/1.5);
  EXPECT_EQ(part(parts, StepPart::Gemm), 0.5);
  EXPECT_EQ(part(parts, StepPart::Attention), 0.25);
  EXPECT_EQ(part(parts, StepPart::OtherKernels), 0.125);
  EXPECT_EQ(part(parts, StepPart::Communication), 0.5625);
  EXPECT_EQ(part(parts, StepPart::Waiting), 2.25);
  EXPECT_EQ(part(parts, StepPart::Optimizer), 0.5);
  EXPECT_EQ(part(parts, StepPart::Rest), 0.0);
}

TEST(StepBreakdown, OnlyTimesDuringStepsCountAndThePartsAddUpToTheSteps) {
  StepBreakdown breakdown;
  PartSeconds start{};
  PartSeconds afterFirst = {0.25, 0.125, 0.0625, 0.0, 0.0, 0.0625, 0.0};
  breakdown.addStep(1.0, start, afterFirst);
  // An evaluation between the steps ran GEMMs for 10 s.
  PartSeconds beforeSecond = afterFirst;
  beforeSecond[static_cast<size_t>(StepPart::Gemm)] += 10.0;
  PartSeconds afterSecond = beforeSecond;
  for (StepPart p : {StepPart::Gemm, StepPart::Communication,
                     StepPart::Waiting})
    afterSecond[static_cast<size_t>(p)] += 0.25;
  breakdown.addStep(1.0, beforeSecond, afterSecond);
  PartSeconds parts = breakdown.seconds();
  EXPECT_EQ(breakdown.stepSeconds(), 2.0);
  EXPECT_EQ(part(parts, StepPart::Gemm), 0.5);
  EXPECT_EQ(part(parts, StepPart::Waiting), 0.25);
  EXPECT_EQ(part(parts, StepPart::Rest), 2.0 - 1.25);
  EXPECT_DOUBLE_EQ(sum(parts), 2.0);
}

TEST(StepBreakdown, SharesOfAnEmptyRunAreZero) {
  nlohmann::json json = StepBreakdown().toJson();
  EXPECT_EQ(json["step_seconds"], 0.0);
  for (size_t p = 0; p < kStepParts; ++p)
    EXPECT_EQ(json["share"][stepPartName(static_cast<StepPart>(p))], 0.0);
}

/// A step of known parts, timed for real: brackets of GEMM and attention
/// around sleeps, a wait in a recv action, and bookkeeping outside both.
TEST(StepBreakdown, TimedStepSplitsIntoDisjointPartsThatAddUp) {
  using Clock = std::chrono::steady_clock;
  auto sleep = [](int ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  };
  OpProfile profile;
  ActionSeconds actions;
  auto measured = [&] {
    return measuredParts(profile.byCategory(), actions, 0.0);
  };
  StepBreakdown breakdown;
  Clock::time_point start = Clock::now();
  PartSeconds before = measured();
  profile.begin("matmul", PP_PROFILE_GEMM);
  sleep(6);
  profile.end();
  profile.begin("softmax", PP_PROFILE_ATTENTION);
  sleep(4);
  profile.end();
  Clock::time_point waitStart = Clock::now();
  sleep(3);
  actions.waiting +=
      std::chrono::duration<double>(Clock::now() - waitStart).count();
  sleep(2);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  breakdown.addStep(seconds, before, measured());

  PartSeconds parts = breakdown.seconds();
  EXPECT_GE(part(parts, StepPart::Gemm), 0.006);
  EXPECT_GE(part(parts, StepPart::Attention), 0.004);
  EXPECT_GE(part(parts, StepPart::Waiting), 0.003);
  EXPECT_GE(part(parts, StepPart::Rest), 0.002);
  EXPECT_EQ(part(parts, StepPart::OtherKernels), 0.0);
  EXPECT_EQ(part(parts, StepPart::Communication), 0.0);
  EXPECT_EQ(part(parts, StepPart::Optimizer), 0.0);
  EXPECT_NEAR(sum(parts), seconds, 1e-12);
  nlohmann::json json = breakdown.toJson();
  double shares = 0;
  for (const auto &[name, share] : json["share"].items())
    shares += share.get<double>();
  EXPECT_NEAR(shares, 1.0, 1e-12);
  EXPECT_EQ(json["step_seconds"], seconds);
}

} // namespace
