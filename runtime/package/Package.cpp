//===- Package.cpp - a compiled pipeline package --------------------------===//

#include "runtime/package/Package.h"

#include "runtime/core/EnumNames.h"
#include "runtime/core/Sha256.h"
#include "runtime/core/TrustedFiles.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <dlfcn.h>
#include <unistd.h>
#include <map>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>

namespace pp::runtime {
namespace {

using json = nlohmann::json;

[[noreturn]] void invalid(const std::string &directory,
                          const std::string &message) {
  throw std::runtime_error("invalid pipeline package '" + directory +
                           "': " + message);
}

/// Throws: a file of the package does not match the manifest's record
/// (`problem`).
[[noreturn]] void damaged(const std::string &directory,
                          const std::string &problem) {
  invalid(directory, problem + ": the package is damaged; compile it again "
                               "(pp-opt --pp-emit)");
}

constexpr EnumNames<Role, 10> kRoles = {
    {Role::Input, "input"},   {Role::Parameter, "parameter"},
    {Role::Frozen, "frozen"}, {Role::Constant, "constant"},
    {Role::Label, "label"},   {Role::LossScale, "loss_scale"},
    {Role::Loss, "loss"},     {Role::Gradient, "gradient"},
    {Role::Saved, "saved"},   {Role::Output, "output"},
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

  /// Checks that this is a number or a string.
  void numberOrString() const {
    checkType(value && (value->is_number() || value->is_string()),
              "a number or a string");
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
    Role::Input, Role::Parameter, Role::Frozen,   Role::Constant,
    Role::Label, Role::LossScale, Role::Loss,     Role::Gradient,
    Role::Saved, Role::Output};

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
std::optional<ParameterSharding> readSharding(const Field &value,
                                              const Shape &local,
                                              const DeviceMesh &mesh) {
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
    field["axis"].fail("a tensor axis of \"mesh\" (" +
                       (tensorAxes.empty() ? std::string("it has none")
                                           : tensorAxes) +
                       ")");
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
  if (!files.count("parameters.bin"))
    field["parameters.bin"].fail("the size and SHA-256 of parameters.bin");
  return files;
}

/// "libraries": per target ("cpu", "cuda") its source and, when compiled,
/// its library, each a file "files" records. Returns the compiled targets.
std::set<StageTarget>
readLibraries(const Field &field,
              const std::map<std::string, FileDigest> &files) {
  field.onlyMembers({stageTargetFiles(StageTarget::Cpu).name,
                     stageTargetFiles(StageTarget::Cuda).name});
  std::set<StageTarget> compiled;
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
      if (!files.count(fileName))
        file.fail("a file that \"files\" records");
    }
    if (entry["library"].present())
      compiled.insert(target);
  }
  return compiled;
}

/// The estimate pp-partition wrote for one stage, or nullopt for an entry
/// of an older pp without times.
std::optional<StageEstimate> readStageEstimate(const Field &cost) {
  if (!cost["forward_us"].present())
    return std::nullopt;
  StageEstimate stage;
  auto number = [&](const char *name) {
    Field value = cost[name];
    return value.present() ? value.number() : 0.0;
  };
  stage.rank = static_cast<int64_t>(number("rank"));
  stage.forwardSeconds = number("forward_us") * 1e-6;
  stage.backwardInputSeconds = number("backward_input_us") * 1e-6;
  stage.backwardWeightSeconds = number("backward_weight_us") * 1e-6;
  stage.totalSeconds = number("estimated_us") * 1e-6;
  stage.parameterCount = number("parameter_count");
  stage.parameterBytes = number("parameter_bytes");
  stage.gradientBytes = number("gradient_bytes");
  stage.optimizerBytes = number("optimizer_bytes");
  stage.savedBytes = number("saved_bytes");
  stage.inFlight = static_cast<int64_t>(number("in_flight"));
  if (cost["first_node"].present())
    stage.firstNode = cost["first_node"].string();
  if (cost["last_node"].present())
    stage.lastNode = cost["last_node"].string();
  if (cost["boundary"].present())
    for (const Field &value : cost["boundary"].elements())
      stage.boundary.emplace_back(value["name"].string(),
                                  value["bytes"].number());
  return stage;
}

/// "stage_costs" (informational): per stage an object. Reads each stage's
/// "saved_bytes" and, when every stage has them, its estimates into
/// `package`.
void readStageCosts(const Field &field, Package &package) {
  std::vector<Field> costs = field.elements();
  if (static_cast<int64_t>(costs.size()) != package.numStages)
    field.fail("an array of " + std::to_string(package.numStages) +
               " entries (num_stages)");
  std::vector<StageEstimate> estimates;
  for (const Field &cost : costs) {
    Field saved = cost["saved_bytes"];
    package.estimatedSavedBytes.push_back(
        saved.present() ? std::optional(saved.number()) : std::nullopt);
    if (std::optional<StageEstimate> estimate = readStageEstimate(cost))
      estimates.push_back(std::move(*estimate));
  }
  if (static_cast<int64_t>(estimates.size()) == package.numStages)
    package.stageEstimates = std::move(estimates);
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

/// Checks that every saved argument of a stage's functions is a saved
/// result of an earlier function of the stage, with the same name.
void checkSavedValues(const std::string &directory, int64_t stage,
                      const StageInfo &info) {
  std::map<std::string, const StageFunctionInfo *> producers;
  std::string earlier;
  for (const StageFunctionInfo &function : info.functions) {
    for (const TensorInfo &arg : function.args) {
      if (arg.role != Role::Saved || producers.count(arg.name))
        continue;
      invalid(directory,
              "stage " + std::to_string(stage) + ": " + function.symbol +
                  " takes the saved value '" + arg.name + "', but " +
                  (earlier.empty() ? "no function runs before it"
                                   : "no earlier function (" + earlier +
                                         ") returns a saved value of that "
                                         "name"));
    }
    for (const TensorInfo &result : function.results) {
      if (result.role != Role::Saved)
        continue;
      auto [it, added] = producers.emplace(result.name, &function);
      if (!added)
        invalid(directory, "stage " + std::to_string(stage) + ": " +
                               it->second->symbol + " and " + function.symbol +
                               " both return a saved value named '" +
                               result.name + "'");
    }
    earlier += (earlier.empty() ? "" : ", ") + function.symbol;
  }
}

/// Checks that the parameter-like arguments of a stage's functions and
/// their gradients name entries of the manifest's parameters on that stage,
/// and that only trainable ones get gradients.
void checkParameterUses(const Package &package, int64_t stage) {
  std::map<std::string, Role> roles;
  for (const ParameterInfo &parameter : package.parameters)
    if (parameter.heldBy(stage))
      roles[parameter.tensor.name] = parameter.tensor.role;
  auto fail = [&](const StageFunctionInfo &function, const TensorInfo &tensor,
                  const std::string &problem) {
    invalid(package.directory,
            function.symbol + " (stage " + std::to_string(stage) + ") has " +
                roleName(tensor.role) + " '" + tensor.name + "', " + problem);
  };
  for (const StageFunctionInfo &function : package.stages[stage].functions) {
    for (const TensorInfo &arg : function.args) {
      if (!isParameterRole(arg.role))
        continue;
      auto it = roles.find(arg.name);
      if (it == roles.end())
        fail(function, arg, "which \"parameters\" does not list on this stage");
      else if (it->second != arg.role)
        fail(function, arg,
             std::string("which \"parameters\" lists as ") +
                 roleName(it->second));
    }
    for (const TensorInfo &result : function.results)
      if (result.role == Role::Gradient &&
          (!roles.count(result.name) ||
           roles.at(result.name) != Role::Parameter))
        fail(function, result,
             "but \"parameters\" lists no trainable parameter of that name "
             "on this stage");
  }
}

/// Checks that a forward-only package has forward functions only and that
/// each output is a result of the forward function of its stage.
void checkOutputs(const Package &package) {
  for (int64_t stage = 0; stage < package.numStages; ++stage)
    for (const StageFunctionInfo &function : package.stages[stage].functions)
      if (function.phase != Phase::Forward)
        invalid(package.directory,
                "the package is forward-only (it lists outputs, no loss), "
                "but stage " + std::to_string(stage) + " has the " +
                    phaseName(function.phase) + " function " +
                    function.symbol);
  for (const OutputInfo &output : package.outputs) {
    const std::vector<TensorInfo> &results =
        package.stages[output.stage].functions.front().results;
    bool returned = std::any_of(
        results.begin(), results.end(), [&](const TensorInfo &result) {
          return result.role == Role::Output &&
                 result.name == output.tensor.name &&
                 result.dtype == output.tensor.dtype &&
                 result.shape == output.tensor.shape;
        });
    if (!returned)
      invalid(package.directory,
              "output '" + output.tensor.name + "' (" +
                  formatShape(output.tensor.shape) + " " +
                  pp_dtype_name(output.tensor.dtype) + ") is not a result " +
                  "of the forward function of its stage " +
                  std::to_string(output.stage));
  }
}

/// Checks that all stages of a training package have one eval function or
/// none does, and that each runs alone: it takes inputs, labels and
/// parameters only, and returns the loss exactly where its stage's forward
/// does, nothing else.
void checkEvalFunctions(const Package &package) {
  auto where = [](int64_t stage, const StageFunctionInfo &function) {
    return function.symbol + " (stage " + std::to_string(stage) + ")";
  };
  std::optional<int64_t> withEval, withoutEval;
  for (int64_t stage = 0; stage < package.numStages; ++stage) {
    const StageFunctionInfo *eval = nullptr;
    for (const StageFunctionInfo &function : package.stages[stage].functions) {
      if (function.phase != Phase::Eval)
        continue;
      if (eval)
        invalid(package.directory,
                "stage " + std::to_string(stage) + " has two eval functions, " +
                    eval->symbol + " and " + function.symbol);
      eval = &function;
    }
    if (!eval) {
      withoutEval = withoutEval.value_or(stage);
      continue;
    }
    withEval = withEval.value_or(stage);
    for (const TensorInfo &arg : eval->args)
      if (arg.role != Role::Input && arg.role != Role::Label &&
          !isParameterRole(arg.role))
        invalid(package.directory,
                where(stage, *eval) + " takes " + roleName(arg.role) + " '" +
                    arg.name +
                    "', but an eval function runs alone: it takes "
                    "inputs, labels and parameters only");
    auto losses = [](const StageFunctionInfo &function) {
      return std::count_if(
          function.results.begin(), function.results.end(),
          [](const TensorInfo &result) { return result.role == Role::Loss; });
    };
    const StageFunctionInfo &forward = package.stages[stage].functions.front();
    for (const TensorInfo &result : eval->results)
      if (result.role != Role::Loss)
        invalid(package.directory, where(stage, *eval) + " returns " +
                                       roleName(result.role) + " '" +
                                       result.name +
                                       "', but an eval function returns "
                                       "the loss only");
    if (losses(*eval) != losses(forward))
      invalid(package.directory, where(stage, *eval) + " returns " +
                                     std::to_string(losses(*eval)) +
                                     " losses, but " + where(stage, forward) +
                                     " returns " +
                                     std::to_string(losses(forward)));
  }
  if (withEval && withoutEval)
    invalid(package.directory,
            "stage " + std::to_string(*withEval) +
                " has an eval function but stage " +
                std::to_string(*withoutEval) +
                " has none; every stage needs one (recompile the model)");
}

/// Checks what the trainer relies on: stages match the mesh, each stage
/// has a forward, saved values have producers, labels fit the loss, eval
/// functions run alone.
void checkPackage(const Package &package) {
  const std::string &directory = package.directory;
  const MeshAxis *pipeline = package.mesh.pipelineAxis();
  int64_t meshStages = pipeline ? pipeline->size : 1;
  if (package.numStages < 1 ||
      static_cast<int64_t>(package.stages.size()) != package.numStages)
    invalid(directory, "manifest.json lists " +
                           std::to_string(package.stages.size()) +
                           " stages but num_stages is " +
                           std::to_string(package.numStages));
  if (meshStages != package.pipelineRanks())
    invalid(directory, "the mesh (" + package.mesh.describe() + ") has " +
                           std::to_string(meshStages) +
                           " pipeline ranks but stage_ranks places the " +
                           std::to_string(package.numStages) +
                           " stages on " +
                           std::to_string(package.pipelineRanks()) +
                           " ranks; recompile the model");
  for (int64_t stage = 0; stage < package.numStages; ++stage) {
    const StageInfo &info = package.stages[stage];
    if (info.functions.empty() ||
        info.functions.front().phase != Phase::Forward)
      invalid(directory, "stage " + std::to_string(stage) +
                             " does not start with a forward function");
    checkSavedValues(directory, stage, info);
    checkParameterUses(package, stage);
  }
  if (package.forwardOnly()) {
    checkOutputs(package);
    return;
  }
  checkEvalFunctions(package);
  bool crossEntropy = package.lossKind == "cross_entropy";
  pp_dtype expected = crossEntropy ? PP_DTYPE_I64 : PP_DTYPE_F32;
  if (package.labels.dtype != expected)
    invalid(directory, "the labels '" + package.labels.name + "' are " +
                           pp_dtype_name(package.labels.dtype) + ", but a " +
                           package.lossKind + " loss needs " +
                           pp_dtype_name(expected) +
                           (crossEntropy ? " class indices" : " targets"));
}

bool isFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

/// Reads `manifest` (format and version first, so that a package of
/// another version says so) into `package`, checking every field.
void readManifest(const Field &manifest, Package &package) {
  manifest["format"].literal("pp-pipeline-package");
  int64_t version = manifest["version"].integer();
  if (version != kPackageFormatVersion)
    throw std::runtime_error(
        "package format version " + std::to_string(version) + " is from " +
        (version < kPackageFormatVersion ? "an older" : "a newer") +
        " pp (this pp-run reads version " +
        std::to_string(kPackageFormatVersion) + "); recompile the model");
  manifest.onlyMembers({"format", "version", "num_stages", "microbatch_size",
                        "mesh", "loss", "inputs", "labels", "outputs",
                        "parameters", "held_constants", "folded_parameters", "stages",
                        "stage_costs", "stage_ranks", "libraries", "files"});
  package.numStages = manifest["num_stages"].integer(1);
  package.microbatchSize = manifest["microbatch_size"].integer(1);
  package.mesh = readMesh(manifest["mesh"]);
  package.files = readFiles(manifest["files"]);
  // Informational: checked when present.
  if (manifest["libraries"].present())
    package.compiledTargets =
        readLibraries(manifest["libraries"], package.files);
  package.stageRanks =
      readStageRanks(manifest["stage_ranks"], package.numStages);
  if (manifest["stage_costs"].present())
    readStageCosts(manifest["stage_costs"], package);

  // A training package has a loss and labels, a forward-only one outputs.
  Field loss = manifest["loss"];
  if (loss.present() || !manifest["outputs"].present()) {
    if (manifest["outputs"].present())
      manifest["outputs"].fail("no outputs in a training package (it has a "
                               "loss)");
    loss.onlyMembers({"kind", "output", "ignore_index", "classes"});
    package.lossKind =
        loss["kind"].either("mse", "cross_entropy") ? "mse" : "cross_entropy";
    package.lossOutput = loss["output"].name();
    if (loss["ignore_index"].present())
      package.ignoreIndex = loss["ignore_index"].integer();
    // Synthetic class indices are taken modulo the class count.
    if (package.lossKind == "cross_entropy" || loss["classes"].present())
      package.lossClasses = loss["classes"].integer(1);
    package.labels = readTensor(manifest["labels"], {Role::Label});
  } else {
    if (manifest["labels"].present())
      manifest["labels"].fail("no labels in a forward-only package (it has "
                              "outputs and no loss)");
    for (const Field &output : manifest["outputs"].elements()) {
      OutputInfo info;
      info.tensor = readTensor(output, {}, {"stage"});
      info.tensor.role = Role::Output;
      info.stage = output["stage"].integer(0, package.numStages - 1);
      package.outputs.push_back(info);
    }
  }

  for (const Field &input : manifest["inputs"].elements()) {
    TensorInfo info = readTensor(input, {Role::Input}, {"index_bound"});
    if (input["index_bound"].present())
      info.indexBound = input["index_bound"].integer(1);
    package.inputs.push_back(info);
  }

  uint64_t parameterBytes = package.files.at("parameters.bin").bytes;
  for (const Field &value : manifest["parameters"].elements()) {
    ParameterInfo parameter;
    parameter.fromFile = value["init"].either("file", "seeded_by_name");
    std::vector<std::string> members = {"stage", "stages", "init",
                                        "global_shape", "sharding"};
    if (parameter.fromFile)
      members.insert(members.end(), {"offset", "bytes"});
    parameter.tensor = readTensor(
        value, {Role::Parameter, Role::Frozen, Role::Constant}, members);
    parameter.stage = value["stage"].integer(0, package.numStages - 1);
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
            parameter.stages.back() + 1, package.numStages - 1));
    }
    parameter.sharding =
        readSharding(value, parameter.tensor.shape, package.mesh);
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
    package.parameters.push_back(parameter);
  }
  // Informational: what the compiler held constant, for pp-run to say.
  if (manifest["held_constants"].present())
    for (const Field &held : manifest["held_constants"].elements()) {
      held.onlyMembers({"name", "elements"});
      package.heldConstants.emplace_back(held["name"].name(),
                                         held["elements"].integer(0));
    }

  if (manifest["folded_parameters"].present())
    for (const Field &folded : manifest["folded_parameters"].elements()) {
      folded.onlyMembers({"name", "from"});
      package.foldedParameters[folded["name"].name()] =
          folded["from"].name();
    }

  for (const Field &stage : manifest["stages"].elements()) {
    stage.onlyMembers({"stage", "functions"});
    int64_t index = static_cast<int64_t>(package.stages.size());
    if (stage["stage"].integer() != index)
      stage["stage"].fail(std::to_string(index) +
                          " (list the stages in order from 0)");
    StageInfo &info = package.stages.emplace_back();
    for (const Field &function : stage["functions"].elements())
      info.functions.push_back(
          readFunction(function, index, package.numStages));
  }
}

} // namespace

std::optional<Role> parseRole(const std::string &name) {
  return parseEnum(kRoles, name);
}

const char *roleName(Role role) { return enumName(kRoles, role, ""); }

const StageFunctionInfo *StageInfo::evalFunction() const {
  for (const StageFunctionInfo &function : functions)
    if (function.phase == Phase::Eval)
      return &function;
  return nullptr;
}

bool isParameterRole(Role role) {
  return role == Role::Parameter || role == Role::Frozen ||
         role == Role::Constant;
}

Package Package::load(const std::string &directory) {
  struct stat info;
  if (::stat(directory.c_str(), &info) != 0)
    throw std::runtime_error("cannot read '" + directory +
                             "': no such file or directory");
  if (!S_ISDIR(info.st_mode) || !isFile(directory + "/manifest.json"))
    throw std::runtime_error("'" + directory +
                             "' is not a pipeline package: it has no "
                             "manifest.json (create one with pp-opt MODEL "
                             "--pp-compile=... --pp-emit=DIR)");
  json manifest;
  try {
    manifest = json::parse(
        readInputFile(directory + "/manifest.json", "the manifest"));
  } catch (const std::exception &error) {
    invalid(directory,
            std::string("manifest.json is not valid JSON: ") + error.what());
  }
  Package package;
  package.directory = directory;
  try {
    readManifest(Field(&manifest, ""), package);
  } catch (const std::exception &error) {
    invalid(directory, std::string("manifest.json: ") + error.what());
  }
  checkPackage(package);
  package.indexGradientParts();
  return package;
}

std::string Package::contentProblem(const std::string &fileName,
                                    const InputFile &file) const {
  auto it = files.find(fileName);
  if (it == files.end())
    return fileName + " is not among the files manifest.json records";
  return digestProblem(fileName, file, it->second, "manifest.json");
}

int64_t Package::pipelineRanks() const {
  return stageRanks.empty()
             ? 1
             : *std::max_element(stageRanks.begin(), stageRanks.end()) + 1;
}

bool Package::splitsBackward() const {
  for (const StageInfo &stage : stages)
    for (const StageFunctionInfo &function : stage.functions)
      if (function.phase == Phase::BackwardInput)
        return true;
  return false;
}

void Package::indexGradientParts() {
  struct Returned {
    int64_t part, stage;
    const std::string *symbol;
  };
  std::map<std::string, std::vector<Returned>> parts;
  for (int64_t stage = 0; stage < numStages; ++stage)
    for (const StageFunctionInfo &function : stages[stage].functions)
      for (const TensorInfo &result : function.results)
        if (result.role == Role::Gradient)
          parts[result.name].push_back({result.part, stage, &function.symbol});
  for (ParameterInfo &parameter : parameters) {
    auto returned = parts.find(parameter.tensor.name);
    if (returned == parts.end())
      continue;
    int64_t count = static_cast<int64_t>(returned->second.size());
    std::vector<int64_t> &partStages = parameter.gradientPartStages;
    partStages.assign(count, -1);
    bool numbered = true;
    for (const Returned &each : returned->second) {
      numbered = numbered && each.part < count && partStages[each.part] < 0;
      if (numbered)
        partStages[each.part] = each.stage;
    }
    if (numbered)
      continue;
    std::string found;
    for (const Returned &each : returned->second)
      found += (found.empty() ? "" : ", ") + std::to_string(each.part) + " (" +
               *each.symbol + ", stage " + std::to_string(each.stage) + ")";
    invalid(directory,
            "the " + std::to_string(count) + " gradient results named '" +
                parameter.tensor.name + "' must be its parts 0 to " +
                std::to_string(count - 1) + ", each once, but they are parts " +
                found + "; recompile the model");
  }
}

/// `fileName` of `package` opened, or nullopt with `problem` set.
static std::optional<InputFile> openPackageFile(const Package &package,
                                                const std::string &fileName,
                                                std::string &problem) {
  std::string path = package.directory + "/" + fileName;
  if (!isFile(path) && ::access(path.c_str(), F_OK) != 0) {
    problem = fileName + " is missing";
    return std::nullopt;
  }
  try {
    return InputFile::open(path, fileName);
  } catch (const std::runtime_error &failure) {
    problem = failure.what();
    return std::nullopt;
  }
}

std::string Package::fileProblem(const std::string &fileName) const {
  std::string problem;
  std::optional<InputFile> file = openPackageFile(*this, fileName, problem);
  return file ? contentProblem(fileName, *file) : problem;
}

std::optional<StageLibraryFile>
Package::compiledLibrary(StageTarget target) const {
  if (!compiledTargets.count(target))
    return std::nullopt;
  std::string fileName = stageTargetFiles(target).library;
  return StageLibraryFile{directory + "/" + fileName, files.at(fileName),
                          "manifest.json"};
}

void Package::loadStageLibrary(const StageLibraryFile &libraryFile) {
  const std::string &path = libraryFile.path;
  std::string fileName = path.substr(path.rfind('/') + 1);
  if (!isFile(path) && ::access(path.c_str(), F_OK) != 0)
    damaged(directory, fileName + " is missing");
  std::optional<InputFile> file;
  try {
    file = InputFile::open(path, "the stage library");
  } catch (const std::runtime_error &failure) {
    damaged(directory, failure.what());
  }
  // The bytes verified are the bytes loaded: the same open file, which
  // only this user (or root) can have written.
  std::string folder = path.substr(0, path.rfind('/'));
  std::string problem = untrustedFileProblem(file->fd(), path, "the stage library");
  if (problem.empty())
    problem = untrustedPathProblem(folder, "the stage library's directory");
  if (!problem.empty())
    invalid(directory, problem);
  problem = digestProblem(fileName, *file, libraryFile.digest,
                          libraryFile.recordedIn);
  if (!problem.empty())
    damaged(directory, problem);
  std::string opened = "/proc/self/fd/" + std::to_string(file->fd());
  library = ::dlopen(opened.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    invalid(directory, "cannot load " + fileName + ": " + ::dlerror());
  for (StageInfo &stage : stages)
    for (StageFunctionInfo &function : stage.functions) {
      function.entry = reinterpret_cast<StageFunctionPointer>(
          ::dlsym(library, function.symbol.c_str()));
      if (!function.entry)
        invalid(directory, fileName + " has no function " + function.symbol);
    }
}

void Package::readParameter(const ParameterInfo &parameter,
                            pp_tensor *tensor) const {
  if (parameter.bytes != pp_tensor_nbytes(tensor))
    invalid(directory, "parameters.bin holds " +
                           std::to_string(parameter.bytes) + " bytes for '" +
                           parameter.tensor.name + "', its shape needs " +
                           std::to_string(pp_tensor_nbytes(tensor)));
  if (!parameterFile) {
    std::string problem;
    parameterFile = openPackageFile(*this, "parameters.bin", problem);
    if (!parameterFile)
      invalid(directory, problem);
    // Verified through the file it is read from.
    problem = contentProblem("parameters.bin", *parameterFile);
    if (!problem.empty())
      damaged(directory, problem);
  }
  if (!parameterFile->readAt(pp_tensor_data(tensor), parameter.bytes,
                             parameter.offset))
    invalid(directory, "parameters.bin is truncated: parameter '" +
                           parameter.tensor.name + "' needs bytes " +
                           std::to_string(parameter.offset) + " to " +
                           std::to_string(parameter.offset + parameter.bytes));
}

} // namespace pp::runtime
