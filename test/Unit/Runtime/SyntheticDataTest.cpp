//===- SyntheticDataTest.cpp - which dtypes synthetic data fills ----------===//

#include "runtime/data/SyntheticData.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace pp::runtime;

namespace {

/// The message checkSyntheticDtype throws, or "supported".
std::string problem(pp_dtype dtype, bool isLabel) {
  try {
    checkSyntheticDtype(isLabel ? "labels" : "x", dtype, isLabel);
  } catch (const std::runtime_error &error) {
    return error.what();
  }
  return "supported";
}

TEST(SyntheticData, FillsF32InputsAndF32OrI64Labels) {
  EXPECT_EQ(problem(PP_DTYPE_F32, false), "supported");
  EXPECT_EQ(problem(PP_DTYPE_F32, true), "supported");
  EXPECT_EQ(problem(PP_DTYPE_I64, true), "supported");
}

TEST(SyntheticData, OtherDtypesAreNamedInTheError) {
  EXPECT_EQ(problem(PP_DTYPE_BF16, false),
            "input 'x' has dtype bf16; pp-run's synthetic data supports f32 "
            "inputs and f32 or i64 labels so far");
  EXPECT_EQ(problem(PP_DTYPE_I64, false),
            "input 'x' has dtype i64; pp-run's synthetic data supports f32 "
            "inputs and f32 or i64 labels so far");
  EXPECT_EQ(problem(PP_DTYPE_F16, true),
            "labels 'labels' have dtype f16; pp-run's synthetic data "
            "supports f32 inputs and f32 or i64 labels so far");
  int64_t shape[] = {2};
  pp_tensor *tensor = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_F16, 1, shape, &tensor), PP_OK);
  EXPECT_THROW(fillSynthetic(tensor, 0, "x", 0, 0), std::runtime_error);
  pp_tensor_destroy(tensor);
}

} // namespace
