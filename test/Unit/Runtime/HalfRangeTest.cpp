//===- HalfRangeTest.cpp - which parameters an fp16 run refuses -----------===//
//
// checkHalfRange refuses a parameter holding a finite value that f16
// rounds to infinity, and nothing else: 65504 (f16's largest) up to 65520
// round to 65504 under round-to-nearest-even, and an infinity or a NaN is
// one in f16 too.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/HostTensors.h"
#include "runtime/training/ParameterStore.h"

#include <gtest/gtest.h>

#include <limits>

using namespace pp::runtime;

namespace {

/// The refusal of a parameter 'w' holding {0, value}, or "" when accepted.
std::string refusalOf(float value) {
  std::map<std::string, TensorPtr> values;
  TensorPtr &tensor = values["w"] =
      makeTensor({"w", Role::Parameter, PP_DTYPE_F32, {2}});
  floatsOf(tensor.get())[1] = value;
  try {
    checkHalfRange(values);
  } catch (const std::runtime_error &error) {
    return error.what();
  }
  return "";
}

TEST(HalfRange, AcceptsValuesThatRoundToTheLargestHalf) {
  EXPECT_EQ(refusalOf(65504.0f), "");
  EXPECT_EQ(refusalOf(-65504.0f), "");
  EXPECT_EQ(refusalOf(65519.99f), "") << "rounds to 65504 (nearest even)";
  EXPECT_EQ(refusalOf(-65519.99f), "");
}

TEST(HalfRange, RefusesAFiniteValueThatRoundsToInfinity) {
  EXPECT_EQ(refusalOf(65520.0f),
            "parameter 'w' holds 65520 at element 1, a finite value that f16 "
            "rounds to infinity (|x| >= 65520; its largest value is 65504): "
            "its fp16 copy would be infinite from step 1. Train with "
            "--precision bf16 (f32's range), or rescale the weight below "
            "65504 (and what reads it to match)");
  EXPECT_NE(refusalOf(-65520.0f), "");
  EXPECT_NE(refusalOf(std::numeric_limits<float>::max()), "");
}

TEST(HalfRange, KeepsInfinitiesAndNaNsWhichTheCastDoesNotIntroduce) {
  EXPECT_EQ(refusalOf(std::numeric_limits<float>::infinity()), "");
  EXPECT_EQ(refusalOf(-std::numeric_limits<float>::infinity()), "");
  EXPECT_EQ(refusalOf(std::numeric_limits<float>::quiet_NaN()), "");
}

} // namespace
