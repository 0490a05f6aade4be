//===- Manifest.cpp - what a package's manifest.json holds ----------------===//
//
// The reader checks every key's type and range and the manifest's own
// consistency (stages, ranks, shardings against the mesh, parameter bytes
// inside parameters.bin, files named in "libraries"); Package::load then
// checks what the runtime relies on across stages (docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#include "runtime/package/Manifest.h"

#include "runtime/core/EnumNames.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <stdexcept>
#include <type_traits>
#include <variant>

namespace pp::runtime {
namespace {

using json = nlohmann::json;
/// What the writer builds: members in the order written.
using OrderedJson = nlohmann::ordered_json;

/// The manifest's "format".
constexpr const char *kFormatName = "pp-pipeline-package";

constexpr EnumNames<Role, 11> kRoles = {
    {Role::Input, "input"},   {Role::Parameter, "parameter"},
    {Role::Frozen, "frozen"}, {Role::Constant, "constant"},
    {Role::Label, "label"},   {Role::LossScale, "loss_scale"},
    {Role::Loss, "loss"},     {Role::Gradient, "gradient"},
    {Role::Saved, "saved"},   {Role::Output, "output"},
    {Role::ComputeCopy, "compute_copy"},
};

/// "a, b or c".
std::string listChoices(const std::vector<std::string> &choices) {
  std::string text;
  for (size_t i = 0; i < choices.size(); ++i)
    text += (i == 0                    ? ""
             : i + 1 == choices.size() ? " or "
                                       : ", ") +
            choices[i];
  return text;
}

/// A value of the manifest at `path` (`stages[1].functions[0].args[2]`),
/// or a member that is missing. Its readers check the JSON type and the
/// range and throw std::runtime_error naming the path, what was expected
/// and what was found.
class Field {
public:
  Field(const json *value, std::string path)
      : value(value), path(std::move(path)) {}

  bool present() const { return value != nullptr; }

  /// The member `name` of this object; missing when absent.
  Field operator[](const std::string &name) const {
    checkType(value && value->is_object(), "an object");
    auto it = value->find(name);
    return Field(it == value->end() ? nullptr : &*it, childPath(name));
  }

  /// Checks that this is an object with no members but `allowed`.
  void onlyMembers(const std::vector<std::string> &allowed) const {
    checkType(value && value->is_object(), "an object");
    for (const auto &member : value->items())
      if (std::find(allowed.begin(), allowed.end(), member.key()) ==
          allowed.end())
        throw std::runtime_error((path.empty() ? "" : path + ": ") +
                                 "unknown field \"" + member.key() +
                                 "\" (expected " + listChoices(allowed) + ")");
  }

  /// The elements of this array.
  std::vector<Field> elements() const {
    checkType(value && value->is_array(), "an array");
    std::vector<Field> fields;
    for (size_t i = 0; i < value->size(); ++i)
      fields.emplace_back(&(*value)[i], path + "[" + std::to_string(i) + "]");
    return fields;
  }

  /// The members of this object, by name.
  std::vector<std::pair<std::string, Field>> members() const {
    checkType(value && value->is_object(), "an object");
    std::vector<std::pair<std::string, Field>> fields;
    for (const auto &member : value->items())
      fields.emplace_back(member.key(),
                          Field(&member.value(), childPath(member.key())));
    return fields;
  }

  std::string string() const {
    checkType(value && value->is_string(), "a string");
    return value->get<std::string>();
  }

  /// A string of at least one character.
  std::string name() const {
    std::string text = string();
    if (text.empty())
      fail("a non-empty string");
    return text;
  }

  /// An integer in [min, max].
  int64_t integer(int64_t min = INT64_MIN, int64_t max = INT64_MAX) const {
    std::string expected = min == INT64_MIN ? "an integer"
                           : max == INT64_MAX
                               ? "an integer of at least " + std::to_string(min)
                               : "an integer from " + std::to_string(min) +
                                     " to " + std::to_string(max);
    if (!value || !value->is_number_integer() ||
        (value->is_number_unsigned() && value->get<uint64_t>() > INT64_MAX))
      fail(expected);
    int64_t number = value->get<int64_t>();
    if (number < min || number > max)
      fail(expected);
    return number;
  }

  /// A number.
  double number() const {
    checkType(value && value->is_number(), "a number");
    return value->get<double>();
  }

  /// The value `parse` makes of this string; `allowed` lists the spellings.
  template <typename T>
  T choice(std::optional<T> (*parse)(const std::string &),
           const std::string &allowed) const {
    std::optional<T> parsed;
    if (value && value->is_string())
      parsed = parse(value->get<std::string>());
    if (!parsed)
      fail(allowed);
    return *parsed;
  }

  /// True for the string `yes`, false for `no`.
  bool either(const std::string &yes, const std::string &no) const {
    if (!value || (*value != yes && *value != no))
      fail(yes + " or " + no);
    return *value == yes;
  }

  /// The literal string `expected`.
  void literal(const std::string &expected) const {
    if (!value || *value != expected)
      fail("\"" + expected + "\"");
  }

  /// Non-negative sizes whose product fits in 64 bits.
  Shape shape() const {
    Shape shape;
    int64_t elements = 1;
    for (const Field &dim : this->elements()) {
      shape.push_back(dim.integer(0));
      if (__builtin_mul_overflow(elements, shape.back(), &elements))
        fail("a shape with fewer than 2^63 elements");
    }
    return shape;
  }

  /// Throws: this value is not `expected`.
  /// Throws: this field's value, of the right type, is wrong: `problem`.
  [[noreturn]] void reject(const std::string &problem) const {
    throw std::runtime_error((path.empty() ? "" : path + ": ") + problem);
  }

  [[noreturn]] void fail(const std::string &expected) const {
    std::string where = path.empty() ? "the top level" : path;
    if (!value)
      throw std::runtime_error(where + ": missing (expected " + expected + ")");
    std::string found =
        value->is_object() ? "an object"
        : value->is_array()
            ? "an array"
            : value->dump(-1, ' ', false, json::error_handler_t::replace);
    if (found.size() > 60)
      found = found.substr(0, 57) + "...";
    throw std::runtime_error(where + ": expected " + expected + ", found " +
                             found);
  }

private:
  std::string childPath(const std::string &name) const {
    return path.empty() ? name : path + "." + name;
  }

  void checkType(bool ok, const char *expected) const {
    if (!ok)
      fail(expected);
  }

  const json *value;
  std::string path;
};

std::optional<pp_dtype> parseDtype(const std::string &name) {
  pp_dtype dtype;
  if (pp_dtype_from_name(name.c_str(), &dtype) != PP_OK)
    return std::nullopt;
  return dtype;
}

/// One of `roles`.
Role readRole(const Field &field, const std::vector<Role> &roles) {
  std::vector<std::string> names;
  for (Role role : roles)
    names.push_back(roleName(role));
  Role role = field.choice(parseRole, listChoices(names));
  if (std::find(roles.begin(), roles.end(), role) == roles.end())
    field.fail(listChoices(names));
  return role;
}

const std::vector<Role> kAnyRole = {
    Role::Input, Role::Parameter, Role::Frozen, Role::Constant,
    Role::Label, Role::LossScale, Role::Loss,   Role::Gradient,
    Role::Saved, Role::Output,   Role::ComputeCopy};

/// A tensor: its name, dtype and shape, and one of `roles` unless that is
/// empty (message tensors have no role). `extra` names the other members
/// the caller reads.
TensorInfo readTensor(const Field &field, const std::vector<Role> &roles,
                      std::vector<std::string> extra = {}) {
  std::vector<std::string> members = {"name", "dtype", "shape"};
  if (!roles.empty())
    members.push_back("role");
  members.insert(members.end(), extra.begin(), extra.end());
  field.onlyMembers(members);
  TensorInfo tensor;
  tensor.name = field["name"].name();
  if (!roles.empty())
    tensor.role = readRole(field["role"], roles);
  tensor.dtype =
      field["dtype"].choice(parseDtype, "f32, f16, bf16, f64, i64, i32 or i1");
  tensor.shape = field["shape"].shape();
  return tensor;
}

/// A function's "memory_plan": {"arena_bytes", "allocations": [[bytes,
/// offset], ...]}, each offset -1 (outlives the call) or inside the arena.
MemoryPlan readMemoryPlan(const Field &field) {
  field.onlyMembers({"arena_bytes", "allocations"});
  MemoryPlan plan;
  plan.arenaBytes = static_cast<uint64_t>(field["arena_bytes"].integer(0));
  for (const Field &entry : field["allocations"].elements()) {
    std::vector<Field> pair = entry.elements();
    if (pair.size() != 2)
      entry.fail("[bytes, offset], two integers");
    PlannedAllocation allocation;
    allocation.bytes = static_cast<uint64_t>(pair[0].integer(0));
    allocation.offset = pair[1].integer(PlannedAllocation::kOutlivesCall);
    if (allocation.offset != PlannedAllocation::kOutlivesCall &&
        allocation.bytes >
            plan.arenaBytes -
                std::min<uint64_t>(plan.arenaBytes, allocation.offset))
      pair[1].fail("-1 or an offset where " + std::to_string(allocation.bytes) +
                   " bytes fit in the arena of " +
                   std::to_string(plan.arenaBytes));
    plan.allocations.push_back(allocation);
  }
  return plan;
}

/// The function `field` of stage `stage` of `numStages`.
StageFunctionInfo readFunction(const Field &field, int64_t stage,
                               int64_t numStages) {
  field.onlyMembers(
      {"function", "phase", "args", "results", "messages", "memory_plan"});
  StageFunctionInfo function;
  function.symbol = field["function"].name();
  function.phase = field["phase"].choice(
      parsePhase, "forward, backward, backward_input, backward_weight or eval");
  for (const Field &arg : field["args"].elements())
    function.args.push_back(readTensor(arg, kAnyRole));
  for (const Field &result : field["results"].elements()) {
    TensorInfo &tensor =
        function.results.emplace_back(readTensor(result, kAnyRole, {"part"}));
    if (!result["part"].present())
      continue;
    if (tensor.role != Role::Gradient)
      result["part"].fail("no part on a result of role " +
                          std::string(roleName(tensor.role)) +
                          " (only gradients come in parts)");
    tensor.part = result["part"].integer(0);
  }
  for (const Field &message : field["messages"].elements()) {
    message.onlyMembers({"kind", "peer", "tensors"});
    MessageInfo info;
    info.send = message["kind"].either("send", "recv");
    info.peer = message["peer"].integer(0, numStages - 1);
    if (info.peer == stage)
      message["peer"].reject("stage " + std::to_string(stage) +
                             ", the function's own; a message goes to "
                             "another stage");
    for (const Field &tensor : message["tensors"].elements())
      info.tensors.push_back(readTensor(tensor, {}));
    function.messages.push_back(info);
  }
  if (field["memory_plan"].present())
    function.memoryPlan = readMemoryPlan(field["memory_plan"]);
  return function;
}

DeviceMesh readMesh(const Field &field) {
  field.onlyMembers({"axes"});
  std::vector<MeshAxis> axes;
  for (const Field &axis : field["axes"].elements()) {
    axis.onlyMembers({"name", "size", "kind"});
    axes.push_back(
        {axis["name"].name(), axis["size"].integer(1),
         axis["kind"].choice(parseAxisKind, "pipeline, data_replicate, "
                                            "data_shard, tensor or context")});
  }
  return DeviceMesh(std::move(axes));
}

/// The sharding of a parameter entry `value` whose local shape is `local`
/// ("global_shape" and "sharding", both or neither), checked against
/// `mesh`: a tensor axis, a dimension in range whose global size divides
/// by blocks times the axis' size, and a local shape that is the global
/// one with that dimension divided by the axis' size.
std::optional<ParameterSharding>
readSharding(const Field &value, const Shape &local, const DeviceMesh &mesh) {
  Field field = value["sharding"];
  if (!field.present() && !value["global_shape"].present())
    return std::nullopt;
  if (!field.present())
    field.fail("a sharding {\"axis\", \"dim\", \"blocks\"} beside "
               "\"global_shape\"");
  field.onlyMembers({"axis", "dim", "blocks"});
  ParameterSharding sharding;
  sharding.axis = field["axis"].name();
  std::optional<size_t> axis = mesh.axisIndex(sharding.axis);
  if (!axis || mesh.axes()[*axis].kind != AxisKind::Tensor) {
    std::string tensorAxes;
    for (const MeshAxis &candidate : mesh.axes())
      if (candidate.kind == AxisKind::Tensor)
        tensorAxes += (tensorAxes.empty() ? "" : ", ") + candidate.name;
    field["axis"].fail(
        "a tensor axis of \"mesh\" (" +
        (tensorAxes.empty() ? std::string("it has none") : tensorAxes) + ")");
  }
  sharding.parts = mesh.axes()[*axis].size;
  sharding.globalShape = value["global_shape"].shape();
  int64_t rank = static_cast<int64_t>(sharding.globalShape.size());
  if (rank == 0)
    value["global_shape"].fail("the shape of a tensor of rank 1 or more (a "
                               "scalar cannot be sharded)");
  sharding.dim = field["dim"].integer(0, rank - 1);
  sharding.blocks = field["blocks"].present() ? field["blocks"].integer(1) : 1;
  int64_t size = sharding.globalShape[sharding.dim];
  if (size % (sharding.blocks * sharding.parts) != 0)
    value["global_shape"].fail(
        "a size of dimension " + std::to_string(sharding.dim) +
        " that divides by " + std::to_string(sharding.blocks) + " blocks x " +
        std::to_string(sharding.parts) + " devices of axis '" + sharding.axis +
        "' (it is " + std::to_string(size) + ")");
  Shape expected = sharding.globalShape;
  expected[sharding.dim] /= sharding.parts;
  if (local != expected)
    value["shape"].fail(formatShape(expected) + " (global_shape " +
                        formatShape(sharding.globalShape) + " with dimension " +
                        std::to_string(sharding.dim) + " split over the " +
                        std::to_string(sharding.parts) + " devices of axis '" +
                        sharding.axis + "')");
  return sharding;
}

/// A file name inside the package directory: no path separator, not "."
/// or "..".
std::optional<std::string> parseFileName(const std::string &name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    return std::nullopt;
  return name;
}

std::optional<std::string> parseSha256(const std::string &text) {
  if (text.size() != 64 ||
      text.find_first_not_of("0123456789abcdef") != std::string::npos)
    return std::nullopt;
  return text;
}

std::map<std::string, FileDigest> readFiles(const Field &field) {
  std::map<std::string, FileDigest> files;
  for (const auto &[name, entry] : field.members()) {
    if (!parseFileName(name))
      throw std::runtime_error(
          "files: \"" + name +
          "\" is not a file name in the package directory (expected a name "
          "without '/')");
    entry.onlyMembers({"bytes", "sha256"});
    files[name] = {
        static_cast<uint64_t>(entry["bytes"].integer(0)),
        entry["sha256"].choice(parseSha256, "64 lowercase hex digits")};
  }
  if (!files.count(kParametersFileName))
    field[kParametersFileName].fail(std::string("the size and SHA-256 of ") +
                                    kParametersFileName);
  return files;
}

/// "libraries": per target ("cpu", "cuda") its source and, when compiled,
/// its library, each a file "files" records.
void readLibraries(const Field &field, Manifest &manifest) {
  field.onlyMembers({stageTargetFiles(StageTarget::Cpu).name,
                     stageTargetFiles(StageTarget::Cuda).name});
  for (const auto &[name, entry] : field.members()) {
    StageTarget target = *parseStageTarget(name);
    const StageTargetFiles &expected = stageTargetFiles(target);
    entry.onlyMembers({"source", "library"});
    for (auto [kind, fileName] : {std::pair("source", expected.source),
                                  std::pair("library", expected.library)}) {
      Field file = entry[kind];
      if (!file.present() && std::string(kind) == "library")
        continue;
      if (file.name() != fileName)
        file.fail(std::string("\"") + fileName + "\"");
      if (!manifest.files.count(fileName))
        file.fail("a file that \"files\" records");
    }
    manifest.sourceTargets.insert(target);
    if (entry["library"].present())
      manifest.compiledTargets.insert(target);
  }
}

/// A field of StageCost.
using StageCostMember = std::variant<
    std::optional<int64_t> StageCost::*, std::optional<double> StageCost::*,
    std::optional<std::string> StageCost::*, decltype(&StageCost::boundary)>;

/// StageCost's fields by their key, in the order pp.stage_costs (a
/// dictionary attribute) keeps them: by name.
const std::pair<const char *, StageCostMember> kStageCostFields[] = {
    {"backward_input_us", &StageCost::backwardInputMicros},
    {"backward_weight_us", &StageCost::backwardWeightMicros},
    {"boundary", &StageCost::boundary},
    {"bytes", &StageCost::bytes},
    {"data_parallel", &StageCost::dataParallel},
    {"estimated_us", &StageCost::estimatedMicros},
    {"first_node", &StageCost::firstNode},
    {"flops", &StageCost::flops},
    {"forward_us", &StageCost::forwardMicros},
    {"gradient_bytes", &StageCost::gradientBytes},
    {"in_flight", &StageCost::inFlight},
    {"last_node", &StageCost::lastNode},
    {"microbatches", &StageCost::microbatches},
    {"optimizer_bytes", &StageCost::optimizerBytes},
    {"parameter_bytes", &StageCost::parameterBytes},
    {"parameter_count", &StageCost::parameterCount},
    {"peak_bytes", &StageCost::peakBytes},
    {"rank", &StageCost::rank},
    {"recompute", &StageCost::recompute},
    {"recompute_ops", &StageCost::recomputeOps},
    {"saved_bytes", &StageCost::savedBytes},
    {"schedule", &StageCost::schedule},
    {"sent_bytes", &StageCost::sentBytes},
    {"zero_level", &StageCost::zeroLevel},
};

/// The members of a boundary entry of a stage cost.
constexpr const char *kBoundaryName = "name";
constexpr const char *kBoundaryBytes = "bytes";

StageCost readCost(const Field &field) {
  std::vector<std::string> keys;
  for (const auto &[key, member] : kStageCostFields)
    keys.push_back(key);
  field.onlyMembers(keys);
  StageCost cost;
  for (const auto &[key, member] : kStageCostFields) {
    Field value = field[key];
    if (!value.present())
      continue;
    std::visit(
        [&](auto pointer) {
          auto &target = cost.*pointer;
          using Value = typename std::decay_t<decltype(target)>::value_type;
          if constexpr (std::is_same_v<Value, int64_t>)
            target = value.integer();
          else if constexpr (std::is_same_v<Value, double>)
            target = value.number();
          else if constexpr (std::is_same_v<Value, std::string>)
            target = value.string();
          else {
            target.emplace();
            for (const Field &entry : value.elements()) {
              entry.onlyMembers({kBoundaryBytes, kBoundaryName});
              std::string name = entry[kBoundaryName].string();
              target->emplace_back(name, entry[kBoundaryBytes].number());
            }
          }
        },
        member);
  }
  return cost;
}

/// "stage_costs" (informational): an entry per stage.
std::vector<StageCost> readStageCosts(const Field &field, int64_t numStages) {
  std::vector<Field> entries = field.elements();
  if (static_cast<int64_t>(entries.size()) != numStages)
    field.fail("an array of " + std::to_string(numStages) +
               " entries (num_stages)");
  std::vector<StageCost> costs;
  for (const Field &entry : entries)
    costs.push_back(readCost(entry));
  return costs;
}

/// "stage_ranks" (optional): the pipeline rank of each stage. Every rank
/// from 0 to the largest runs a stage.
std::vector<int64_t> readStageRanks(const Field &field, int64_t numStages) {
  if (!field.present()) {
    std::vector<int64_t> identity(numStages);
    for (int64_t s = 0; s < numStages; ++s)
      identity[s] = s;
    return identity;
  }
  std::vector<Field> entries = field.elements();
  if (static_cast<int64_t>(entries.size()) != numStages)
    field.reject(std::to_string(entries.size()) + " ranks for " +
                 std::to_string(numStages) + " stages (num_stages)");
  std::vector<int64_t> ranks;
  for (const Field &entry : entries)
    ranks.push_back(entry.integer(0, numStages - 1));
  int64_t count = *std::max_element(ranks.begin(), ranks.end()) + 1;
  for (int64_t rank = 0; rank < count; ++rank)
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end())
      field.reject("rank " + std::to_string(rank) +
                   " runs no stage; every rank from 0 to " +
                   std::to_string(count - 1) + " must run one");
  return ranks;
}

/// Reads `manifest` (format and version first, so that a package of
/// another version says so) into `into`, checking every field.
/// The type a model stores a weight in that is trained as an f32 master
/// copy.
std::optional<pp_dtype> parseModelDtype(const std::string &name) {
  if (name == "bf16")
    return PP_DTYPE_BF16;
  if (name == "f16")
    return PP_DTYPE_F16;
  return std::nullopt;
}

/// A reduced precision's name as the manifest spells it (f32 is left out).
std::optional<std::string> parsePrecision(const std::string &name) {
  if (name == "bf16" || name == "fp16")
    return name;
  return std::nullopt;
}

void readManifestObject(const Field &manifest, Manifest &into) {
  manifest["format"].literal(kFormatName);
  int64_t version = manifest["version"].integer();
  if (version != kPackageFormatVersion)
    throw std::runtime_error(
        "package format version " + std::to_string(version) + " is from " +
        (version < kPackageFormatVersion ? "an older" : "a newer") +
        " pp (this pp-run reads version " +
        std::to_string(kPackageFormatVersion) + "); recompile the model");
  manifest.onlyMembers({"format", "version", "num_stages", "microbatch_size",
                        "precision", "mesh", "loss", "inputs", "labels",
                        "outputs", "parameters", "held_constants",
                        "folded_parameters", "stages", "stage_costs",
                        "stage_ranks", "libraries", "files"});
  into.numStages = manifest["num_stages"].integer(1);
  into.microbatchSize = manifest["microbatch_size"].integer(1);
  if (manifest["precision"].present())
    into.precision = manifest["precision"].choice(parsePrecision,
                                                  "\"bf16\" or \"fp16\"");
  into.mesh = readMesh(manifest["mesh"]);
  into.files = readFiles(manifest["files"]);
  // Informational: checked when present.
  if (manifest["libraries"].present())
    readLibraries(manifest["libraries"], into);
  into.stageRanks = readStageRanks(manifest["stage_ranks"], into.numStages);
  if (manifest["stage_costs"].present())
    into.stageCosts = readStageCosts(manifest["stage_costs"], into.numStages);

  // A training package has a loss and labels, a forward-only one outputs.
  Field loss = manifest["loss"];
  if (loss.present() || !manifest["outputs"].present()) {
    if (manifest["outputs"].present())
      manifest["outputs"].fail("no outputs in a training package (it has a "
                               "loss)");
    loss.onlyMembers({"kind", "output", "ignore_index", "classes"});
    into.lossKind =
        loss["kind"].either("mse", "cross_entropy") ? "mse" : "cross_entropy";
    into.lossOutput = loss["output"].name();
    if (loss["ignore_index"].present())
      into.ignoreIndex = loss["ignore_index"].integer();
    // Synthetic class indices are taken modulo the class count.
    if (into.lossKind == "cross_entropy" || loss["classes"].present())
      into.lossClasses = loss["classes"].integer(1);
    into.labels = readTensor(manifest["labels"], {Role::Label});
  } else {
    if (manifest["labels"].present())
      manifest["labels"].fail("no labels in a forward-only package (it has "
                              "outputs and no loss)");
    for (const Field &output : manifest["outputs"].elements()) {
      OutputInfo info;
      info.tensor = readTensor(output, {}, {"stage"});
      info.tensor.role = Role::Output;
      info.stage = output["stage"].integer(0, into.numStages - 1);
      into.outputs.push_back(info);
    }
  }

  for (const Field &input : manifest["inputs"].elements()) {
    TensorInfo info = readTensor(input, {Role::Input}, {"index_bound"});
    if (input["index_bound"].present())
      info.indexBound = input["index_bound"].integer(1);
    into.inputs.push_back(info);
  }

  uint64_t parameterBytes = into.files.at(kParametersFileName).bytes;
  for (const Field &value : manifest["parameters"].elements()) {
    ParameterInfo parameter;
    parameter.fromFile = value["init"].either("file", "seeded_by_name");
    std::vector<std::string> members = {"stage", "stages", "init",
                                        "global_shape", "sharding",
                                        "model_dtype"};
    if (parameter.fromFile)
      members.insert(members.end(), {"offset", "bytes"});
    parameter.tensor = readTensor(
        value, {Role::Parameter, Role::Frozen, Role::Constant}, members);
    parameter.stage = value["stage"].integer(0, into.numStages - 1);
    parameter.stages = {parameter.stage};
    // A tied parameter: every stage holding it, the owner `stage` first.
    if (value["stages"].present()) {
      std::vector<Field> holders = value["stages"].elements();
      if (holders.size() < 2 || holders[0].integer() != parameter.stage)
        value["stages"].fail("two or more stages, the first equal to "
                             "\"stage\" (" +
                             std::to_string(parameter.stage) + ")");
      for (size_t i = 1; i < holders.size(); ++i)
        parameter.stages.push_back(holders[i].integer(
            parameter.stages.back() + 1, into.numStages - 1));
    }
    parameter.sharding = readSharding(value, parameter.tensor.shape, into.mesh);
    parameter.modelDtype =
        value["model_dtype"].present()
            ? value["model_dtype"].choice(parseModelDtype, "bf16 or f16")
            : parameter.tensor.dtype;
    // parameters.bin holds the whole (global) tensor.
    if (parameter.fromFile) {
      uint64_t needed = 0;
      if (__builtin_mul_overflow(
              pp_dtype_size(parameter.tensor.dtype),
              static_cast<uint64_t>(numElements(parameter.globalShape())),
              &needed) ||
          needed > static_cast<uint64_t>(INT64_MAX))
        value[parameter.sharding ? "global_shape" : "shape"].fail(
            "a shape of fewer than 2^63 bytes");
      parameter.bytes = value["bytes"].integer(0);
      if (parameter.bytes != needed)
        value["bytes"].fail(std::to_string(needed) + " (" +
                            formatShape(parameter.globalShape()) + " " +
                            pp_dtype_name(parameter.tensor.dtype) + ")");
      parameter.offset = value["offset"].integer(0);
      if (parameter.offset > parameterBytes ||
          parameterBytes - parameter.offset < needed)
        value["offset"].fail("an offset whose " + std::to_string(needed) +
                             " bytes lie inside parameters.bin (" +
                             std::to_string(parameterBytes) + " bytes)");
    }
    into.parameters.push_back(parameter);
  }
  // Informational: what the compiler held constant, for pp-run to say.
  if (manifest["held_constants"].present())
    for (const Field &held : manifest["held_constants"].elements()) {
      held.onlyMembers({"name", "elements"});
      into.heldConstants.emplace_back(held["name"].name(),
                                      held["elements"].integer(0));
    }

  if (manifest["folded_parameters"].present())
    for (const Field &folded : manifest["folded_parameters"].elements()) {
      folded.onlyMembers({"name", "from"});
      into.foldedParameters[folded["name"].name()] = folded["from"].name();
    }

  for (const Field &stage : manifest["stages"].elements()) {
    stage.onlyMembers({"stage", "functions"});
    int64_t index = static_cast<int64_t>(into.stages.size());
    if (stage["stage"].integer() != index)
      stage["stage"].fail(std::to_string(index) +
                          " (list the stages in order from 0)");
    StageInfo &info = into.stages.emplace_back();
    for (const Field &function : stage["functions"].elements())
      info.functions.push_back(readFunction(function, index, into.numStages));
  }
}

OrderedJson tensorJson(const TensorInfo &tensor, bool withRole) {
  OrderedJson value = {{"name", tensor.name}};
  if (withRole)
    value["role"] = roleName(tensor.role);
  value["dtype"] = pp_dtype_name(tensor.dtype);
  value["shape"] = tensor.shape;
  return value;
}

OrderedJson memoryPlanJson(const MemoryPlan &plan) {
  OrderedJson allocations = OrderedJson::array();
  for (const PlannedAllocation &allocation : plan.allocations)
    allocations.push_back({allocation.bytes, allocation.offset});
  return {{"arena_bytes", plan.arenaBytes}, {"allocations", allocations}};
}

/// `function`; a gradient result's "part" where `inParts` (the names of
/// the gradients that come in several parts) lists it.
OrderedJson functionJson(const StageFunctionInfo &function,
                         const std::set<std::string> &inParts) {
  OrderedJson args = OrderedJson::array(), results = OrderedJson::array(),
              messages = OrderedJson::array();
  for (const TensorInfo &arg : function.args)
    args.push_back(tensorJson(arg, true));
  for (const TensorInfo &result : function.results) {
    OrderedJson &value = results.emplace_back(tensorJson(result, true));
    if (result.role == Role::Gradient && inParts.count(result.name))
      value["part"] = result.part;
  }
  for (const MessageInfo &message : function.messages) {
    OrderedJson tensors = OrderedJson::array();
    for (const TensorInfo &tensor : message.tensors)
      tensors.push_back(tensorJson(tensor, false));
    messages.push_back({{"kind", message.send ? "send" : "recv"},
                        {"peer", message.peer},
                        {"tensors", tensors}});
  }
  OrderedJson value = {{"function", function.symbol},
                       {"phase", phaseName(function.phase)},
                       {"args", args},
                       {"results", results},
                       {"messages", messages}};
  if (function.memoryPlan)
    value["memory_plan"] = memoryPlanJson(*function.memoryPlan);
  return value;
}

/// The names of the gradients that several results of `stages` return,
/// each a part.
std::set<std::string> gradientsInParts(const std::vector<StageInfo> &stages) {
  std::set<std::string> seen, inParts;
  for (const StageInfo &stage : stages)
    for (const StageFunctionInfo &function : stage.functions)
      for (const TensorInfo &result : function.results)
        if (result.role == Role::Gradient && !seen.insert(result.name).second)
          inParts.insert(result.name);
  return inParts;
}

OrderedJson parameterJson(const ParameterInfo &parameter) {
  OrderedJson value = tensorJson(parameter.tensor, true);
  if (const std::optional<ParameterSharding> &sharding = parameter.sharding) {
    value["global_shape"] = sharding->globalShape;
    value["sharding"] = {{"axis", sharding->axis},
                         {"dim", sharding->dim},
                         {"blocks", sharding->blocks}};
  }
  value["stage"] = parameter.stage;
  value["init"] = parameter.fromFile ? "file" : "seeded_by_name";
  if (parameter.fromFile) {
    value["offset"] = parameter.offset;
    value["bytes"] = parameter.bytes;
  }
  if (parameter.isTied())
    value["stages"] = parameter.stages;
  if (parameter.modelDtype != parameter.tensor.dtype)
    value["model_dtype"] = pp_dtype_name(parameter.modelDtype);
  return value;
}

OrderedJson costJson(const StageCost &cost) {
  OrderedJson value = OrderedJson::object();
  for (const auto &field : kStageCostFields)
    std::visit(
        [&](auto pointer) {
          const auto &member = cost.*pointer;
          if (!member)
            return;
          using Value = typename std::decay_t<decltype(member)>::value_type;
          if constexpr (std::is_same_v<
                            Value, decltype(StageCost::boundary)::value_type>) {
            OrderedJson &boundary = value[field.first] = OrderedJson::array();
            for (const auto &[name, bytes] : *member)
              boundary.push_back(
                  {{kBoundaryBytes, bytes}, {kBoundaryName, name}});
          } else {
            value[field.first] = *member;
          }
        },
        field.second);
  return value;
}

OrderedJson meshJson(const DeviceMesh &mesh) {
  OrderedJson axes = OrderedJson::array();
  for (const MeshAxis &axis : mesh.axes())
    axes.push_back({{"name", axis.name},
                    {"size", axis.size},
                    {"kind", axisKindName(axis.kind)}});
  return {{"axes", axes}};
}

/// "libraries": per target its source and, when compiled, its library.
OrderedJson librariesJson(const Manifest &manifest) {
  OrderedJson libraries = OrderedJson::object();
  for (StageTarget target : manifest.sourceTargets) {
    const StageTargetFiles &files = stageTargetFiles(target);
    OrderedJson &entry = libraries[files.name] = {{"source", files.source}};
    if (manifest.compiledTargets.count(target))
      entry["library"] = files.library;
  }
  return libraries;
}

/// "files": parameters.bin first, the others by name.
OrderedJson filesJson(const std::map<std::string, FileDigest> &files) {
  OrderedJson value = OrderedJson::object();
  auto add = [&](const std::string &name, const FileDigest &digest) {
    value[name] = {{"bytes", digest.bytes}, {"sha256", digest.sha256}};
  };
  if (auto parameters = files.find(kParametersFileName);
      parameters != files.end())
    add(parameters->first, parameters->second);
  for (const auto &[name, digest] : files)
    if (name != kParametersFileName)
      add(name, digest);
  return value;
}

OrderedJson manifestJson(const Manifest &manifest) {
  OrderedJson value = {{"format", kFormatName},
                       {"version", kPackageFormatVersion},
                       {"num_stages", manifest.numStages},
                       {"mesh", meshJson(manifest.mesh)},
                       {"stage_ranks", manifest.stageRanks},
                       {"microbatch_size", manifest.microbatchSize}};
  if (manifest.precision != "f32")
    value["precision"] = manifest.precision;
  if (manifest.lossKind.empty()) {
    OrderedJson &outputs = value["outputs"] = OrderedJson::array();
    for (const OutputInfo &output : manifest.outputs) {
      outputs.push_back(tensorJson(output.tensor, false));
      outputs.back()["stage"] = output.stage;
    }
  } else {
    OrderedJson &loss =
        value["loss"] = {{"kind", manifest.lossKind},
                         {"output", manifest.lossOutput},
                         {"ignore_index", manifest.ignoreIndex}};
    if (manifest.lossClasses)
      loss["classes"] = manifest.lossClasses;
    value["labels"] = tensorJson(manifest.labels, true);
  }
  OrderedJson &inputs = value["inputs"] = OrderedJson::array();
  for (const TensorInfo &input : manifest.inputs) {
    inputs.push_back(tensorJson(input, true));
    if (input.indexBound)
      inputs.back()["index_bound"] = input.indexBound;
  }
  OrderedJson &parameters = value["parameters"] = OrderedJson::array();
  for (const ParameterInfo &parameter : manifest.parameters)
    parameters.push_back(parameterJson(parameter));
  if (!manifest.heldConstants.empty()) {
    OrderedJson &held = value["held_constants"] = OrderedJson::array();
    for (const auto &[name, elements] : manifest.heldConstants)
      held.push_back({{"name", name}, {"elements", elements}});
  }
  if (!manifest.foldedParameters.empty()) {
    OrderedJson &folded = value["folded_parameters"] = OrderedJson::array();
    for (const auto &[name, from] : manifest.foldedParameters)
      folded.push_back({{"name", name}, {"from", from}});
  }
  OrderedJson &stages = value["stages"] = OrderedJson::array();
  std::set<std::string> inParts = gradientsInParts(manifest.stages);
  for (const StageInfo &stage : manifest.stages) {
    OrderedJson functions = OrderedJson::array();
    for (const StageFunctionInfo &function : stage.functions)
      functions.push_back(functionJson(function, inParts));
    stages.push_back({{"stage", stages.size()}, {"functions", functions}});
  }
  if (!manifest.stageCosts.empty()) {
    OrderedJson &costs = value["stage_costs"] = OrderedJson::array();
    for (const StageCost &cost : manifest.stageCosts)
      costs.push_back(costJson(cost));
  }
  if (!manifest.sourceTargets.empty())
    value["libraries"] = librariesJson(manifest);
  value["files"] = filesJson(manifest.files);
  return value;
}

/// True when `text` is valid UTF-8, as a JSON string must be.
bool isUtf8(const std::string &text) {
  try {
    (void)json(text).dump();
    return true;
  } catch (const json::type_error &) {
    return false;
  }
}

/// `text` with a backslash doubled and every byte that is not printable
/// ASCII, and '"', as a backslash and two hex digits.
std::string escaped(const std::string &text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string result;
  for (unsigned char c : text) {
    if (c == '\\')
      result += "\\\\";
    else if (std::isprint(c) && c != '"')
      result += static_cast<char>(c);
    else
      result += {'\\', kHex[c >> 4], kHex[c & 15]};
  }
  return result;
}

/// The first string of `value` (a member name or a string value) that is
/// not valid UTF-8, and its path (`stages[0].functions[1].args[2].name`).
std::optional<std::pair<std::string, std::string>>
findInvalidUtf8(const OrderedJson &value, const std::string &path) {
  if (value.is_string()) {
    const std::string &text = value.get_ref<const std::string &>();
    if (!isUtf8(text))
      return std::make_pair(path, text);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      if (auto found =
              findInvalidUtf8(value[i], path + "[" + std::to_string(i) + "]"))
        return found;
  } else if (value.is_object()) {
    for (const auto &member : value.items()) {
      std::string memberPath =
          path.empty() ? member.key() : path + "." + member.key();
      if (!isUtf8(member.key()))
        return std::make_pair(memberPath, member.key());
      if (auto found = findInvalidUtf8(member.value(), memberPath))
        return found;
    }
  }
  return std::nullopt;
}

/// Throws: `value`, the manifest as JSON, has a string that is not UTF-8.
void checkStrings(const OrderedJson &value) {
  if (auto invalid = findInvalidUtf8(value, ""))
    throw std::runtime_error("cannot write the manifest: " + invalid->first +
                             " (\"" + escaped(invalid->second) +
                             "\") is not valid UTF-8, which JSON needs; "
                             "rename it");
}

} // namespace

std::optional<Role> parseRole(const std::string &name) {
  return parseEnum(kRoles, name);
}

const char *roleName(Role role) { return enumName(kRoles, role, ""); }

bool isParameterRole(Role role) {
  return role == Role::Parameter || role == Role::Frozen ||
         role == Role::Constant;
}

const StageFunctionInfo *StageInfo::evalFunction() const {
  for (const StageFunctionInfo &function : functions)
    if (function.phase == Phase::Eval)
      return &function;
  return nullptr;
}

Manifest readManifest(const std::string &text) {
  const std::string prefix = kManifestFileName;
  json value;
  try {
    value = json::parse(text);
  } catch (const std::exception &error) {
    throw std::runtime_error(prefix + " is not valid JSON: " + error.what());
  }
  Manifest manifest;
  try {
    readManifestObject(Field(&value, ""), manifest);
  } catch (const std::exception &error) {
    throw std::runtime_error(prefix + ": " + error.what());
  }
  return manifest;
}

std::string writeManifest(const Manifest &manifest) {
  OrderedJson value = manifestJson(manifest);
  checkStrings(value);
  return value.dump(2) + "\n";
}

void checkManifestStrings(const Manifest &manifest) {
  checkStrings(manifestJson(manifest));
}

StageCost readStageCost(const nlohmann::json &value, const std::string &path) {
  return readCost(Field(&value, path));
}

} // namespace pp::runtime
