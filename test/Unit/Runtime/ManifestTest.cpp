//===- ManifestTest.cpp - manifest.json written and read back -------------===//

#include "runtime/package/Manifest.h"

#include "ErrorOf.h"
#include "FieldCount.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <tuple>

using namespace pp::runtime;
using pp::runtime::test::fieldCount;

// Field-for-field equality of the manifest's structs, for the round trip
// below (std::tie over every field, so that the field counts below cover
// them).
namespace pp::runtime {
bool operator==(const MeshAxis &a, const MeshAxis &b) {
  return std::tie(a.name, a.size, a.kind) == std::tie(b.name, b.size, b.kind);
}
bool operator==(const FileDigest &a, const FileDigest &b) {
  return std::tie(a.bytes, a.sha256) == std::tie(b.bytes, b.sha256);
}
bool operator==(const PlannedAllocation &a, const PlannedAllocation &b) {
  return std::tie(a.bytes, a.offset) == std::tie(b.bytes, b.offset);
}
bool operator==(const MemoryPlan &a, const MemoryPlan &b) {
  return std::tie(a.arenaBytes, a.allocations) ==
         std::tie(b.arenaBytes, b.allocations);
}
bool operator==(const TensorInfo &a, const TensorInfo &b) {
  return std::tie(a.name, a.role, a.dtype, a.shape, a.indexBound, a.part) ==
         std::tie(b.name, b.role, b.dtype, b.shape, b.indexBound, b.part);
}
bool operator==(const OutputInfo &a, const OutputInfo &b) {
  return std::tie(a.tensor, a.stage) == std::tie(b.tensor, b.stage);
}
bool operator==(const MessageInfo &a, const MessageInfo &b) {
  return std::tie(a.send, a.peer, a.tensors) ==
         std::tie(b.send, b.peer, b.tensors);
}
bool operator==(const StageFunctionInfo &a, const StageFunctionInfo &b) {
  return std::tie(a.symbol, a.phase, a.args, a.results, a.messages, a.entry,
                  a.memoryPlan) == std::tie(b.symbol, b.phase, b.args,
                                            b.results, b.messages, b.entry,
                                            b.memoryPlan);
}
bool operator==(const StageInfo &a, const StageInfo &b) {
  return a.functions == b.functions;
}
bool operator==(const ParameterSharding &a, const ParameterSharding &b) {
  return std::tie(a.axis, a.dim, a.blocks, a.parts, a.globalShape) ==
         std::tie(b.axis, b.dim, b.blocks, b.parts, b.globalShape);
}
bool operator==(const ParameterInfo &a, const ParameterInfo &b) {
  return std::tie(a.tensor, a.stage, a.stages, a.gradientPartStages, a.fromFile,
                  a.offset, a.bytes, a.sharding, a.modelDtype) ==
         std::tie(b.tensor, b.stage, b.stages, b.gradientPartStages, b.fromFile,
                  b.offset, b.bytes, b.sharding, b.modelDtype);
}
bool operator==(const StageCost &a, const StageCost &b) {
  return std::tie(a.rank, a.firstNode, a.lastNode, a.flops, a.bytes,
                  a.sentBytes, a.boundary, a.savedBytes, a.inFlight,
                  a.parameterCount, a.parameterBytes, a.gradientBytes,
                  a.optimizerBytes, a.dataParallel, a.zeroLevel, a.peakBytes,
                  a.estimatedMicros, a.forwardMicros, a.backwardInputMicros,
                  a.backwardWeightMicros, a.schedule, a.microbatches,
                  a.recompute, a.recomputeOps) ==
         std::tie(b.rank, b.firstNode, b.lastNode, b.flops, b.bytes,
                  b.sentBytes, b.boundary, b.savedBytes, b.inFlight,
                  b.parameterCount, b.parameterBytes, b.gradientBytes,
                  b.optimizerBytes, b.dataParallel, b.zeroLevel, b.peakBytes,
                  b.estimatedMicros, b.forwardMicros, b.backwardInputMicros,
                  b.backwardWeightMicros, b.schedule, b.microbatches,
                  b.recompute, b.recomputeOps);
}
} // namespace pp::runtime

namespace {

// A new field must be written and read by Manifest.cpp (or say why it is
// not in the manifest), compared above and set to a value other than its
// default in the manifests below; then update its struct's count here.
static_assert(fieldCount<Manifest>() == 20, "Manifest changed");
static_assert(fieldCount<TensorInfo>() == 6, "TensorInfo changed");
static_assert(fieldCount<OutputInfo>() == 2, "OutputInfo changed");
static_assert(fieldCount<MessageInfo>() == 3, "MessageInfo changed");
static_assert(fieldCount<StageFunctionInfo>() == 7,
              "StageFunctionInfo changed");
static_assert(fieldCount<StageInfo>() == 1, "StageInfo changed");
static_assert(fieldCount<ParameterSharding>() == 5,
              "ParameterSharding changed");
static_assert(fieldCount<ParameterInfo>() == 9, "ParameterInfo changed");
static_assert(fieldCount<StageCost>() == 24, "StageCost changed");
static_assert(fieldCount<MeshAxis>() == 3, "MeshAxis changed");
static_assert(fieldCount<FileDigest>() == 2, "FileDigest changed");
static_assert(fieldCount<MemoryPlan>() == 2, "MemoryPlan changed");
static_assert(fieldCount<PlannedAllocation>() == 2,
              "PlannedAllocation changed");

TensorInfo tensor(const std::string &name, Role role, pp_dtype dtype,
                  Shape shape) {
  TensorInfo info;
  info.name = name;
  info.role = role;
  info.dtype = dtype;
  info.shape = std::move(shape);
  return info;
}

FileDigest digest(uint64_t bytes, char digit) {
  return {bytes, std::string(64, digit)};
}

/// Three stages on two pipeline ranks (0, 1, 0) of a pp x tp mesh, with
/// every field the manifest writes set to something other than its default:
/// a tied, a sharded and a seeded parameter, a gradient in two parts, a
/// split backward and an eval function, messages both ways, memory plans,
/// and every stage cost.
Manifest trainingManifest() {
  Manifest manifest;
  manifest.mesh = DeviceMesh({{"pp", 2, AxisKind::Pipeline},
                              {"dp", 1, AxisKind::DataShard},
                              {"tp", 2, AxisKind::Tensor}});
  manifest.numStages = 3;
  manifest.stageRanks = {0, 1, 0};
  manifest.microbatchSize = 4;
  manifest.precision = "fp16";
  manifest.lossKind = "cross_entropy";
  manifest.lossOutput = "loss";
  manifest.ignoreIndex = -1;
  manifest.lossClasses = 7;
  // Only the manifest's inputs have an index bound, not function arguments.
  TensorInfo tokens = tensor("tokens", Role::Input, PP_DTYPE_I64, {4, 3});
  manifest.inputs = {tokens};
  manifest.inputs[0].indexBound = 7;
  manifest.labels = tensor("labels", Role::Label, PP_DTYPE_I64, {4, 3});

  ParameterInfo embed;
  embed.tensor = tensor("embed", Role::Parameter, PP_DTYPE_F32, {7, 2});
  embed.stage = 0;
  embed.stages = {0, 2};
  embed.fromFile = true;
  embed.offset = 8;
  embed.bytes = 56;
  // A bf16 weight trained as an f32 master copy.
  embed.modelDtype = PP_DTYPE_BF16;
  ParameterInfo sharded;
  sharded.tensor = tensor("qkv", Role::Frozen, PP_DTYPE_BF16, {6, 2});
  sharded.stage = 1;
  sharded.stages = {1};
  sharded.sharding = ParameterSharding{"tp", 0, 3, 2, {12, 2}};
  sharded.modelDtype = PP_DTYPE_BF16;
  ParameterInfo scale;
  scale.tensor = tensor("scale", Role::Constant, PP_DTYPE_F64, {1});
  scale.stage = 2;
  scale.stages = {2};
  scale.fromFile = true;
  scale.offset = 0;
  scale.bytes = 8;
  scale.modelDtype = PP_DTYPE_F64;
  manifest.parameters = {embed, sharded, scale};
  manifest.heldConstants = {{"running_mean", 2}, {"running_var", 2}};
  manifest.foldedParameters = {{"pos_folded", "pos"}};

  TensorInfo hidden = tensor("h", Role::None, PP_DTYPE_F16, {4, 3, 2});
  MemoryPlan plan;
  plan.arenaBytes = 128;
  plan.allocations = {{64, 0}, {16, PlannedAllocation::kOutlivesCall}};
  TensorInfo embedPart0 = tensor("embed", Role::Gradient, PP_DTYPE_F32, {7, 2});
  TensorInfo embedPart1 = embedPart0;
  embedPart1.part = 1;
  StageFunctionInfo forward0{
      "stage0_forward",
      Phase::Forward,
      {tokens, tensor("embed", Role::Parameter, PP_DTYPE_F32, {7, 2})},
      {tensor("x", Role::Saved, PP_DTYPE_I64, {4, 3})},
      {{true, 1, {hidden}}},
      nullptr,
      plan};
  StageFunctionInfo backward0{"stage0_backward",
                              Phase::Backward,
                              {tensor("x", Role::Saved, PP_DTYPE_I64, {4, 3})},
                              {embedPart0},
                              {{false, 1, {hidden}}},
                              nullptr,
                              std::nullopt};
  StageFunctionInfo eval0{"stage0_eval", Phase::Eval, {tokens}, {}, {},
                          nullptr,       plan};
  StageFunctionInfo forward1{
      "stage1_forward",
      Phase::Forward,
      {tensor("qkv", Role::Frozen, PP_DTYPE_BF16, {6, 2})},
      {},
      {{false, 0, {hidden}}, {true, 2, {hidden}}},
      nullptr,
      std::nullopt};
  StageFunctionInfo forward2{
      "stage2_forward",
      Phase::Forward,
      {manifest.labels, tensor("scale", Role::Constant, PP_DTYPE_F64, {1})},
      {tensor("loss", Role::Loss, PP_DTYPE_F32, {})},
      {{false, 1, {hidden}}},
      nullptr,
      std::nullopt};
  StageFunctionInfo backwardInput2{
      "stage2_backward_input",
      Phase::BackwardInput,
      {tensor("loss_scale", Role::LossScale, PP_DTYPE_F32, {})},
      {tensor("y", Role::Saved, PP_DTYPE_F32, {2})},
      {{true, 1, {hidden}}},
      nullptr,
      std::nullopt};
  StageFunctionInfo backwardWeight2{
      "stage2_backward_weight",
      Phase::BackwardWeight,
      {tensor("y", Role::Saved, PP_DTYPE_F32, {2})},
      {embedPart1},
      {},
      nullptr,
      std::nullopt};
  manifest.stages = {StageInfo{{forward0, backward0, eval0}},
                     StageInfo{{forward1}},
                     StageInfo{{forward2, backwardInput2, backwardWeight2}}};

  StageCost cost;
  cost.rank = 1;
  cost.firstNode = "fc1";
  cost.lastNode = "fc2";
  cost.flops = 1.5e6;
  cost.bytes = 4096;
  cost.sentBytes = 96;
  cost.boundary = {{"h", 96}, {"mask", 0.5}};
  cost.savedBytes = 48;
  cost.inFlight = 2;
  cost.parameterCount = 14;
  cost.parameterBytes = 56;
  cost.gradientBytes = 56;
  cost.optimizerBytes = 112;
  cost.dataParallel = 2;
  cost.zeroLevel = 3;
  cost.peakBytes = 336;
  cost.estimatedMicros = 12.25;
  cost.forwardMicros = 4;
  cost.backwardInputMicros = 5;
  cost.backwardWeightMicros = 3.25;
  cost.schedule = "zb-h1";
  cost.microbatches = 8;
  cost.recompute = "ops";
  cost.recomputeOps = "nn\\.(softmax|erf)";
  manifest.stageCosts = {cost, StageCost(), cost};

  manifest.sourceTargets = {StageTarget::Cpu, StageTarget::Cuda};
  manifest.compiledTargets = {StageTarget::Cpu};
  manifest.files = {{"parameters.bin", digest(64, 'a')},
                    {"stages.cpp", digest(10, 'b')},
                    {"stages.cu", digest(11, 'c')},
                    {"libstages.so", digest(12, 'd')}};
  return manifest;
}

/// One stage on one device whose forward returns the model output "y".
Manifest forwardOnlyManifest() {
  Manifest manifest;
  manifest.numStages = 1;
  manifest.stageRanks = {0};
  manifest.microbatchSize = 2;
  manifest.inputs = {tensor("x", Role::Input, PP_DTYPE_F32, {2, 3})};
  TensorInfo y = tensor("y", Role::Output, PP_DTYPE_F32, {2});
  manifest.outputs = {{y, 0}};
  manifest.stages = {StageInfo{{StageFunctionInfo{"stage0_forward",
                                                  Phase::Forward,
                                                  manifest.inputs,
                                                  {y},
                                                  {},
                                                  nullptr,
                                                  std::nullopt}}}};
  manifest.files = {{"parameters.bin", digest(0, 'e')}};
  return manifest;
}

/// Expects `read` to equal `written` field for field.
void expectSameManifest(const Manifest &read, const Manifest &written) {
  EXPECT_EQ(read.mesh.axes(), written.mesh.axes());
  EXPECT_EQ(read.numStages, written.numStages);
  EXPECT_EQ(read.stageRanks, written.stageRanks);
  EXPECT_EQ(read.microbatchSize, written.microbatchSize);
  EXPECT_EQ(read.precision, written.precision);
  EXPECT_EQ(read.lossKind, written.lossKind);
  EXPECT_EQ(read.lossOutput, written.lossOutput);
  EXPECT_EQ(read.ignoreIndex, written.ignoreIndex);
  EXPECT_EQ(read.lossClasses, written.lossClasses);
  EXPECT_TRUE(read.inputs == written.inputs);
  EXPECT_TRUE(read.labels == written.labels);
  EXPECT_TRUE(read.outputs == written.outputs);
  ASSERT_EQ(read.parameters.size(), written.parameters.size());
  for (size_t i = 0; i < read.parameters.size(); ++i)
    EXPECT_TRUE(read.parameters[i] == written.parameters[i])
        << "parameter " << i;
  EXPECT_EQ(read.heldConstants, written.heldConstants);
  EXPECT_EQ(read.foldedParameters, written.foldedParameters);
  ASSERT_EQ(read.stages.size(), written.stages.size());
  for (size_t s = 0; s < read.stages.size(); ++s)
    EXPECT_TRUE(read.stages[s] == written.stages[s]) << "stage " << s;
  EXPECT_TRUE(read.stageCosts == written.stageCosts);
  EXPECT_EQ(read.sourceTargets, written.sourceTargets);
  EXPECT_EQ(read.compiledTargets, written.compiledTargets);
  EXPECT_TRUE(read.files == written.files);
}

TEST(Manifest, EveryFieldOfATrainingPackageSurvivesWritingAndReading) {
  Manifest written = trainingManifest();
  expectSameManifest(readManifest(writeManifest(written)), written);
}

TEST(Manifest, AForwardOnlyPackageSurvivesWritingAndReading) {
  Manifest written = forwardOnlyManifest();
  expectSameManifest(readManifest(writeManifest(written)), written);
}

TEST(Manifest, WritesTheCurrentFormatVersionAndOnlyWhatIsSet) {
  nlohmann::json value =
      nlohmann::json::parse(writeManifest(forwardOnlyManifest()));
  EXPECT_EQ(value["format"], "pp-pipeline-package");
  EXPECT_EQ(value["version"], kPackageFormatVersion);
  for (const char *absent : {"loss", "labels", "held_constants",
                             "folded_parameters", "stage_costs", "libraries"})
    EXPECT_FALSE(value.contains(absent)) << absent;
  // A gradient in one part has no "part"; one in several has them all.
  value = nlohmann::json::parse(writeManifest(trainingManifest()));
  EXPECT_EQ(value["stages"][0]["functions"][1]["results"][0]["part"], 0);
  EXPECT_EQ(value["stages"][2]["functions"][2]["results"][0]["part"], 1);
  // parameters.bin is recorded first, the other files by name.
  std::string text = writeManifest(trainingManifest());
  EXPECT_LT(text.find("\"parameters.bin\": {"),
            text.find("\"libstages.so\": {"));
}

/// The message readManifest throws for `value`.
std::string readError(const nlohmann::json &value) {
  return errorOf([&] { readManifest(value.dump()); });
}

/// readError of the training manifest after `change`.
template <typename Change> std::string errorAfter(Change change) {
  nlohmann::json value =
      nlohmann::json::parse(writeManifest(trainingManifest()));
  change(value);
  return readError(value);
}

TEST(Manifest, MalformedManifestsAreRefusedNamingTheKey) {
  EXPECT_EQ(errorOf([] { readManifest("{\"format\": "); }).substr(0, 35),
            "manifest.json is not valid JSON: [j");
  EXPECT_EQ(errorAfter([](nlohmann::json &m) { m["version"] = 4; }),
            "manifest.json: package format version 4 is from an older pp "
            "(this pp-run reads version 7); recompile the model");
  EXPECT_EQ(errorAfter([](nlohmann::json &m) { m["num_stages"] = "3"; }),
            "manifest.json: num_stages: expected an integer of at least 1, "
            "found \"3\"");
  EXPECT_EQ(errorAfter([](nlohmann::json &m) {
              m["stage_costs"][1]["flops"] = "many";
            }),
            "manifest.json: stage_costs[1].flops: expected a number, found "
            "\"many\"");
  EXPECT_EQ(errorAfter([](nlohmann::json &m) {
              m["stage_costs"][0]["in_flight"] = 1.5;
            }),
            "manifest.json: stage_costs[0].in_flight: expected an integer, "
            "found 1.5");
  EXPECT_EQ(errorAfter([](nlohmann::json &m) {
              m["stage_costs"][0]["boundary"][1] = {{"name", "mask"}};
            }),
            "manifest.json: stage_costs[0].boundary[1].bytes: missing "
            "(expected a number)");
  EXPECT_EQ(errorAfter([](nlohmann::json &m) {
              m["stage_costs"][2]["flop"] = 1;
            }).substr(0, 62),
            "manifest.json: stage_costs[2]: unknown field \"flop\" (expected ");
  EXPECT_EQ(errorAfter([](nlohmann::json &m) {
              m["libraries"]["cuda"]["library"] = "libstages_cuda.so";
            }),
            "manifest.json: libraries.cuda.library: expected a file that "
            "\"files\" records, found \"libstages_cuda.so\"");
  EXPECT_EQ(errorAfter([](nlohmann::json &m) {
              m["parameters"][1]["sharding"]["axis"] = "pp";
            }),
            "manifest.json: parameters[1].sharding.axis: expected a tensor "
            "axis of \"mesh\" (tp), found \"pp\"");
  EXPECT_EQ(
      errorAfter([](nlohmann::json &m) {
        m["stages"][0]["functions"][0]["memory_plan"]["allocations"][0] = {64,
                                                                           100};
      }),
      "manifest.json: stages[0].functions[0].memory_plan.allocations[0]"
      "[1]: expected -1 or an offset where 64 bytes fit in the arena of "
      "128, found 100");
}

TEST(Manifest, StageCostsOfTheCompilerAreCheckedAsTheManifestsAre) {
  StageCost cost = readStageCost(
      nlohmann::json{{"rank", 1}, {"boundary", nlohmann::json::array()}},
      "pp.stage_costs[0]");
  EXPECT_EQ(cost.rank, 1);
  ASSERT_TRUE(cost.boundary);
  EXPECT_TRUE(cost.boundary->empty());
  EXPECT_FALSE(cost.savedBytes);
  EXPECT_EQ(errorOf([] {
              readStageCost(nlohmann::json{{"saved_bytes", "x"}},
                            "pp.stage_costs[1]");
            }),
            "pp.stage_costs[1].saved_bytes: expected a number, found \"x\"");
}

TEST(Manifest, NamesThatAreNotUtf8CannotBeWritten) {
  Manifest manifest = trainingManifest();
  manifest.parameters[2].tensor.name = "w\xff\"2\\";
  EXPECT_EQ(errorOf([&] { writeManifest(manifest); }),
            "cannot write the manifest: parameters[2].name "
            "(\"w\\FF\\222\\\\\") is not valid UTF-8, which JSON needs; "
            "rename it");
  EXPECT_EQ(errorOf([&] { checkManifestStrings(manifest); }),
            errorOf([&] { writeManifest(manifest); }));
}

} // namespace
