//===- ActivationOffloadTest.cpp - saved values out and back --------------===//

#include "runtime/training/ActivationOffload.h"
#include "runtime/device/Device.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace pp::runtime;

namespace {

/// A host f32 tensor of `n` elements 0, 1, 2, ... plus `offset`.
TensorPtr counting(int64_t n, float offset) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, 1, &n, &tensor), PP_OK);
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < n; ++i)
    data[i] = static_cast<float>(i) + offset;
  return TensorPtr(tensor);
}

bool sameBytes(pp_tensor *a, pp_tensor *b) {
  return pp_tensor_nbytes(a) == pp_tensor_nbytes(b) &&
         std::memcmp(pp_tensor_data(a), pp_tensor_data(b),
                     pp_tensor_nbytes(a)) == 0;
}

TEST(ActivationOffload, ValuesComeBackWithTheirBytes) {
  ActivationOffload offload(hostDevice().defaultQueue());
  SavedValues values;
  values["saved:a"] = counting(10, 0.5f);
  values["saved:b"] = counting(3, -7);
  TensorPtr a = counting(10, 0.5f), b = counting(3, -7);
  offload.offload(1, 2, values);
  EXPECT_TRUE(values.empty());
  EXPECT_EQ(offload.heldBytes(), 13 * 4);
  // Host memory holds them; nothing is where the stage functions run.
  EXPECT_EQ(offload.residentBytes(), 0);
  offload.reload(1, 2);
  EXPECT_EQ(offload.heldBytes(), 0);
  EXPECT_EQ(offload.residentBytes(), 13 * 4);
  SavedValues back;
  offload.take(1, 2, back);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(sameBytes(back.at("saved:a").get(), a.get()));
  EXPECT_TRUE(sameBytes(back.at("saved:b").get(), b.get()));
  EXPECT_EQ(offload.residentBytes(), 0);
  EXPECT_EQ(offload.mostHeldBytes(), 13 * 4);
  EXPECT_EQ(offload.copiedBytes(), 2 * 13 * 4);
  // A microbatch never offloaded takes nothing.
  SavedValues untouched;
  untouched["saved:a"] = counting(1, 0);
  offload.take(0, 0, untouched);
  EXPECT_EQ(untouched.size(), 1u);
}

TEST(ActivationOffload, RefusesCopiesOutOfOrder) {
  ActivationOffload offload(hostDevice().defaultQueue());
  SavedValues values;
  values["saved:a"] = counting(4, 0);
  EXPECT_THROW(offload.reload(0, 0), std::runtime_error);
  offload.offload(0, 0, values);
  SavedValues again;
  EXPECT_THROW(offload.offload(0, 0, again), std::runtime_error);
  SavedValues back;
  try {
    offload.take(0, 0, back);
    FAIL() << "took values still offloaded";
  } catch (const std::runtime_error &error) {
    EXPECT_STREQ(error.what(),
                 "the backward of stage 0, microbatch 0 runs while its saved "
                 "values are offloaded; the schedule must reload them before "
                 "it");
  }
  offload.reload(0, 0);
  EXPECT_THROW(offload.reload(0, 0), std::runtime_error);
}

} // namespace
