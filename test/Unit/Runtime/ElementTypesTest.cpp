//===- ElementTypesTest.cpp - bf16 and f16 conversions --------------------===//

#include "runtime/core/ElementTypes.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace pp::runtime;

namespace {

/// Whether `chosen` (as a float, `value` of it) is a nearest representable
/// value to `x` among its neighbours `below` and `above`, the even one on a
/// tie: round to nearest, ties to even.
bool roundsToNearestEven(double x, double value, uint16_t chosen,
                         double below, double above) {
  double error = std::fabs(value - x);
  for (double neighbour : {below, above}) {
    double other = std::fabs(neighbour - x);
    if (other < error || (other == error && (chosen & 1)))
      return false;
  }
  return true;
}

TEST(ElementTypes, EveryBFloat16AndHalfSurvivesARoundTripThroughFloat) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    BFloat16 b{static_cast<uint16_t>(bits)};
    Half h{static_cast<uint16_t>(bits)};
    if (std::isnan(toFloat(b))) {
      EXPECT_TRUE(std::isnan(toFloat(toBFloat16(toFloat(b))))) << bits;
    } else {
      EXPECT_EQ(toBFloat16(toFloat(b)).bits, bits);
    }
    if (std::isnan(toFloat(h))) {
      EXPECT_TRUE(std::isnan(toFloat(toHalf(toFloat(h))))) << bits;
    } else {
      EXPECT_EQ(toHalf(toFloat(h)).bits, bits);
    }
  }
}

TEST(ElementTypes, NarrowingRoundsToNearestEven) {
  std::mt19937 random(7);
  std::uniform_int_distribution<uint32_t> anyBits;
  for (int i = 0; i < 1000000; ++i) {
    float x = floatOf(anyBits(random));
    if (std::isnan(x))
      continue;
    BFloat16 b = toBFloat16(x);
    if (std::isfinite(toFloat(b)) && b.bits != 0x7f7f && b.bits != 0xff7f) {
      ASSERT_TRUE(roundsToNearestEven(
          x, toFloat(b), b.bits, toFloat(BFloat16{uint16_t(b.bits - 1)}),
          toFloat(BFloat16{uint16_t(b.bits + 1)})))
          << x;
    }
    // f16 over its range, where floats are likeliest to land.
    float y = std::ldexp(x - std::trunc(x), static_cast<int>(i % 44) - 26);
    Half h = toHalf(y);
    uint16_t magnitude = h.bits & 0x7fff;
    if (magnitude != 0 && magnitude < 0x7bff) {
      ASSERT_TRUE(roundsToNearestEven(y, toFloat(h), h.bits,
                                      toFloat(Half{uint16_t(h.bits - 1)}),
                                      toFloat(Half{uint16_t(h.bits + 1)})))
          << y;
    }
  }
}

TEST(ElementTypes, EdgesRoundAsPyTorchDoes) {
  // Ties go to the even neighbour.
  EXPECT_EQ(toBFloat16(1.0f + 0x1p-8f).bits, 0x3f80);
  EXPECT_EQ(toBFloat16(1.0f + 0x3p-8f).bits, 0x3f82);
  EXPECT_EQ(toHalf(0x1p-25f).bits, 0x0000);
  EXPECT_EQ(toHalf(0x3p-25f).bits, 0x0002);
  // f16's largest finite value, what rounds to it, and what overflows.
  EXPECT_EQ(toHalf(65504.0f).bits, 0x7bff);
  EXPECT_EQ(toHalf(65519.0f).bits, 0x7bff);
  EXPECT_EQ(toHalf(65520.0f).bits, 0x7c00);
  EXPECT_EQ(toHalf(-1e9f).bits, 0xfc00);
  EXPECT_EQ(toBFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);
  // Subnormals of f16, and signed zeros.
  EXPECT_EQ(toHalf(0x1p-24f).bits, 0x0001);
  EXPECT_EQ(toFloat(Half{0x03ff}), 0x3ffp-24f);
  EXPECT_EQ(toHalf(-0.0f).bits, 0x8000);
  EXPECT_EQ(toBFloat16(-0.0f).bits, 0x8000);
  // NaNs stay NaNs, infinities infinities.
  EXPECT_TRUE(std::isnan(toFloat(toBFloat16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(toFloat(toHalf(std::nanf("")))));
  EXPECT_EQ(toFloat(toHalf(INFINITY)), INFINITY);
  EXPECT_EQ(toFloat(toBFloat16(-INFINITY)), -INFINITY);
}

TEST(ElementTypes, TheCastKernelConvertsBetweenF32Bf16AndF16) {
  std::vector<float> values = {1.0f, -2.5f, 1.0f + 0x3p-8f, 70000.0f, 0.1f};
  const int64_t shape[] = {5};
  pp_tensor *input = nullptr;
  ASSERT_EQ(pp_tensor_borrow(values.data(), PP_DTYPE_F32, 1, shape, &input),
            PP_OK);
  pp_frame frame;
  pp_tensor *bf16 = pp_cpu_cast(&frame, input, PP_DTYPE_BF16);
  pp_tensor *f16 = pp_cpu_cast(&frame, bf16, PP_DTYPE_F16);
  pp_tensor *back = pp_cpu_cast(&frame, f16, PP_DTYPE_F32);
  ASSERT_TRUE(back) << frame.error;
  const auto *b = static_cast<const BFloat16 *>(pp_tensor_data(bf16));
  const auto *h = static_cast<const Half *>(pp_tensor_data(f16));
  const auto *f = static_cast<const float *>(pp_tensor_data(back));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(b[i].bits, toBFloat16(values[i]).bits) << i;
    EXPECT_EQ(h[i].bits, toHalf(toFloat(b[i])).bits) << i;
    EXPECT_EQ(f[i], toFloat(h[i])) << i;
  }
  // bf16's 70000 is beyond f16: an infinity.
  EXPECT_EQ(f[3], INFINITY);
  for (pp_tensor *tensor : {input, bf16, f16, back})
    pp_tensor_destroy(tensor);
}

} // namespace
