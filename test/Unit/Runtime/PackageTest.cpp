//===- PackageTest.cpp - reading version-5 manifests ---------------------===//

#include "runtime/package/Package.h"

#include "runtime/core/Sha256.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
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

/// The manifest's record of a file holding `contents`.
json fileRecord(const std::string &contents) {
  Sha256 digest;
  digest.update(contents.data(), contents.size());
  return {{"bytes", contents.size()}, {"sha256", digest.hex()}};
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
          {"version", 7},
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
          {"stages", {stage0, stage1}},
          {"files", {{"parameters.bin", fileRecord("")}}}};
}

/// Writes `value` as the manifest of a fresh package directory, and
/// `files` (name, contents) beside it.
std::string writePackage(const json &value,
                         const std::map<std::string, std::string> &files = {}) {
  char directory[] = "/tmp/pp-package-test-XXXXXX";
  EXPECT_NE(::mkdtemp(directory), nullptr);
  std::ofstream(std::string(directory) + "/manifest.json") << value.dump(2);
  for (const auto &[name, contents] : files)
    std::ofstream(std::string(directory) + "/" + name, std::ios::binary)
        << contents;
  return directory;
}

/// The message `action` throws, without the package directory; "done"
/// when it throws nothing.
std::string errorOf(const std::function<void()> &action) {
  try {
    action();
  } catch (const std::runtime_error &error) {
    std::string message = error.what();
    return message.substr(message.find("': ") + 3);
  }
  return "done";
}

/// The message Package::load throws for `value`, without the directory.
std::string loadError(const json &value) {
  return errorOf([&] { Package::load(writePackage(value)); });
}

/// loadError of manifest() after `change`.
std::string errorAfter(const std::function<void(json &)> &change) {
  json value = manifest();
  change(value);
  return loadError(value);
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

TEST(Package, HeldConstantsAreReadWithTheirElementCounts) {
  EXPECT_TRUE(Package::load(writePackage(manifest())).heldConstants.empty());
  json value = manifest();
  value["held_constants"] = {{{"name", "rotary.inv_freq"}, {"elements", 4}},
                             {{"name", "val_5"}, {"elements", 1}}};
  Package package = Package::load(writePackage(value));
  ASSERT_EQ(package.heldConstants.size(), 2u);
  EXPECT_EQ(package.heldConstants[0],
            std::make_pair(std::string("rotary.inv_freq"), int64_t{4}));
  EXPECT_EQ(package.heldConstants[1].second, 1);
  EXPECT_EQ(errorAfter([](json &m) {
              m["held_constants"] = {{{"name", "mask"}, {"elements", -1}}};
            }),
            "manifest.json: held_constants[0].elements: expected an integer "
            "of at least 0, found -1");
  EXPECT_EQ(errorAfter([](json &m) {
              m["held_constants"] = {{{"name", "mask"}, {"size", 2}}};
            }),
            "manifest.json: held_constants[0]: unknown field \"size\" "
            "(expected name or elements)");
}

TEST(Package, FoldedParametersNameWhatTheyWereFoldedFrom) {
  EXPECT_TRUE(Package::load(writePackage(manifest())).foldedParameters.empty());
  json value = manifest();
  value["folded_parameters"] = {
      {{"name", "embedding_1"}, {"from", "transformer.wpe.weight"}}};
  EXPECT_EQ(
      Package::load(writePackage(value)).foldedParameters.at("embedding_1"),
      "transformer.wpe.weight");
  EXPECT_EQ(errorAfter([](json &m) {
              m["folded_parameters"] = {{{"name", "e"}, {"of", "w"}}};
            }),
            "manifest.json: folded_parameters[0]: unknown field \"of\" "
            "(expected name or from)");
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

TEST(Package, OtherFormatVersionsAreRefused) {
  json value = manifest();
  for (int version : {1, 2, 3, 4, 5, 6}) {
    value["version"] = version;
    EXPECT_EQ(loadError(value),
              "manifest.json: package format version " +
                  std::to_string(version) +
                  " is from an older pp (this pp-run reads version 7); "
                  "recompile the model");
  }
  value["version"] = 8;
  EXPECT_EQ(loadError(value),
            "manifest.json: package format version 8 is from a newer pp "
            "(this pp-run reads version 7); recompile the model");
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
  EXPECT_EQ(loadError(value),
            "manifest.json: inputs[0].dtype: expected f32, f16, bf16, f64, "
            "i64, i32 or i1, found \"f8\"");
  value = manifest();
  value["stages"][0]["functions"][1]["phase"] = "backwards";
  EXPECT_EQ(loadError(value),
            "manifest.json: stages[0].functions[1].phase: expected forward, "
            "backward, backward_input, backward_weight or eval, found "
            "\"backwards\"");
  value = manifest();
  value["parameters"][0]["role"] = "input";
  EXPECT_EQ(loadError(value), "manifest.json: parameters[0].role: expected "
                              "parameter, frozen or constant, found "
                              "\"input\"");
  value = manifest();
  value["mesh"]["axes"][0]["kind"] = "pipe";
  EXPECT_EQ(loadError(value),
            "manifest.json: mesh.axes[0].kind: expected pipeline, "
            "data_replicate, data_shard, tensor or context, found \"pipe\"");
}

/// Each manifest mistake is named by its field path and what was expected.
TEST(Package, SchemaViolationsNameTheFieldPath) {
  EXPECT_EQ(errorAfter([](json &m) { m["microbatch_size"] = 0; }),
            "manifest.json: microbatch_size: expected an integer of at least "
            "1, found 0");
  EXPECT_EQ(errorAfter([](json &m) { m["num_stages"] = "2"; }),
            "manifest.json: num_stages: expected an integer of at least 1, "
            "found \"2\"");
  EXPECT_EQ(errorAfter([](json &m) { m["microbatch_size"] = 2.5; }),
            "manifest.json: microbatch_size: expected an integer of at least "
            "1, found 2.5");
  EXPECT_EQ(errorAfter([](json &m) { m.erase("loss"); }),
            "manifest.json: loss: missing (expected an object)");
  EXPECT_EQ(errorAfter([](json &m) {
              m["stages"][1]["functions"][0]["args"][1].erase("dtype");
            }),
            "manifest.json: stages[1].functions[0].args[1].dtype: missing "
            "(expected f32, f16, bf16, f64, i64, i32 or i1)");
  EXPECT_EQ(errorAfter([](json &m) {
              m["stages"][0]["functions"][0]["args"] = json::object();
            }),
            "manifest.json: stages[0].functions[0].args: expected an array, "
            "found an object");
  EXPECT_EQ(errorAfter([](json &m) { m["mesh"]["axes"][0]["sise"] = 2; }),
            "manifest.json: mesh.axes[0]: unknown field \"sise\" (expected "
            "name, size or kind)");
  EXPECT_EQ(errorAfter([](json &m) { m["microbatch"] = 2; }),
            "manifest.json: unknown field \"microbatch\" (expected format, "
            "version, num_stages, microbatch_size, precision, mesh, loss, "
            "inputs, labels, outputs, parameters, held_constants, "
            "folded_parameters, stages, stage_costs, stage_ranks, libraries "
            "or files)");
  EXPECT_EQ(errorAfter([](json &m) { m["precision"] = "f8"; }),
            "manifest.json: precision: expected \"bf16\" or \"fp16\", found "
            "\"f8\"");
  EXPECT_EQ(errorAfter([](json &m) {
              m["stages"][0]["functions"][0]["messages"][0]["peer"] = 2;
            }),
            "manifest.json: stages[0].functions[0].messages[0].peer: "
            "expected an integer from 0 to 1, found 2");
  // A message to its own stage made buildSchedule throw
  // std::invalid_argument from pp-run's plan (found by pp-fuzz-package).
  EXPECT_EQ(errorAfter([](json &m) {
              m["stages"][0]["functions"][0]["messages"][0]["peer"] = 0;
            }),
            "manifest.json: stages[0].functions[0].messages[0].peer: stage "
            "0, the function's own; a message goes to another stage");
  EXPECT_EQ(errorAfter([](json &m) {
              m["stages"][0]["functions"][0]["messages"][0]["kind"] = "post";
            }),
            "manifest.json: stages[0].functions[0].messages[0].kind: "
            "expected send or recv, found \"post\"");
  EXPECT_EQ(errorAfter([](json &m) { m["inputs"][0]["shape"][1] = -3; }),
            "manifest.json: inputs[0].shape[1]: expected an integer of at "
            "least 0, found -3");
  EXPECT_EQ(errorAfter([](json &m) { m["inputs"][0]["role"] = "label"; }),
            "manifest.json: inputs[0].role: expected input, found \"label\"");
  EXPECT_EQ(errorAfter([](json &m) { m["labels"]["name"] = ""; }),
            "manifest.json: labels.name: expected a non-empty string, found "
            "\"\"");
  EXPECT_EQ(errorAfter([](json &m) { m["parameters"][1]["stage"] = 2; }),
            "manifest.json: parameters[1].stage: expected an integer from 0 "
            "to 1, found 2");
  EXPECT_EQ(errorAfter([](json &m) { m["parameters"][0]["offset"] = 0; }),
            "manifest.json: parameters[0]: unknown field \"offset\" "
            "(expected name, dtype, shape, role, stage, stages, init, "
            "global_shape, sharding or model_dtype)");
  EXPECT_EQ(
      errorAfter([](json &m) { m["parameters"][0]["model_dtype"] = "f64"; }),
      "manifest.json: parameters[0].model_dtype: expected bf16 or f16, "
      "found \"f64\"");
  // A tied parameter's holders: two or more, increasing, from its stage.
  EXPECT_EQ(
      errorAfter([](json &m) {
        m["parameters"][1]["stages"] = {0, 1};
      }),
      "manifest.json: parameters[1].stages: expected two or more stages, the "
      "first equal to \"stage\" (1), found an array");
  EXPECT_EQ(
      errorAfter([](json &m) {
        m["parameters"][0]["stages"] = {0, 0};
      }),
      "manifest.json: parameters[0].stages[1]: expected an integer from 1 to "
      "1, found 0");
  EXPECT_EQ(errorAfter([](json &m) { m["stages"][1]["stage"] = 2; }),
            "manifest.json: stages[1].stage: expected 1 (list the stages in "
            "order from 0), found 2");
  EXPECT_EQ(errorAfter([](json &m) { m["loss"]["kind"] = "cross_entropy"; }),
            "manifest.json: loss.classes: missing (expected an integer of at "
            "least 1)");
  EXPECT_EQ(errorAfter([](json &m) { m["stage_costs"] = {json::object()}; }),
            "manifest.json: stage_costs: expected an array of 2 entries "
            "(num_stages), found an array");
  EXPECT_EQ(errorAfter([](json &m) { m = json::array(); }),
            "manifest.json: the top level: expected an object, found an array");
}

TEST(Package, FilesAreRecordedByNameSizeAndDigest) {
  EXPECT_EQ(errorAfter([](json &m) { m["files"].erase("parameters.bin"); }),
            "manifest.json: files.parameters.bin: missing (expected the size "
            "and SHA-256 of parameters.bin)");
  EXPECT_EQ(errorAfter([](json &m) {
              m["files"]["parameters.bin"]["sha256"] = "ABC";
            }),
            "manifest.json: files.parameters.bin.sha256: expected 64 "
            "lowercase hex digits, found \"ABC\"");
  EXPECT_EQ(errorAfter([](json &m) { m["files"]["../x"] = fileRecord(""); }),
            "manifest.json: files: \"../x\" is not a file name in the "
            "package directory (expected a name without '/')");
  EXPECT_EQ(errorAfter([](json &m) {
              m["libraries"] = {{"cpu", {{"source", "stages.cpp"}}}};
            }),
            "manifest.json: libraries.cpu.source: expected a file that "
            "\"files\" records, found \"stages.cpp\"");
  // A parameter read from parameters.bin must lie inside it.
  auto fromFile = [](json &m, int64_t offset, int64_t bytes) {
    m["parameters"][0].update(
        {{"init", "file"}, {"offset", offset}, {"bytes", bytes}});
    m["files"]["parameters.bin"] = fileRecord(std::string(48, 'x'));
  };
  EXPECT_EQ(errorAfter([&](json &m) { fromFile(m, 0, 40); }),
            "manifest.json: parameters[0].bytes: expected 48 (3x4 f32), "
            "found 40");
  EXPECT_EQ(errorAfter([&](json &m) { fromFile(m, 4, 48); }),
            "manifest.json: parameters[0].offset: expected an offset whose 48 "
            "bytes lie inside parameters.bin (48 bytes), found 4");
}

/// Every file is checked against its record before it is used: a changed
/// or truncated file is refused, naming it, and never read or loaded.
TEST(Package, DamagedFilesAreRefusedBeforeUse) {
  std::string weights(48, '\1');
  json value = manifest();
  value["parameters"][0].update(
      {{"init", "file"}, {"offset", 0}, {"bytes", 48}});
  value["files"]["parameters.bin"] = fileRecord(weights);
  value["files"]["libstages.so"] = fileRecord("not a library");
  value["files"]["stages.cpp"] = fileRecord("extern \"C\" {}");
  value["libraries"] = {
      {"cpu", {{"source", "stages.cpp"}, {"library", "libstages.so"}}}};
  pp_tensor *weight = nullptr;
  int64_t shape[] = {3, 4};
  ASSERT_EQ(pp_tensor_create(PP_DTYPE_F32, 2, shape, &weight), PP_OK);
  std::unique_ptr<pp_tensor, void (*)(pp_tensor *)> owner(weight,
                                                          pp_tensor_destroy);
  auto readError = [&](const std::string &contents) {
    Package package =
        Package::load(writePackage(value, {{"parameters.bin", contents}}));
    return errorOf(
        [&] { package.readParameter(package.parameters[0], weight); });
  };
  EXPECT_EQ(readError(weights), "done");
  std::string flipped = weights;
  flipped[5] ^= 0x40;
  EXPECT_EQ(readError(flipped),
            "parameters.bin does not match the SHA-256 manifest.json "
            "records: the package is damaged; compile it again (pp-opt "
            "--pp-emit)");
  EXPECT_EQ(readError(weights.substr(0, 20)),
            "parameters.bin has 20 bytes, but manifest.json records 48: the "
            "package is damaged; compile it again (pp-opt --pp-emit)");

  Package package =
      Package::load(writePackage(value, {{"libstages.so", "not a libr"}}));
  EXPECT_EQ(package.fileProblem("libstages.so"),
            "libstages.so has 10 bytes, but manifest.json records 13");
  EXPECT_EQ(package.fileProblem("stages.cpp"), "stages.cpp is missing");
  EXPECT_EQ(errorOf([&] {
              package.loadStageLibrary(
                  *package.compiledLibrary(StageTarget::Cpu));
            }),
            "libstages.so has 10 bytes, but manifest.json records 13: the "
            "package is damaged; compile it again (pp-opt --pp-emit)");
  // The CUDA library is built from stages.cu when a run needs it.
  EXPECT_FALSE(package.compiledLibrary(StageTarget::Cuda));
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

/// manifest() with "w" tied: held by both stages, its gradient in two
/// parts, part 1 from stage 0's backward and part 0 from stage 1's
/// backward_weight.
json partedManifest() {
  json value = manifest();
  value["parameters"][0]["stages"] = {0, 1};
  value["stages"][1]["functions"][0]["args"].push_back(
      tensor("w", "parameter", "f32", {3, 4}));
  value["stages"][0]["functions"][1]["results"][0]["part"] = 1;
  json part = tensor("w", "gradient", "f32", {3, 4});
  part["part"] = 0;
  value["stages"][1]["functions"][2]["results"].push_back(part);
  return value;
}

TEST(Package, GradientPartsAreNumberedFromZeroEachOnce) {
  Package package = Package::load(writePackage(partedManifest()));
  EXPECT_EQ(package.parameters[0].gradientPartStages,
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(package.stages[0].functions[1].results[0].part, 1);
  // One gradient result: part 0; a frozen tensor has none.
  package = Package::load(writePackage(manifest()));
  EXPECT_EQ(package.parameters[0].gradientPartStages,
            (std::vector<int64_t>{0}));
  EXPECT_TRUE(package.parameters[1].gradientPartStages.empty());

  json value = partedManifest();
  value["stages"][1]["functions"][2]["results"][0]["part"] = 1;
  EXPECT_EQ(loadError(value),
            "the 2 gradient results named 'w' must be its parts 0 to 1, each "
            "once, but they are parts 1 (stage0_backward, stage 0), 1 "
            "(stage1_backward_weight, stage 1); recompile the model");
  // A package compiled before gradients came in parts.
  value = partedManifest();
  value["stages"][0]["functions"][1]["results"][0].erase("part");
  value["stages"][1]["functions"][2]["results"][0].erase("part");
  EXPECT_EQ(loadError(value),
            "the 2 gradient results named 'w' must be its parts 0 to 1, each "
            "once, but they are parts 0 (stage0_backward, stage 0), 0 "
            "(stage1_backward_weight, stage 1); recompile the model");
  value = partedManifest();
  value["stages"][1]["functions"][0]["results"][0]["part"] = 0;
  EXPECT_EQ(loadError(value),
            "manifest.json: stages[1].functions[0].results[0].part: expected "
            "no part on a result of role loss (only gradients come in "
            "parts), found 0");
}

TEST(Package, StagesLabelsAndMeshMustAgree) {
  json value = manifest();
  value["mesh"]["axes"][0]["size"] = 3;
  EXPECT_EQ(loadError(value),
            "the mesh (pp=3) has 3 pipeline ranks but stage_ranks places the "
            "2 stages on 2 ranks; recompile the model");
  // Virtual stages: both stages on one rank of a one-rank pipeline axis.
  value = manifest();
  value["mesh"]["axes"][0]["size"] = 1;
  value["stage_ranks"] = {0, 0};
  EXPECT_EQ(loadError(value), "done");
  value["stage_ranks"] = {1, 1};
  EXPECT_EQ(loadError(value),
            "manifest.json: stage_ranks: rank 0 runs no stage; every rank "
            "from 0 to 1 must run one");
  value["stage_ranks"] = {0};
  EXPECT_EQ(loadError(value),
            "manifest.json: stage_ranks: 1 ranks for 2 stages (num_stages)");
  value = manifest();
  value["labels"]["dtype"] = "i64";
  EXPECT_EQ(loadError(value), "the labels 'labels' are i64, but a mse loss "
                              "needs f32, bf16 or f16 targets");
  value["labels"]["dtype"] = "bf16";
  EXPECT_EQ(loadError(value), "done");
}

/// manifest() on a pp=2 x tp=2 mesh, the parameter "w" sharded over "tp"
/// on dimension 1 (global [3, 8], local [3, 4]) with `blocks` blocks.
json shardedManifest(int64_t blocks = 1) {
  json value = manifest();
  value["mesh"]["axes"].push_back(
      {{"name", "tp"}, {"size", 2}, {"kind", "tensor"}});
  value["parameters"][0]["global_shape"] = {3, 8};
  value["parameters"][0]["sharding"] = {
      {"axis", "tp"}, {"dim", 1}, {"blocks", blocks}};
  return value;
}

TEST(Package, ShardedParametersHaveAGlobalShapeAndASharding) {
  Package package = Package::load(writePackage(shardedManifest(2)));
  EXPECT_EQ(package.mesh.describe(), "pp=2 x tp=2");
  const ParameterInfo &w = package.parameters[0];
  ASSERT_TRUE(w.sharding);
  EXPECT_EQ(w.sharding->axis, "tp");
  EXPECT_EQ(w.sharding->dim, 1);
  EXPECT_EQ(w.sharding->blocks, 2);
  EXPECT_EQ(w.sharding->parts, 2);
  EXPECT_EQ(w.tensor.shape, (Shape{3, 4}));
  EXPECT_EQ(w.globalShape(), (Shape{3, 8}));
  // Replicated: no sharding, the global shape is the local one.
  const ParameterInfo &c = package.parameters[1];
  EXPECT_FALSE(c.sharding);
  EXPECT_EQ(c.globalShape(), (Shape{4}));
  // "blocks" defaults to 1.
  json value = shardedManifest();
  value["parameters"][0]["sharding"].erase("blocks");
  EXPECT_EQ(Package::load(writePackage(value)).parameters[0].sharding->blocks,
            1);
}

TEST(Package, ParametersBinHoldsTheGlobalTensorOfAShardedParameter) {
  json value = shardedManifest();
  std::string bytes(3 * 8 * sizeof(float), '\0');
  value["files"]["parameters.bin"] = fileRecord(bytes);
  value["parameters"][0]["init"] = "file";
  value["parameters"][0]["offset"] = 0;
  value["parameters"][0]["bytes"] = 3 * 4 * sizeof(float);
  EXPECT_EQ(loadError(value), "manifest.json: parameters[0].bytes: expected "
                              "96 (3x8 f32), found 48");
  value["parameters"][0]["bytes"] = 3 * 8 * sizeof(float);
  EXPECT_EQ(errorOf([&] {
              Package::load(writePackage(value, {{"parameters.bin", bytes}}));
            }),
            "done");
}

TEST(Package, BadShardingsNameTheFieldAndTheRule) {
  auto shardedError = [](const std::function<void(json &)> &change) {
    json value = shardedManifest();
    change(value);
    return loadError(value);
  };
  EXPECT_EQ(shardedError(
                [](json &m) { m["parameters"][0]["sharding"]["axis"] = "pp"; }),
            "manifest.json: parameters[0].sharding.axis: expected a tensor "
            "axis of \"mesh\" (tp), found \"pp\"");
  EXPECT_EQ(shardedError(
                [](json &m) { m["parameters"][0]["sharding"]["axis"] = "sp"; }),
            "manifest.json: parameters[0].sharding.axis: expected a tensor "
            "axis of \"mesh\" (tp), found \"sp\"");
  EXPECT_EQ(errorAfter([](json &m) {
              m["parameters"][0]["global_shape"] = {3, 8};
              m["parameters"][0]["sharding"] = {{"axis", "tp"}, {"dim", 1}};
            }),
            "manifest.json: parameters[0].sharding.axis: expected a tensor "
            "axis of \"mesh\" (it has none), found \"tp\"");
  EXPECT_EQ(
      shardedError([](json &m) { m["parameters"][0]["sharding"]["dim"] = 2; }),
      "manifest.json: parameters[0].sharding.dim: expected an integer "
      "from 0 to 1, found 2");
  EXPECT_EQ(shardedError(
                [](json &m) { m["parameters"][0]["sharding"]["blocks"] = 3; }),
            "manifest.json: parameters[0].global_shape: expected a size of "
            "dimension 1 that divides by 3 blocks x 2 devices of axis 'tp' "
            "(it is 8), found an array");
  EXPECT_EQ(shardedError([](json &m) {
              m["parameters"][0]["shape"] = {3, 8};
            }),
            "manifest.json: parameters[0].shape: expected 3x4 (global_shape "
            "3x8 with dimension 1 split over the 2 devices of axis 'tp'), "
            "found an array");
  EXPECT_EQ(shardedError([](json &m) { m["parameters"][0].erase("sharding"); }),
            "manifest.json: parameters[0].sharding: missing (expected a "
            "sharding {\"axis\", \"dim\", \"blocks\"} beside "
            "\"global_shape\")");
  EXPECT_EQ(
      shardedError([](json &m) { m["parameters"][0].erase("global_shape"); }),
      "manifest.json: parameters[0].global_shape: missing (expected an "
      "array)");
  EXPECT_EQ(
      shardedError([](json &m) { m["parameters"][0]["sharding"]["size"] = 2; }),
      "manifest.json: parameters[0].sharding: unknown field \"size\" "
      "(expected axis, dim or blocks)");
}

/// manifest() as a forward-only package: forward functions only, stage 1
/// returning the output "y", no loss or labels; "x" indexes a table of 10
/// rows.
json forwardOnlyManifest() {
  json value = manifest();
  value.erase("loss");
  value.erase("labels");
  value["inputs"][0]["dtype"] = "i64";
  value["inputs"][0]["index_bound"] = 10;
  value["stages"][0]["functions"][0]["args"][0]["dtype"] = "i64";
  value["stages"][0]["functions"][0]["results"] = json::array();
  value["stages"][0]["functions"].erase(1);
  value["stages"][1]["functions"] = {
      function("stage1_forward", "forward", {tensor("c", "frozen", "f32", {4})},
               {tensor("y", "output", "f32", {2, 4})})};
  value["outputs"] = {
      {{"name", "y"}, {"dtype", "f32"}, {"shape", {2, 4}}, {"stage", 1}}};
  return value;
}

/// manifest() with an eval function on each stage, as pp-derive-eval makes
/// them: stage 0's sends "h" to stage 1, whose returns the loss.
json manifestWithEval() {
  json value = manifest();
  json h = tensor("h", "", "bf16", {2, 4});
  value["stages"][0]["functions"].push_back(function(
      "stage0_eval", "eval",
      {tensor("x", "input", "f32", {2, 3}),
       tensor("w", "parameter", "f32", {3, 4})},
      json::array(), {{{"kind", "send"}, {"peer", 1}, {"tensors", {h}}}}));
  value["stages"][1]["functions"].push_back(
      function("stage1_eval", "eval",
               {tensor("c", "frozen", "f32", {4}),
                tensor("labels", "label", "f32", {2, 4})},
               {tensor("loss", "loss", "f32", {})},
               {{{"kind", "recv"}, {"peer", 0}, {"tensors", {h}}}}));
  return value;
}

TEST(Package, EvalFunctionsLoadAfterTheTrainingFunctions) {
  EXPECT_FALSE(Package::load(writePackage(manifest())).hasEvalFunctions());
  Package package = Package::load(writePackage(manifestWithEval()));
  EXPECT_TRUE(package.hasEvalFunctions());
  const StageFunctionInfo *eval = package.stages[1].evalFunction();
  ASSERT_NE(eval, nullptr);
  EXPECT_EQ(eval->symbol, "stage1_eval");
  EXPECT_EQ(eval->phase, Phase::Eval);
  EXPECT_EQ(eval->results[0].role, Role::Loss);
  EXPECT_EQ(eval->messages[0].peer, 0);
  EXPECT_EQ(package.stages[0].evalFunction()->args[1].name, "w");
}

TEST(Package, EvalFunctionsRunAloneOnEveryStage) {
  json value = manifestWithEval();
  value["stages"][1]["functions"].erase(3);
  EXPECT_EQ(loadError(value), "stage 0 has an eval function but stage 1 has "
                              "none; every stage needs one (recompile the "
                              "model)");
  value = manifestWithEval();
  value["stages"][0]["functions"].push_back(value["stages"][0]["functions"][2]);
  value["stages"][0]["functions"][3]["function"] = "stage0_eval_again";
  EXPECT_EQ(loadError(value), "stage 0 has two eval functions, stage0_eval "
                              "and stage0_eval_again");
  value = manifestWithEval();
  value["stages"][0]["functions"][2]["args"].push_back(
      tensor("a", "saved", "f32", {2, 4}));
  EXPECT_EQ(loadError(value),
            "stage0_eval (stage 0) takes saved 'a', but an eval function runs "
            "alone: it takes inputs, labels and parameters only");
  value = manifestWithEval();
  value["stages"][0]["functions"][2]["results"].push_back(
      tensor("e", "saved", "f32", {2, 3}));
  EXPECT_EQ(loadError(value), "stage0_eval (stage 0) returns saved 'e', but "
                              "an eval function returns the loss only");
  value = manifestWithEval();
  value["stages"][1]["functions"][3]["results"] = json::array();
  EXPECT_EQ(loadError(value), "stage1_eval (stage 1) returns 0 losses, but "
                              "stage1_forward (stage 1) returns 1");
}

TEST(Package, ForwardOnlyPackagesListOutputsInsteadOfALoss) {
  Package package = Package::load(writePackage(forwardOnlyManifest()));
  EXPECT_TRUE(package.forwardOnly());
  ASSERT_EQ(package.outputs.size(), 1u);
  EXPECT_EQ(package.outputs[0].tensor.name, "y");
  EXPECT_EQ(package.outputs[0].stage, 1);
  EXPECT_EQ(package.inputs[0].indexBound, 10);
  EXPECT_FALSE(Package::load(writePackage(manifest())).forwardOnly());

  json value = forwardOnlyManifest();
  value["stages"][1]["functions"][0]["results"][0]["shape"] = {2, 5};
  EXPECT_EQ(loadError(value),
            "output 'y' (2x4 f32) is not a result of the forward function of "
            "its stage 1");
  for (std::string phase : {"backward", "eval"}) {
    value = forwardOnlyManifest();
    value["stages"][0]["functions"].push_back(
        function("stage0_" + phase, phase, json::array(), json::array()));
    EXPECT_EQ(loadError(value),
              "the package is forward-only (it lists outputs, no loss), but "
              "stage 0 has the " +
                  phase + " function stage0_" + phase);
  }
  value = forwardOnlyManifest();
  value["labels"] = tensor("labels", "label", "f32", {2, 4});
  EXPECT_EQ(loadError(value),
            "manifest.json: labels: expected no labels in a forward-only "
            "package (it has outputs and no loss), found an object");
  value = forwardOnlyManifest();
  value["inputs"][0]["index_bound"] = 0;
  EXPECT_EQ(loadError(value), "manifest.json: inputs[0].index_bound: expected "
                              "an integer of at least 1, found 0");
}

} // namespace

TEST(Package, MemoryPlansAndSavedBytesEstimatesAreRead) {
  json value = manifest();
  value["stages"][0]["functions"][0]["memory_plan"] = {
      {"arena_bytes", 128}, {"allocations", {{16, 0}, {8, -1}, {64, 64}}}};
  value["stage_costs"] = {{{"saved_bytes", 96.0}}, {{"flops", 1.0}}};
  Package package = Package::load(writePackage(value));
  const std::optional<MemoryPlan> &plan =
      package.stages[0].functions[0].memoryPlan;
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->arenaBytes, 128u);
  ASSERT_EQ(plan->allocations.size(), 3u);
  EXPECT_EQ(plan->allocations[1].offset, PlannedAllocation::kOutlivesCall);
  EXPECT_EQ(plan->allocations[2].bytes, 64u);
  EXPECT_FALSE(package.stages[1].functions[0].memoryPlan.has_value());
  ASSERT_EQ(package.estimatedSavedBytes.size(), 2u);
  EXPECT_EQ(package.estimatedSavedBytes[0], 96.0);
  EXPECT_FALSE(package.estimatedSavedBytes[1].has_value());
}

TEST(Package, StageCostsGiveEstimatesOnlyWhenEveryStageHasTimes) {
  json value = manifest();
  json timed = {{"rank", 1},
                {"forward_us", 4.0},
                {"backward_input_us", 2.0},
                {"estimated_us", 8.0},
                {"saved_bytes", 32.0},
                {"in_flight", 2},
                {"first_node", "fc2"},
                {"boundary", {{{"bytes", 16.0}, {"name", "h"}}}}};
  value["stage_costs"] = {timed, timed};
  Package package = Package::load(writePackage(value));
  ASSERT_EQ(package.stageEstimates.size(), 2u);
  const StageEstimate &estimate = package.stageEstimates[1];
  EXPECT_EQ(estimate.rank, 1);
  EXPECT_DOUBLE_EQ(estimate.forwardSeconds, 4e-6);
  EXPECT_DOUBLE_EQ(estimate.backwardInputSeconds, 2e-6);
  EXPECT_EQ(estimate.backwardWeightSeconds, 0.0);
  EXPECT_DOUBLE_EQ(estimate.totalSeconds, 8e-6);
  EXPECT_EQ(estimate.savedBytes, 32.0);
  EXPECT_EQ(estimate.inFlight, 2);
  EXPECT_EQ(estimate.firstNode, "fc2");
  EXPECT_EQ(estimate.lastNode, "");
  EXPECT_EQ(estimate.boundary,
            (std::vector<std::pair<std::string, double>>{{"h", 16.0}}));
  value["stage_costs"][1].erase("forward_us");
  package = Package::load(writePackage(value));
  EXPECT_TRUE(package.stageEstimates.empty());
  EXPECT_EQ(package.estimatedSavedBytes,
            (std::vector<std::optional<double>>{32.0, 32.0}));
}

TEST(Package, ComputeCopiesNameAParameterOfTheirStageWithItsShape) {
  json value = manifest();
  json copy = tensor("w", "compute_copy", "bf16", {3, 4});
  value["stages"][0]["functions"][0]["args"].push_back(copy);
  value["stages"][0]["functions"][1]["args"].push_back(copy);
  json timed = {{"forward_us", 4.0}};
  value["stage_costs"] = {timed, timed};
  Package package = Package::load(writePackage(value));
  EXPECT_EQ(package.stages[0].functions[0].args.back().role,
            Role::ComputeCopy);
  // Held once per stage, whichever functions take it.
  ASSERT_EQ(package.stageEstimates.size(), 2u);
  EXPECT_EQ(package.stageEstimates[0].computeCopyBytes, 24.0);
  EXPECT_EQ(package.stageEstimates[1].computeCopyBytes, 0.0);

  value["stages"][0]["functions"][1]["args"].back()["shape"] = {4, 3};
  EXPECT_EQ(loadError(value),
            "stage0_backward (stage 0) has compute_copy 'w', of shape 4x3, "
            "but its parameter's shape is 3x4");
  value = manifest();
  value["stages"][0]["functions"][0]["args"].push_back(
      tensor("c", "compute_copy", "bf16", {4}));
  EXPECT_EQ(loadError(value),
            "stage0_forward (stage 0) has compute_copy 'c', a copy of a "
            "parameter \"parameters\" does not list on this stage");
}

TEST(Package, MemoryPlansStayInsideTheirArena) {
  EXPECT_EQ(errorAfter([](json &m) {
              m["stages"][0]["functions"][0]["memory_plan"] = {
                  {"arena_bytes", 128}, {"allocations", {{16, 0}, {80, 64}}}};
            }),
            "manifest.json: stages[0].functions[0].memory_plan.allocations[1]"
            "[1]: expected -1 or an offset where 80 bytes fit in the arena of "
            "128, found 64");
  EXPECT_EQ(errorAfter([](json &m) {
              m["stages"][0]["functions"][0]["memory_plan"] = {
                  {"arena_bytes", 128}, {"allocations", {{16}}}};
            }),
            "manifest.json: stages[0].functions[0].memory_plan.allocations[0]"
            ": expected [bytes, offset], two integers, found an array");
}
