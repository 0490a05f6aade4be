//===- ComputeCopiesTest.cpp - weights converted once per step ------------===//
//
// The cache of compute-type copies on its own, and through the trainer: a
// one-stage package whose forward and backward (written here) take the
// bf16 copy of their weight, as pp-hoist-parameter-casts makes them.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/ComputeCopies.h"
#include "runtime/core/ElementTypes.h"
#include "runtime/training/Trainer.h"

#include "OneStagePackage.h"
#include "TemporaryFiles.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <vector>

using namespace pp::runtime;

namespace {

/// A new f32 tensor of shape [n] holding `values`.
TensorPtr floats(const std::vector<float> &values) {
  int64_t shape[] = {static_cast<int64_t>(values.size())};
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, 1, shape, &tensor), PP_OK);
  std::copy(values.begin(), values.end(),
            static_cast<float *>(pp_tensor_data(tensor)));
  return TensorPtr(tensor);
}

const uint16_t *bitsOf(pp_tensor *tensor) {
  return static_cast<const uint16_t *>(pp_tensor_data(tensor));
}

TEST(ComputeCopies, ConvertsOnceUntilDroppedWithTheCastKernelsBits) {
  Communicator world(RendezvousInfo{});
  std::unique_ptr<Backend> backend = createCpuBackend(world);
  ComputeCopies copies(*backend);
  TensorPtr w = floats({1.0f / 3.0f, 65519.0f, -2.5e-8f});
  pp_tensor *bf16 = copies.copyOf("w", w.get(), PP_DTYPE_BF16);
  pp_tensor *f16 = copies.copyOf("w", w.get(), PP_DTYPE_F16);
  const float *values = static_cast<const float *>(pp_tensor_data(w.get()));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(bitsOf(bf16)[i], toBFloat16(values[i]).bits) << i;
    EXPECT_EQ(bitsOf(f16)[i], toHalf(values[i]).bits) << i;
  }
  EXPECT_EQ(copies.copyOf("w", w.get(), PP_DTYPE_BF16), bf16);
  EXPECT_EQ(copies.conversions(), 2);
  EXPECT_EQ(copies.convertedBytes(), 12);
  EXPECT_EQ(copies.heldBytes(), 12);

  // A changed master is converted again once its copies are dropped.
  static_cast<float *>(pp_tensor_data(w.get()))[0] = 2.0f;
  copies.drop("w");
  EXPECT_EQ(copies.heldBytes(), 0);
  EXPECT_EQ(bitsOf(copies.copyOf("w", w.get(), PP_DTYPE_BF16))[0],
            toBFloat16(2.0f).bits);
  TensorPtr v = floats({4.0f});
  copies.copyOf("v", v.get(), PP_DTYPE_BF16);
  EXPECT_EQ(copies.conversions(), 4);
  copies.drop("w");
  EXPECT_EQ(copies.heldBytes(), 2);
  copies.clear();
  EXPECT_EQ(copies.heldBytes(), 0);
  EXPECT_EQ(copies.convertedBytes(), 20);
}

/// What the stage functions saw of w's copy: per call, the tensor and
/// whether its bits were w's rounded to bf16.
std::vector<pp_tensor *> copiesSeen;
int staleCopies = 0;

/// (x, w, w as bf16, labels) -> (loss, saved s).
void forward(pp_frame *frame) {
  float w = *static_cast<float *>(pp_tensor_data(pp_frame_arg(frame, 1)));
  pp_tensor *copy = pp_frame_arg(frame, 2);
  copiesSeen.push_back(copy);
  if (bitsOf(copy)[0] != toBFloat16(w).bits)
    ++staleCopies;
  returnUnitLoss(frame);
  pp_frame_result(frame, scalar(1.0f), 1);
}

/// (w as bf16, saved s, loss_scale) -> (gradient of w = 1).
void backward(pp_frame *frame) {
  copiesSeen.push_back(pp_frame_arg(frame, 0));
  pp_frame_result(frame, scalar(1.0f), 0);
}

Package package() {
  StageFunctionInfo f{"forward",
                      Phase::Forward,
                      {tensor("x", Role::Input, {2, 1}),
                       tensor("w", Role::Parameter, {1}),
                       tensor("w", Role::ComputeCopy, {1}, PP_DTYPE_BF16),
                       tensor("labels", Role::Label, {2, 1})},
                      {tensor("loss", Role::Loss, {}),
                       tensor("s", Role::Saved, {1})},
                      {},
                      &forward,
                      std::nullopt};
  StageFunctionInfo b{"backward",
                      Phase::Backward,
                      {tensor("w", Role::ComputeCopy, {1}, PP_DTYPE_BF16),
                       tensor("s", Role::Saved, {1}),
                       tensor("loss_scale", Role::LossScale, {})},
                      {tensor("w", Role::Gradient, {1})},
                      {},
                      &backward,
                      std::nullopt};
  return oneStagePackage({{tensor("w", Role::Parameter, {1}), 0}}, {f, b});
}

TEST(ComputeCopies, AStepConvertsEachWeightOnceAndTheUpdateRenewsTheCopy) {
  TrainerOptions options;
  options.microbatches = 2;
  options.steps = 3;
  options.learningRate.peak = 0.25;
  options.profilePath = freshDirectory("compute-copies") + "/profile.json";
  std::ostringstream log;
  trainAlone(package(), options, log);
  // 3 steps of 2 forwards and 2 backwards, each step with one copy, which
  // is w's after the last update.
  ASSERT_EQ(copiesSeen.size(), 12u);
  EXPECT_EQ(staleCopies, 0);
  for (size_t call = 0; call < copiesSeen.size(); ++call)
    EXPECT_EQ(copiesSeen[call], copiesSeen[call / 4 * 4]) << call;
  nlohmann::json profile =
      nlohmann::json::parse(std::ifstream(options.profilePath));
  EXPECT_EQ(profile["stages"][0]["compute_copy_conversions"], 3);
  EXPECT_EQ(profile["stages"][0]["compute_copy_bytes"], 6);
}

} // namespace
