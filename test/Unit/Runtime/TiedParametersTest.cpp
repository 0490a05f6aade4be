//===- TiedParametersTest.cpp - gradients summed from parts ---------------===//
//
// A pipeline of thread ranks whose stages compute parts of gradients: each
// holder ends with the sum of all parts in part order, the same bits on
// every holder, wherever the parts were computed (one rank, several, a
// rank with two parts of one gradient); a gradient in one part on one rank
// is left alone; copies that differ are refused.
//
//===----------------------------------------------------------------------===//

#include "runtime/training/TiedParameters.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>

using namespace pp::runtime;
using pp::runtime::test::runRanks;

namespace {

ParameterInfo parameter(const std::string &name, int64_t count,
                        std::vector<int64_t> stages,
                        std::vector<int64_t> partStages) {
  ParameterInfo info;
  info.tensor = {name, Role::Parameter, PP_DTYPE_F32, {count}};
  info.stage = stages.front();
  info.stages = std::move(stages);
  info.gradientPartStages = std::move(partStages);
  return info;
}

/// Four stages on four ranks: "embed" tied on stages 0 and 3, a part on
/// each; "a" and "b" held by 1, 2 and 3 (one group for both), "a" in three
/// parts (parts 0 and 2 on stage 1, part 1 on stage 3), "b" in one part on
/// stage 2; "own" in two parts on stage 2 alone; "single" in one part on
/// stage 1 alone.
Package package() {
  Package package;
  package.numStages = 4;
  package.stageRanks = {0, 1, 2, 3};
  package.parameters = {parameter("embed", 5, {0, 3}, {0, 3}),
                        parameter("a", 3, {1, 2, 3}, {1, 3, 1}),
                        parameter("own", 2, {2}, {2, 2}),
                        parameter("b", 4, {1, 2, 3}, {2}),
                        parameter("single", 2, {1}, {1})};
  return package;
}

/// Part `part` of a gradient, per element, with fractional bits.
float part(int64_t part, int64_t element) {
  return 0.1f * static_cast<float>(part + 1) + 1e-7f * element + 0.3f;
}

TensorPtr tensorOf(int64_t count, const std::function<float(int64_t)> &value) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, 1, &count, &tensor), PP_OK);
  for (int64_t i = 0; i < count; ++i)
    static_cast<float *>(pp_tensor_data(tensor))[i] = value(i);
  return TensorPtr(tensor);
}

TEST(TiedParameters, EveryHolderGetsTheSumOfThePartsInPartOrder) {
  Package tiedPackage = package();
  std::mutex lock;
  std::map<int64_t, std::map<std::string, std::vector<float>>> results;
  runRanks(4, [&](Communicator &pipeline) {
    int64_t stage = pipeline.rank();
    // Gradients start as NaN: every formed one is overwritten. A gradient
    // in one part is its own part ("b" on stage 2, "single").
    std::map<std::string, TensorPtr> gradients;
    std::map<GradientPartKey, TensorPtr> owned;
    std::map<GradientPartKey, pp_tensor *> parts;
    for (const ParameterInfo &info : tiedPackage.parameters) {
      if (!info.heldBy(stage))
        continue;
      int64_t count = info.tensor.shape[0];
      const std::vector<int64_t> &partStages = info.gradientPartStages;
      gradients[info.tensor.name] = tensorOf(count, [&](int64_t i) {
        return partStages.size() == 1 && partStages[0] == stage ? part(0, i)
                                                                : NAN;
      });
      for (int64_t p = 0; p < static_cast<int64_t>(partStages.size()); ++p) {
        if (partStages[p] != stage)
          continue;
        GradientPartKey key{info.tensor.name, p};
        if (partStages.size() == 1) {
          parts[key] = gradients[info.tensor.name].get();
          continue;
        }
        owned[key] = tensorOf(count, [&](int64_t i) { return part(p, i); });
        parts[key] = owned[key].get();
      }
    }
    TiedParameters tied(tiedPackage, pipeline, stage);
    tied.sumGradients(parts, gradients);
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
        for (size_t p = 0; p < info.gradientPartStages.size(); ++p)
          sum += part(p, i);
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
            tensorOf(info.tensor.shape[0], [&](int64_t i) {
              return part(info.tensor.name == "embed" && stage == 3 ? 3 : 0,
                          i);
            });
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
