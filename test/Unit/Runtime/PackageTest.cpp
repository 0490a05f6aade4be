//===- PackageTest.cpp - reading version-2 manifests
//-----------------------===//

#include "runtime/package/Package.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

using namespace pp::runtime;
using json = nlohmann::json;

namespace {

json tensor(const std::string &name, const std::string &role,
            const std::string &dtype, std::vector<int64_t> shape) {
  json value = {{"name", name}, {"dtype", dtype}, {"shape", shape}};
  if (!role.empty())
    value["role"] = role;
  return value;
}

json function(const std::string &symbol, const std::string &phase, json args,
              json results, json messages = json::array()) {
  return {{"function", symbol},
          {"phase", phase},
          {"args", args},
          {"results", results},
          {"messages", messages}};
}

/// Two stages: stage 0's forward saves "a" and "b" and sends "h" (bf16) to
/// stage 1; its backward takes them back in the other order. Stage 1 has a
/// split backward: backward_input, then backward_weight, which takes the
/// saved value "z" of the forward.
json manifest() {
  json h = tensor("h", "", "bf16", {2, 4});
  json stage0 = {
      {"stage", 0},
      {"functions",
       {function("stage0_forward", "forward",
                 {tensor("x", "input", "f32", {2, 3}),
                  tensor("w", "parameter", "f32", {3, 4})},
                 {tensor("a", "saved", "f32", {2, 4}),
                  tensor("b", "saved", "f32", {2, 3})},
                 {{{"kind", "send"}, {"peer", 1}, {"tensors", {h}}}}),
        function("stage0_backward", "backward",
                 {tensor("b", "saved", "f32", {2, 3}),
                  tensor("a", "saved", "f32", {2, 4})},
                 {tensor("w", "gradient", "f32", {3, 4})})}}};
  json stage1 = {
      {"stage", 1},
      {"functions",
       {function("stage1_forward", "forward",
                 {tensor("c", "frozen", "f32", {4}),
                  tensor("labels", "label", "f32", {2, 4})},
                 {tensor("loss", "loss", "f32", {}),
                  tensor("z", "saved", "f32", {2, 4})}),
        function("stage1_backward_input", "backward_input",
                 {tensor("loss_scale", "loss_scale", "f32", {})},
                 json::array()),
        function("stage1_backward_weight", "backward_weight",
                 {tensor("z", "saved", "f32", {2, 4})}, json::array())}}};
  return {{"format", "pp-pipeline-package"},
          {"version", 2},
          {"num_stages", 2},
          {"microbatch_size", 2},
          {"mesh",
           {{"axes", {{{"name", "pp"}, {"size", 2}, {"kind", "pipeline"}}}}}},
          {"loss", {{"kind", "mse"}, {"output", "y"}, {"ignore_index", -100}}},
          {"inputs", {tensor("x", "input", "f32", {2, 3})}},
          {"labels", tensor("labels", "label", "f32", {2, 4})},
          {"parameters",
           {{{"name", "w"},
             {"role", "parameter"},
             {"dtype", "f32"},
             {"shape", {3, 4}},
             {"stage", 0},
             {"init", "seeded_by_name"}},
            {{"name", "c"},
             {"role", "frozen"},
             {"dtype", "f32"},
             {"shape", {4}},
             {"stage", 1},
             {"init", "seeded_by_name"}}}},
          {"stages", {stage0, stage1}}};
}

/// Writes `value` as the manifest of a fresh package directory.
std::string writePackage(const json &value) {
  char directory[] = "/tmp/pp-package-test-XXXXXX";
  EXPECT_NE(::mkdtemp(directory), nullptr);
  std::ofstream(std::string(directory) + "/manifest.json") << value.dump(2);
  return directory;
}

/// The message Package::load throws for `value`, without the directory.
std::string loadError(const json &value) {
  try {
    Package::load(writePackage(value));
  } catch (const std::runtime_error &error) {
    std::string message = error.what();
    return message.substr(message.find("': ") + 3);
  }
  return "loaded";
}

TEST(Package, ReadsMeshPhasesRolesAndDtypes) {
  Package package = Package::load(writePackage(manifest()));
  EXPECT_EQ(package.numStages, 2);
  EXPECT_EQ(package.mesh.describe(), "pp=2");
  EXPECT_EQ(package.mesh.pipelineAxis()->kind, AxisKind::Pipeline);
  ASSERT_EQ(package.stages.size(), 2u);
  const std::vector<StageFunctionInfo> &stage1 = package.stages[1].functions;
  ASSERT_EQ(stage1.size(), 3u);
  EXPECT_EQ(stage1[0].phase, Phase::Forward);
  EXPECT_EQ(stage1[1].phase, Phase::BackwardInput);
  EXPECT_EQ(stage1[2].phase, Phase::BackwardWeight);
  EXPECT_EQ(stage1[0].args[0].role, Role::Frozen);
  EXPECT_EQ(stage1[1].args[0].role, Role::LossScale);
  const MessageInfo &send = package.stages[0].functions[0].messages[0];
  EXPECT_TRUE(send.send);
  EXPECT_EQ(send.tensors[0].role, Role::None);
  EXPECT_EQ(send.tensors[0].dtype, PP_DTYPE_BF16);
  ASSERT_EQ(package.parameters.size(), 2u);
  EXPECT_EQ(package.parameters[1].tensor.role, Role::Frozen);
  EXPECT_FALSE(package.parameters[1].fromFile);
}

TEST(Package, EveryManifestDtypeParses) {
  json value = manifest();
  json &parts = value["stages"][0]["functions"][0]["messages"][0]["tensors"];
  const char *names[] = {"f32", "f16", "bf16", "f64", "i64", "i32", "i1"};
  pp_dtype dtypes[] = {PP_DTYPE_F32, PP_DTYPE_F16, PP_DTYPE_BF16, PP_DTYPE_F64,
                       PP_DTYPE_I64, PP_DTYPE_I32, PP_DTYPE_BOOL};
  parts.clear();
  for (const char *name : names)
    parts.push_back(tensor(name, "", name, {2}));
  Package package = Package::load(writePackage(value));
  const MessageInfo &send = package.stages[0].functions[0].messages[0];
  for (size_t i = 0; i < std::size(names); ++i)
    EXPECT_EQ(send.tensors[i].dtype, dtypes[i]) << names[i];
}

TEST(Package, OlderFormatsAreRefused) {
  json value = manifest();
  value["version"] = 1;
  EXPECT_EQ(loadError(value),
            "manifest.json: package format version 1 is from an older pp "
            "(this pp-run reads version 2); recompile the model");
}

TEST(Package, ASavedArgumentNeedsAnEarlierProducerOfTheSameName) {
  json value = manifest();
  value["stages"][0]["functions"][1]["args"][1]["name"] = "c";
  EXPECT_EQ(loadError(value),
            "stage 0: stage0_backward takes the saved value 'c', but no "
            "earlier function (stage0_forward) returns a saved value of that "
            "name");
  // The producer must run before its consumer.
  value = manifest();
  std::swap(value["stages"][1]["functions"][0],
            value["stages"][1]["functions"][2]);
  EXPECT_EQ(loadError(value), "stage 1 does not start with a forward function");
}

TEST(Package, BadFieldsNameWhatIsAllowed) {
  json value = manifest();
  value["inputs"][0]["dtype"] = "f8";
  EXPECT_EQ(loadError(value), "manifest.json: unknown dtype 'f8' (expected "
                              "f32, f16, bf16, f64, i64, i32 or i1)");
  value = manifest();
  value["stages"][0]["functions"][1]["phase"] = "backwards";
  EXPECT_EQ(loadError(value),
            "manifest.json: unknown phase 'backwards' (expected forward, "
            "backward, backward_input or backward_weight)");
  value = manifest();
  value["parameters"][0]["role"] = "input";
  EXPECT_EQ(loadError(value), "manifest.json: parameter 'w' has role 'input' "
                              "(expected parameter, frozen or constant)");
  value = manifest();
  value["mesh"]["axes"][0]["kind"] = "pipe";
  EXPECT_EQ(loadError(value),
            "manifest.json: unknown kind 'pipe' (expected pipeline, "
            "data_replicate, data_shard, tensor or context)");
}

TEST(Package, IntegerFieldsTakeOnlyJsonIntegers) {
  json value = manifest();
  value["parameters"][0]["stage"] = 6.7e66;
  EXPECT_EQ(loadError(value),
            "manifest.json: stage must be an integer, not 6.7e+66");
  value = manifest();
  value["inputs"][0]["shape"] = {2, 3.5};
  EXPECT_EQ(loadError(value),
            "manifest.json: shape must be an integer, not 3.5");
  value = manifest();
  value["labels"]["shape"] = 4;
  EXPECT_EQ(loadError(value), "manifest.json: shape must be an array, not 4");
}

TEST(Package, MessagesGoToStages) {
  json value = manifest();
  value["stages"][0]["functions"][0]["messages"][0]["peer"] = 2;
  EXPECT_EQ(loadError(value), "stage0_forward (stage 0) sends to stage 2, "
                              "but the stages are 0 to 1");
  value["stages"][0]["functions"][0]["messages"][0]["peer"] = -1;
  value["stages"][0]["functions"][0]["messages"][0]["kind"] = "recv";
  EXPECT_EQ(loadError(value), "stage0_forward (stage 0) receives from stage "
                              "-1, but the stages are 0 to 1");
}

TEST(Package, ParametersAndGradientsMatchTheParameterList) {
  json value = manifest();
  value["parameters"][0]["stage"] = 1;
  EXPECT_EQ(loadError(value),
            "stage0_forward (stage 0) has parameter 'w', which \"parameters\" "
            "does not list on this stage");
  value = manifest();
  value["stages"][1]["functions"][0]["args"][0]["role"] = "parameter";
  EXPECT_EQ(loadError(value), "stage1_forward (stage 1) has parameter 'c', "
                              "which \"parameters\" lists as frozen");
  value = manifest();
  value["stages"][1]["functions"][2]["results"].push_back(
      tensor("c", "gradient", "f32", {4}));
  EXPECT_EQ(loadError(value),
            "stage1_backward_weight (stage 1) has gradient 'c', but "
            "\"parameters\" lists no trainable parameter of that name on "
            "this stage");
}

TEST(Package, StagesLabelsAndMeshMustAgree) {
  json value = manifest();
  value["mesh"]["axes"][0]["size"] = 3;
  EXPECT_EQ(loadError(value),
            "the mesh (pp=3) has 3 pipeline stages but num_stages is 2");
  value = manifest();
  value["labels"]["dtype"] = "i64";
  EXPECT_EQ(loadError(value), "the labels 'labels' are i64, but a mse loss "
                              "needs f32 targets");
}

} // namespace
