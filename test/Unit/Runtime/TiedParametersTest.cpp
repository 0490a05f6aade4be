//===- TiedParametersTest.cpp - gradient sums over a weight's holders -----===//
//
// A pipeline of thread ranks whose stages hold tied weights: each holder
// ends with the sum of the holders' gradient parts in the same bits, a
// stage holding nothing takes part in nothing, and copies that differ are
// refused.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/TiedParameters.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

ParameterInfo parameter(const std::string &name, int64_t count,
                        std::vector<int64_t> stages) {
  ParameterInfo info;
  info.tensor = {name, Role::Parameter, PP_DTYPE_F32, {count}};
  info.stage = stages.front();
  info.stages = std::move(stages);
  return info;
}

/// Four stages: "embed" tied on stages 0 and 3, "a" and "b" on 1, 2 and 3
/// (one group for both), "own" on stage 2 alone.
Package package() {
  Package package;
  package.numStages = 4;
  package.stageRanks = {0, 1, 2, 3};
  package.parameters = {parameter("embed", 5, {0, 3}),
                        parameter("a", 3, {1, 2, 3}), parameter("own", 2, {2}),
                        parameter("b", 4, {1, 2, 3})};
  return package;
}

/// A part that differs per stage and element, with fractional bits so
/// that the order of additions would show.
float part(int64_t stage, int64_t element) {
  return 0.1f * static_cast<float>(stage + 1) + 1e-7f * element + 0.3f;
}

TensorPtr filled(int64_t count, int64_t stage) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, 1, &count, &tensor), PP_OK);
  for (int64_t i = 0; i < count; ++i)
    static_cast<float *>(pp_tensor_data(tensor))[i] = part(stage, i);
  return TensorPtr(tensor);
}

TEST(TiedParameters, EveryHolderGetsTheSumOfThePartsInStageOrder) {
  Package tiedPackage = package();
  std::mutex lock;
  std::map<int64_t, std::map<std::string, std::vector<float>>> results;
  runRanks(4, [&](Communicator &pipeline) {
    int64_t stage = pipeline.rank();
    std::map<std::string, TensorPtr> gradients;
    for (const ParameterInfo &info : tiedPackage.parameters)
      if (info.heldBy(stage))
        gradients[info.tensor.name] = filled(info.tensor.shape[0], stage);
    TiedParameters tied(tiedPackage, pipeline, stage);
    tied.sumGradients(gradients);
    std::lock_guard<std::mutex> guard(lock);
    for (auto &[name, tensor] : gradients) {
      const float *values = static_cast<float *>(pp_tensor_data(tensor.get()));
      results[stage][name].assign(values,
                                  values + pp_tensor_numel(tensor.get()));
    }
  });
  for (const ParameterInfo &info : tiedPackage.parameters)
    for (int64_t stage : info.stages)
      for (int64_t i = 0; i < info.tensor.shape[0]; ++i) {
        double sum = 0;
        for (int64_t holder : info.stages)
          sum += part(info.isTied() ? holder : stage, i);
        EXPECT_EQ(results[stage][info.tensor.name][i], static_cast<float>(sum))
            << info.tensor.name << " on stage " << stage << " element " << i;
      }
}

TEST(TiedParameters, CopiesThatDifferAreRefusedNamingThemAndTheStages) {
  Package tiedPackage = package();
  std::vector<std::string> errors(4);
  runRanks(4, [&](Communicator &pipeline) {
    int64_t stage = pipeline.rank();
    std::map<std::string, TensorPtr> parameters;
    for (const ParameterInfo &info : tiedPackage.parameters)
      if (info.heldBy(stage))
        // Stage 3's copy of "embed" drifted; "a" and "b" agree.
        parameters[info.tensor.name] =
            filled(info.tensor.shape[0],
                   info.tensor.name == "embed" && stage == 3 ? 3 : 0);
    TiedParameters tied(tiedPackage, pipeline, stage);
    try {
      tied.checkHoldersAgree(parameters);
    } catch (const std::runtime_error &error) {
      errors[stage] = error.what();
    }
  });
  std::string expected =
      "the copies of the tied parameters 'embed' on pipeline ranks 0 and 3 differ "
      "after training; they must stay the same bits (a bug in pp: please "
      "report it with the model)";
  EXPECT_EQ(errors, (std::vector<std::string>{expected, "", "", expected}));
}

} // namespace
