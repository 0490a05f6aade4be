//===- OpProfileTest.cpp - time per op kind -------------------------------===//

#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <string>

using namespace pp::runtime;

namespace {

TEST(OpProfile, CountsCallsPerKindAcrossEqualLiterals) {
  int synchronized = 0;
  OpProfile profile([&] { ++synchronized; });
  // Two stage libraries hold "matmul" at different addresses.
  std::string otherMatmul = "matmul";
  profile.begin("matmul");
  profile.end();
  profile.begin(otherMatmul.c_str());
  profile.end();
  profile.begin("add");
  profile.end();
  std::map<std::string, OpProfile::Totals> byKind = profile.byKind();
  ASSERT_EQ(byKind.size(), 2u);
  EXPECT_EQ(byKind["matmul"].calls, 2);
  EXPECT_EQ(byKind["add"].calls, 1);
  EXPECT_GE(byKind["matmul"].seconds, 0.0);
  // The device is waited for before and after each call.
  EXPECT_EQ(synchronized, 6);
}

TEST(OpProfile, EndWithoutBeginAddsNothing) {
  OpProfile profile;
  profile.end();
  EXPECT_TRUE(profile.byKind().empty());
}

TEST(OpProfile, FrameBracketsReachTheProfileOnlyWhenSet) {
  pp_frame frame;
  pp_frame_profile_begin(&frame, "relu");
  pp_frame_profile_end(&frame);
  OpProfile profile;
  frame.profile = &profile;
  pp_frame_profile_begin(&frame, "relu");
  pp_frame_profile_end(&frame);
  EXPECT_EQ(profile.byKind()["relu"].calls, 1);
}

} // namespace
