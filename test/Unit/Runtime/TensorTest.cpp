//===- TensorTest.cpp - host tensor tests -----------------------*- C++ -*-===//

#include "runtime/pp_runtime.h"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <string>

namespace {

TEST(Tensor, CreateHasShapeAndZeroes) {
  const int64_t shape[] = {2, 3, 4};
  pp_tensor *tensor = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_F32, 3, shape, &tensor), PP_OK);
  EXPECT_EQ(pp_tensor_dtype(tensor), PP_DTYPE_F32);
  EXPECT_EQ(pp_tensor_rank(tensor), 3);
  EXPECT_EQ(pp_tensor_shape(tensor)[2], 4);
  EXPECT_EQ(pp_tensor_numel(tensor), 24);
  EXPECT_EQ(pp_tensor_nbytes(tensor), 96u);
  auto *data = static_cast<float *>(pp_tensor_data(tensor));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(data) % 64, 0u);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(data[i], 0.0f);
  pp_tensor_destroy(tensor);
}

TEST(Tensor, ScalarAndEmptyTensors) {
  pp_tensor *scalar = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_I64, 0, nullptr, &scalar), PP_OK);
  EXPECT_EQ(pp_tensor_numel(scalar), 1);
  EXPECT_EQ(pp_tensor_nbytes(scalar), 8u);
  pp_tensor_destroy(scalar);

  const int64_t shape[] = {5, 0};
  pp_tensor *empty = nullptr;
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_F64, 2, shape, &empty), PP_OK);
  EXPECT_EQ(pp_tensor_numel(empty), 0);
  EXPECT_EQ(pp_tensor_nbytes(empty), 0u);
  pp_tensor_destroy(empty);
}

TEST(Tensor, DestroyNullIsHarmless) { pp_tensor_destroy(nullptr); }

TEST(Tensor, DtypeSizesAndNames) {
  EXPECT_EQ(pp_dtype_size(PP_DTYPE_F32), 4u);
  EXPECT_EQ(pp_dtype_size(PP_DTYPE_F64), 8u);
  EXPECT_EQ(pp_dtype_size(PP_DTYPE_I32), 4u);
  EXPECT_EQ(pp_dtype_size(PP_DTYPE_I64), 8u);
  EXPECT_EQ(pp_dtype_size(PP_DTYPE_BOOL), 1u);
  EXPECT_EQ(pp_dtype_size(PP_DTYPE_F16), 2u);
  EXPECT_EQ(pp_dtype_size(PP_DTYPE_BF16), 2u);
  EXPECT_STREQ(pp_dtype_name(PP_DTYPE_BOOL), "i1");
  EXPECT_STREQ(pp_dtype_name(PP_DTYPE_BF16), "bf16");
  EXPECT_EQ(pp_dtype_size(static_cast<pp_dtype>(99)), 0u);
  EXPECT_STREQ(pp_dtype_name(static_cast<pp_dtype>(99)), "unknown");
}

TEST(Tensor, DtypesParseFromTheirManifestNames) {
  for (pp_dtype dtype :
       {PP_DTYPE_F32, PP_DTYPE_F16, PP_DTYPE_BF16, PP_DTYPE_F64, PP_DTYPE_I32,
        PP_DTYPE_I64, PP_DTYPE_BOOL}) {
    pp_dtype parsed = PP_DTYPE_F32;
    EXPECT_EQ(pp_dtype_from_name(pp_dtype_name(dtype), &parsed), PP_OK);
    EXPECT_EQ(parsed, dtype);
  }
  pp_dtype parsed;
  EXPECT_EQ(pp_dtype_from_name("f8", &parsed), PP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(pp_last_error(), "unknown dtype 'f8'; known dtypes: f32, f16, "
                                "bf16, f64, i32, i64, i1");
}

TEST(Tensor, HalfPrecisionTensorsTakeTwoBytesPerElement) {
  for (pp_dtype dtype : {PP_DTYPE_F16, PP_DTYPE_BF16}) {
    int64_t shape[] = {3, 5};
    pp_tensor *tensor = nullptr;
    ASSERT_EQ(pp_tensor_create(dtype, 2, shape, &tensor), PP_OK);
    EXPECT_EQ(pp_tensor_nbytes(tensor), 30u);
    pp_tensor_destroy(tensor);
  }
}

/// Expects `status` to fail with a message containing `fragment`.
void expectError(pp_status status, pp_status expected, const char *fragment) {
  EXPECT_EQ(status, expected);
  EXPECT_NE(std::string(pp_last_error()).find(fragment), std::string::npos)
      << "message: " << pp_last_error();
}

TEST(Tensor, RejectsBadArguments) {
  pp_tensor *tensor = reinterpret_cast<pp_tensor *>(0x1);
  const int64_t negative[] = {3, -1};
  expectError(pp_tensor_create(PP_DTYPE_F32, 2, negative, &tensor),
              PP_ERROR_INVALID_ARGUMENT, "dimension 1 has negative size -1");
  EXPECT_EQ(tensor, nullptr);
  expectError(pp_tensor_create(PP_DTYPE_F32, 2, nullptr, &tensor),
              PP_ERROR_INVALID_ARGUMENT, "rank 2 needs a shape");
  expectError(pp_tensor_create(PP_DTYPE_F32, -1, nullptr, &tensor),
              PP_ERROR_INVALID_ARGUMENT, "rank -1");
  expectError(pp_tensor_create(static_cast<pp_dtype>(42), 0, nullptr, &tensor),
              PP_ERROR_INVALID_ARGUMENT, "unknown dtype 42");
  expectError(pp_tensor_create(PP_DTYPE_F32, 0, nullptr, nullptr),
              PP_ERROR_INVALID_ARGUMENT, "output pointer is NULL");
  const int64_t huge[] = {std::numeric_limits<int64_t>::max() / 2, 4};
  expectError(pp_tensor_create(PP_DTYPE_F32, 2, huge, &tensor),
              PP_ERROR_INVALID_ARGUMENT, "more bytes than int64_t");
}

TEST(Tensor, LastErrorIsPerThreadMessage) {
  pp_tensor *tensor = nullptr;
  const int64_t negative[] = {-2};
  ASSERT_NE(pp_tensor_create(PP_DTYPE_F32, 1, negative, &tensor), PP_OK);
  EXPECT_NE(std::strlen(pp_last_error()), 0u);
}

} // namespace
