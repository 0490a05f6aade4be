//===- TrainerTest.cpp - phases and saved values through the trainer ------===//
//
// A one-stage package whose stage functions are written here: a forward
// and a backward split into backward_input and backward_weight, with saved
// values that the later phases take in another order than the forward
// returns them.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/Trainer.h"
#include "runtime/training/Backend.h"
#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/data/SyntheticData.h"

#include "OneStagePackage.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace pp::runtime;

namespace {

int forwards = 0, inputGradients = 0, weightGradients = 0;

float valueOf(pp_frame *frame, int64_t arg) {
  return *static_cast<float *>(pp_tensor_data(pp_frame_arg(frame, arg)));
}

/// (x, w, c, labels) -> (loss, saved b = 2, saved a = 1, saved unused).
void forward(pp_frame *frame) {
  ++forwards;
  returnUnitLoss(frame);
  pp_frame_result(frame, scalar(2.0f), 1);
  pp_frame_result(frame, scalar(1.0f), 2);
  pp_frame_result(frame, scalar(9.0f), 3);
}

/// (saved a, saved b, loss_scale) -> (): checks it got each by name.
void backwardInput(pp_frame *frame) {
  ++inputGradients;
  if (valueOf(frame, 0) != 1.0f || valueOf(frame, 1) != 2.0f)
    failFrame(frame, "saved values arrived by position, not by name");
}

/// (c, saved b) -> (gradient of w = b).
void backwardWeight(pp_frame *frame) {
  ++weightGradients;
  pp_frame_result(frame, scalar(valueOf(frame, 1)), 0);
}

Package package() {
  StageFunctionInfo f{
      "forward",
      Phase::Forward,
      {tensor("x", Role::Input, {2, 1}), tensor("w", Role::Parameter, {1}),
       tensor("c", Role::Frozen, {1}), tensor("labels", Role::Label, {2, 1})},
      {tensor("loss", Role::Loss, {}), tensor("b", Role::Saved, {1}),
       tensor("a", Role::Saved, {1}), tensor("unused", Role::Saved, {1})},
      {},
      &forward,
      std::nullopt};
  StageFunctionInfo bi{"backward_input",
                       Phase::BackwardInput,
                       {tensor("a", Role::Saved, {1}),
                        tensor("b", Role::Saved, {1}),
                        tensor("loss_scale", Role::LossScale, {})},
                       {},
                       {},
                       &backwardInput,
                       std::nullopt};
  StageFunctionInfo bw{
      "backward_weight",
      Phase::BackwardWeight,
      {tensor("c", Role::Frozen, {1}), tensor("b", Role::Saved, {1})},
      {tensor("w", Role::Gradient, {1})},
      {},
      &backwardWeight,
      std::nullopt};
  return oneStagePackage({{tensor("c", Role::Frozen, {1}), 0},
                          {tensor("w", Role::Parameter, {1}), 0}},
                         {f, bi, bw});
}

/// A parameter's first value: seeded by its name (shape [1]: bound 1).
float seeded(const std::string &name) {
  pp_tensor *tensor = scalar(0.0f);
  fillSynthetic(tensor, 0, "init/" + name, 0, 0);
  float value = *static_cast<float *>(pp_tensor_data(tensor));
  pp_tensor_destroy(tensor);
  return value;
}

TEST(Trainer, ASplitBackwardRunsBothHalvesAndTakesSavedValuesByName) {
  TrainerOptions options;
  options.microbatches = 2;
  options.learningRate.peak = 0.5;
  std::ostringstream log;
  trainAlone(package(), options, log);
  EXPECT_EQ(forwards, 2);
  EXPECT_EQ(inputGradients, 2);
  EXPECT_EQ(weightGradients, 2);
  // Loss: 1 per microbatch over 4 label elements. The gradient of w is b
  // (2) per microbatch; the frozen c keeps its value.
  EXPECT_NE(log.str().find("step 1  loss 0.5  grad_norm 4 "), std::string::npos)
      << log.str();
  float w = seeded("w") - 0.5f * (2.0f + 2.0f);
  std::string digest =
      parametersDigest({{"c", {{1}, {seeded("c")}}}, {"w", {{1}, {w}}}});
  EXPECT_NE(log.str().find("params_sha256 " + digest), std::string::npos)
      << log.str();
}

TEST(Trainer, TheJobMustHaveTheMeshsDeviceCount) {
  Package model = package();
  Communicator world(RendezvousInfo{});
  try {
    connectRankGroups(model, world, 2, {"dp", "pp"});
    FAIL() << "a 2-device mesh ran on one rank";
  } catch (const std::runtime_error &error) {
    EXPECT_STREQ(error.what(),
                 "the job's mesh dp=2 x pp=1 has device count 2, but the "
                 "job's WORLD_SIZE is 1; start one rank per device "
                 "(--nproc 2)");
  }
}

TEST(Trainer, TheMeshOrderNamesEachAxisOnce) {
  DeviceMesh package({{"pp", 2, AxisKind::Pipeline}});
  EXPECT_EQ(dataParallelMesh(package, 3, {}).describe(), "pp=2 x dp=3");
  EXPECT_EQ(dataParallelMesh(package, 3, {"dp", "pp"}).describe(),
            "dp=3 x pp=2");
  auto refusal = [&](const std::vector<std::string> &order) {
    try {
      dataParallelMesh(package, 2, order);
    } catch (const std::runtime_error &error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal({"pp"}), "--mesh-order misses the axis 'dp'; list each "
                             "of the axes pp,dp once, outermost first");
  EXPECT_EQ(refusal({"pp", "pp", "dp"}),
            "--mesh-order names 'pp', which is named twice; list each of "
            "the axes pp,dp once, outermost first");
  EXPECT_EQ(refusal({"pp", "tp"}),
            "--mesh-order names 'tp', which is not an axis of this job; list "
            "each of the axes pp,dp once, outermost first");
}

} // namespace
