//===- SyntheticDataTest.cpp - which dtypes synthetic data fills ----------===//

#include "runtime/data/SyntheticData.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

using namespace pp::runtime;

namespace {

/// The message checkSyntheticDtype throws, or "supported".
std::string problem(pp_dtype dtype, bool isLabel, int64_t indexBound = 0) {
  try {
    checkSyntheticDtype(isLabel ? "labels" : "x", dtype, isLabel, indexBound);
  } catch (const std::runtime_error &error) {
    return error.what();
  }
  return "supported";
}

TEST(SyntheticData, FillsF32InputsAndF32OrI64Labels) {
  EXPECT_EQ(problem(PP_DTYPE_F32, false), "supported");
  EXPECT_EQ(problem(PP_DTYPE_F32, true), "supported");
  EXPECT_EQ(problem(PP_DTYPE_I64, true), "supported");
  EXPECT_EQ(problem(PP_DTYPE_I64, false, 10), "supported");
  EXPECT_EQ(problem(PP_DTYPE_I32, false, 10), "supported");
}

TEST(SyntheticData, IdsStayBelowTheirBound) {
  for (pp_dtype dtype : {PP_DTYPE_I64, PP_DTYPE_I32}) {
    int64_t shape[] = {16, 32};
    pp_tensor *tensor = nullptr;
    ASSERT_EQ(pp_tensor_create(dtype, 2, shape, &tensor), PP_OK);
    fillSynthetic(tensor, 3, "ids", 0, 7);
    std::vector<int64_t> seen(7, 0);
    for (int64_t i = 0; i < 16 * 32; ++i) {
      int64_t id = dtype == PP_DTYPE_I64
                       ? static_cast<int64_t *>(pp_tensor_data(tensor))[i]
                       : static_cast<int32_t *>(pp_tensor_data(tensor))[i];
      ASSERT_GE(id, 0);
      ASSERT_LT(id, 7);
      ++seen[id];
    }
    for (int64_t count : seen)
      EXPECT_GT(count, 0) << "every id below the bound is drawn";
    EXPECT_THROW(fillSynthetic(tensor, 3, "ids", 0, 0), std::runtime_error);
    pp_tensor_destroy(tensor);
  }
}

TEST(SyntheticData, OtherDtypesAreNamedInTheError) {
  EXPECT_EQ(problem(PP_DTYPE_F64, false),
            "input 'x' has dtype f64; pp-run's synthetic data supports float "
            "inputs (f32, bf16, f16), i64 or i32 inputs that index a table "
            "(an embedding's ids) and float or i64 labels so far");
  EXPECT_EQ(problem(PP_DTYPE_I64, false),
            "input 'x' has dtype i64; pp-run's synthetic data supports float "
            "inputs (f32, bf16, f16), i64 or i32 inputs that index a table "
            "(an embedding's ids) (this one indexes none) and float or i64 "
            "labels so far");
  EXPECT_EQ(problem(PP_DTYPE_I32, true),
            "labels 'labels' have dtype i32; pp-run's synthetic data supports "
            "float inputs (f32, bf16, f16), i64 or i32 inputs that index a "
            "table (an embedding's ids) and float or i64 labels so far");
  EXPECT_EQ(problem(PP_DTYPE_BF16, false), "supported");
  EXPECT_EQ(problem(PP_DTYPE_F16, true), "supported");
  int64_t shape[] = {2};
  pp_tensor *tensor = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_F64, 1, shape, &tensor), PP_OK);
  EXPECT_THROW(fillSynthetic(tensor, 0, "x", 0, 0), std::runtime_error);
  pp_tensor_destroy(tensor);
}

} // namespace
