//===- OpProfileTest.cpp - time per op kind -------------------------------===//

#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

using namespace pp::runtime;

namespace {

TEST(OpProfile, CountsCallsPerKindAcrossEqualLiterals) {
  int synchronized = 0;
  OpProfile profile([&] { ++synchronized; });
  // Two stage libraries hold "matmul" at different addresses.
  std::string otherMatmul = "matmul";
  profile.begin("matmul", PP_PROFILE_GEMM);
  profile.end();
  profile.begin(otherMatmul.c_str(), PP_PROFILE_GEMM);
  profile.end();
  profile.begin("add", PP_PROFILE_OTHER);
  profile.end();
  std::map<std::string, OpProfile::Totals> byKind = profile.byKind();
  ASSERT_EQ(byKind.size(), 2u);
  EXPECT_EQ(byKind["matmul"].calls, 2);
  EXPECT_EQ(byKind["add"].calls, 1);
  EXPECT_GE(byKind["matmul"].seconds, 0.0);
  // The device is waited for before and after each call.
  EXPECT_EQ(synchronized, 6);
}

TEST(OpProfile, EachBracketAddsItsTimeToItsCategory) {
  OpProfile profile;
  auto bracket = [&](const char *kind, pp_profile_category category) {
    profile.begin(kind, category);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    profile.end();
  };
  bracket("matmul", PP_PROFILE_GEMM);
  bracket("softmax", PP_PROFILE_ATTENTION);
  bracket("matmul", PP_PROFILE_ATTENTION);
  bracket("send", PP_PROFILE_COMMUNICATION);
  // A category this runtime does not know counts as other.
  bracket("future", static_cast<pp_profile_category>(PP_PROFILE_CATEGORIES));
  const OpProfile::CategorySeconds &categories = profile.byCategory();
  EXPECT_GE(categories[PP_PROFILE_GEMM], 0.002);
  EXPECT_GE(categories[PP_PROFILE_ATTENTION], 0.004);
  EXPECT_GE(categories[PP_PROFILE_COMMUNICATION], 0.002);
  EXPECT_GE(categories[PP_PROFILE_OTHER], 0.002);
  // Categories and kinds split the same brackets.
  double byKind = 0, byCategory = 0;
  for (const auto &[kind, totals] : profile.byKind())
    byKind += totals.seconds;
  for (double seconds : categories)
    byCategory += seconds;
  EXPECT_NEAR(byCategory, byKind, 1e-12);
}

TEST(OpProfile, EndWithoutBeginAddsNothing) {
  OpProfile profile;
  profile.end();
  EXPECT_TRUE(profile.byKind().empty());
}

TEST(OpProfile, FrameBracketsReachTheProfileOnlyWhenSet) {
  pp_frame frame;
  pp_frame_profile_begin(&frame, "relu", PP_PROFILE_OTHER);
  pp_frame_profile_end(&frame);
  OpProfile profile;
  frame.profile = &profile;
  pp_frame_profile_begin(&frame, "relu", PP_PROFILE_OTHER);
  pp_frame_profile_end(&frame);
  EXPECT_EQ(profile.byKind()["relu"].calls, 1);
}

} // namespace
