//===- ParameterRule.cpp - Which ONNX initializers train ------------------===//
//
// An ONNX model stores its weights and its constants alike, as
// initializers. Which floating-point initializers train:
//
// * Models exported by torch.onnx.export(dynamo=True) record, in the
//   metadata of each initializer (`pkg.torch.export.graph_signature.
//   InputSpec.kind`), whether torch.export saw a PARAMETER, a BUFFER or a
//   CONSTANT, and the exporter names every one after its state_dict entry
//   (its module name, `model.layers.0.self_attn.q_proj.weight`). Exactly
//   the PARAMETER ones train. With optimize=True, onnxscript's optimizer
//   folds a Linear's weight into its transpose under a generated name
//   (`val_110`) and records the dotted name it came from
//   (`pkg.onnxscript.optimizer.folded_from`); the node that reads it still
//   names the parameter (`pkg.torch.onnx.fx_node`: `aten.linear(%x,
//   %p_model_..._q_proj_weight)`, `p_` marks a parameter). Such a weight
//   becomes the parameter in its module layout, under its module name,
//   read through a Transpose node (`transpose:val_110`). Without the
//   folded_from record, the module name is the reading node's innermost
//   module (`pkg.torch.onnx.name_scopes`) and the rest of the `p_` name
//   (underscores in `p_` names are ambiguous, so that is all pp trusts).
//   Everything else (buffers, constants, folded masks and rotary tables,
//   exponents, epsilons) is a constant.
//
//   An initializer that the optimizer folded from a weight some other way
//   (an embedding's rows at constant positions: folded_from names a
//   `.weight` or `.bias` the model no longer has) trains under its own
//   name, with a warning.
//
// * Other models (the TorchScript-based exporter, hand-written graphs): a
//   floating-point initializer trains unless it is empty or no
//   differentiable path leads from it to a node that computes on the graph
//   inputs: it then only feeds shapes, indices, Pow exponents, Where
//   conditions and comparisons, or tables that fold at import. A learned
//   scalar (a gate, a temperature) trains like any weight. Names say nothing here: the TorchScript-based
//   exporter stores each Linear's weight transposed under a generated name
//   (`onnx::MatMul_466`), and those train: as the parameter that the
//   reading MatMul's scope names (`/model/layers.0/self_attn/q_proj/MatMul`:
//   `model.layers.0.self_attn.q_proj.weight`), in module layout, through a
//   Transpose node, as above.
//
// `--freeze REGEX` holds trained ones; docs/tools/pp-opt.md has the rule.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/GraphImporter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <google/protobuf/unknown_field_set.h>

#include <unordered_map>

using namespace mlir;

namespace pp::onnx_frontend {

namespace {
/// Metadata keys that torch.onnx.export and onnxscript write.
constexpr llvm::StringLiteral kInputKind =
    "pkg.torch.export.graph_signature.InputSpec.kind";
constexpr llvm::StringLiteral kFoldedFrom =
    "pkg.onnxscript.optimizer.folded_from";
constexpr llvm::StringLiteral kFxNode = "pkg.torch.onnx.fx_node";
constexpr llvm::StringLiteral kNameScopes = "pkg.torch.onnx.name_scopes";

/// The field numbers of `metadata_props` (IR version 10), which libonnx
/// before 1.16 does not know: protobuf keeps them as unknown fields.
constexpr int kValueInfoMetadataField = 4;
constexpr int kNodeMetadataField = 9;
constexpr int kTensorMetadataField = 16;

using Metadata = llvm::StringMap<std::string>;

/// Adds the `metadata_props` entries (field `field`) of `message` to
/// `metadata`.
template <typename Message>
void readMetadata(const Message &message, int field, Metadata &metadata) {
  const google::protobuf::UnknownFieldSet &unknown = message.unknown_fields();
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &entry = unknown.field(i);
    if (entry.number() != field ||
        entry.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto pair;
    if (pair.ParseFromString(entry.length_delimited()))
      metadata[pair.key()] = pair.value();
  }
}

int64_t elementCount(const onnx::TensorProto &tensor) {
  int64_t count = 1;
  for (int64_t dim : tensor.dims())
    count *= dim;
  return count;
}

/// `name` with every '.' turned into '_', as torch.export names
/// placeholders (`p_` + that, for a parameter).
std::string underscored(llvm::StringRef name) {
  std::string text = name.str();
  std::replace(text.begin(), text.end(), '.', '_');
  return text;
}

/// The names in a Python list of strings, `['', 'model', 'model.layers.0']`.
SmallVector<std::string> pythonStrings(llvm::StringRef list) {
  SmallVector<std::string> strings;
  while (true) {
    size_t open = list.find('\'');
    if (open == llvm::StringRef::npos)
      break;
    size_t close = list.find('\'', open + 1);
    if (close == llvm::StringRef::npos)
      break;
    strings.push_back(list.slice(open + 1, close).str());
    list = list.drop_front(close + 1);
  }
  return strings;
}

/// The `p_` placeholder names (parameters) that an fx node's text reads.
SmallVector<std::string> parameterArguments(llvm::StringRef fxNode) {
  SmallVector<std::string> names;
  for (size_t at = fxNode.find("%p_"); at != llvm::StringRef::npos;
       at = fxNode.find("%p_", at + 1)) {
    llvm::StringRef rest = fxNode.drop_front(at + 1);
    names.push_back(
        rest.take_while([](char c) { return llvm::isAlnum(c) || c == '_'; })
            .str());
  }
  return names;
}

/// The graph as the parameter rule sees it: who reads what, and what
/// depends on the graph inputs.
class ParameterRule {
public:
  ParameterRule(onnx::GraphProto &graph) : graph(graph) {
    for (const onnx::ValueInfoProto &info : graph.value_info())
      readMetadata(info, kValueInfoMetadataField, metadata[info.name()]);
    for (const onnx::ValueInfoProto &info : graph.input())
      readMetadata(info, kValueInfoMetadataField, metadata[info.name()]);
    for (const onnx::TensorProto &init : graph.initializer()) {
      readMetadata(init, kTensorMetadataField, metadata[init.name()]);
      initializers[init.name()] = &init;
    }
    for (const auto &[index, node] : llvm::enumerate(graph.node()))
      for (const std::string &input : node.input())
        readers[input].push_back(index);
  }

  ParameterPlan plan() {
    ParameterPlan plan;
    plan.exporterRecords = llvm::any_of(graph.initializer(), [&](auto &init) {
      return metadata[init.name()].count(kInputKind) != 0;
    });
    if (!plan.exporterRecords) {
      planFromUses(plan);
      return plan;
    }
    // Decide on the original graph, then rewrite.
    std::vector<TransposedWeight> transposed;
    for (const onnx::TensorProto &init : graph.initializer()) {
      if (!isFloatDataType(init.data_type()))
        continue;
      Metadata &records = metadata[init.name()];
      auto kind = records.find(kInputKind);
      if (kind != records.end()) {
        if (kind->second == "PARAMETER")
          plan.trained.insert(init.name());
        continue;
      }
      if (std::optional<std::string> parameter = foldedParameter(init)) {
        transposed.push_back({*parameter, init.name()});
        continue;
      }
      // Folded from a weight some other way (an embedding's rows at
      // constant positions): it trains as what the model stores.
      for (const std::string &source :
           pythonStrings(records[kFoldedFrom]))
        if (!initializers.count(source) &&
            (llvm::StringRef(source).ends_with(".weight") ||
             llvm::StringRef(source).ends_with(".bias"))) {
          plan.trained.insert(init.name());
          plan.foldedWeights.push_back({source, init.name()});
          break;
        }
    }
    for (const TransposedWeight &weight : transposed)
      untranspose(weight, plan);
    return plan;
  }

private:
  /// The parameter whose transpose initializer `init` holds, when it is one
  /// that the optimizer folded (a 2-D weight read as a Linear's).
  std::optional<std::string> foldedParameter(const onnx::TensorProto &init) {
    if (init.dims_size() != 2)
      return std::nullopt;
    // The parameter as the reading nodes name it (`p_...`), and the module
    // of the innermost reader.
    Metadata &records = metadata[init.name()];
    SmallVector<std::string> folded = pythonStrings(records[kFoldedFrom]);
    std::optional<std::string> parameter;
    for (int index : readers[init.name()]) {
      Metadata nodeMetadata;
      readMetadata(graph.node(index), kNodeMetadataField, nodeMetadata);
      llvm::StringRef fxNode = nodeMetadata[kFxNode];
      if (!fxNode.contains("aten.linear"))
        return std::nullopt;
      std::optional<std::string> named = linearWeight(
          parameterArguments(fxNode), folded,
          pythonStrings(nodeMetadata[kNameScopes]));
      if (!named || (parameter && *parameter != *named))
        return std::nullopt;
      parameter = named;
    }
    return parameter;
  }

  /// The module name of the weight of a Linear whose fx node reads the
  /// parameters `arguments` (`p_` names; the weight comes first) in the
  /// modules `scopes`, the initializer having been folded from `folded`.
  static std::optional<std::string>
  linearWeight(ArrayRef<std::string> arguments, ArrayRef<std::string> folded,
               ArrayRef<std::string> scopes) {
    if (arguments.empty())
      return std::nullopt;
    const std::string &weight = arguments.front();
    if (folded.size() == 1 && "p_" + underscored(folded.front()) == weight)
      return folded.front();
    // The last scope names the node itself; the one before, its module.
    if (scopes.size() < 2)
      return std::nullopt;
    const std::string &module = scopes[scopes.size() - 2];
    std::string prefix = "p_" + underscored(module) + "_";
    if (module.empty() || !llvm::StringRef(weight).starts_with(prefix))
      return std::nullopt;
    return module + "." + weight.substr(prefix.size());
  }

  /// Turns the stored transpose `weight.stored` into the parameter
  /// `weight.parameter` in its module layout, read through a Transpose
  /// node; or, when the parameter is an initializer already (a tied LM
  /// head), into a Transpose of that one. False when it is neither.
  bool untranspose(const TransposedWeight &weight, ParameterPlan &plan) {
    auto &inits = *graph.mutable_initializer();
    auto named = [&](llvm::StringRef name) {
      return llvm::find_if(inits, [&](const onnx::TensorProto &init) {
        return init.name() == name;
      });
    };
    auto stored = named(weight.stored);
    std::optional<llvm::StringRef> raw = rawElements(*stored);
    if (!raw)
      return false;
    int64_t rows = stored->dims(0), columns = stored->dims(1);
    std::string moduleLayout =
        transposed(*raw, rows, columns, elementBytes(stored->data_type()));
    if (auto existing = named(weight.parameter); existing != inits.end()) {
      // A tied LM head: the transpose of a parameter the model has.
      bool tied = plan.trained.contains(weight.parameter) &&
                  existing->data_type() == stored->data_type() &&
                  existing->dims_size() == 2 && existing->dims(0) == columns &&
                  existing->dims(1) == rows &&
                  rawElements(*existing) == llvm::StringRef(moduleLayout);
      if (!tied)
        return false;
      inits.erase(stored);
    } else {
      stored->set_name(weight.parameter);
      stored->set_dims(0, columns);
      stored->set_dims(1, rows);
      stored->clear_float_data();
      stored->clear_double_data();
      stored->set_raw_data(std::move(moduleLayout));
      plan.trained.insert(weight.parameter);
    }
    insertTranspose(graph, (kTransposeNodePrefix + weight.stored).str(),
                    weight.parameter, weight.stored);
    plan.transposed.push_back(weight);
    return true;
  }

  /// The module name of the weight that the TorchScript-based exporter
  /// stored transposed as `init` (`onnx::MatMul_466`): every reader is a
  /// MatMul reading it as its right operand, in the one module that the
  /// readers' names give (`/model/layers.0/self_attn/q_proj/MatMul`).
  std::optional<std::string> scopedWeight(const onnx::TensorProto &init) {
    if (!llvm::StringRef(init.name()).starts_with("onnx::") ||
        init.dims_size() != 2 || readers[init.name()].empty())
      return std::nullopt;
    std::optional<std::string> parameter;
    for (int index : readers[init.name()]) {
      const onnx::NodeProto &node = graph.node(index);
      llvm::StringRef scope = llvm::StringRef(node.name()).rsplit('/').first;
      if (node.op_type() != "MatMul" || node.input(1) != init.name() ||
          !scope.consume_front("/") || scope.empty())
        return std::nullopt;
      SmallVector<llvm::StringRef> modules;
      scope.split(modules, '/');
      std::string named = llvm::join(modules, ".") + ".weight";
      if (parameter && *parameter != named)
        return std::nullopt;
      parameter = named;
    }
    return parameter;
  }

  /// Marks the initializers that the fallback rule trains.
  void planFromUses(ParameterPlan &plan) {
    // Values computed on the graph inputs (a shape is static: not one).
    llvm::StringSet<> data;
    for (const onnx::ValueInfoProto &input : graph.input())
      if (!initializers.count(input.name()))
        data.insert(input.name());
    for (const onnx::NodeProto &node : graph.node()) {
      if (node.op_type() == "Shape" || node.op_type() == "Size")
        continue;
      if (llvm::any_of(node.input(),
                       [&](const std::string &in) { return data.contains(in); }))
        for (const std::string &output : node.output())
          data.insert(output);
    }
    for (const onnx::TensorProto &init : graph.initializer()) {
      llvm::StringRef name = init.name();
      if (!isFloatDataType(init.data_type()) || elementCount(init) == 0)
        continue;
      if (!reachesTraining(name, data))
        continue;
      plan.trained.insert(name);
      if (elementCount(init) == 1)
        plan.trainedScalars.push_back(name.str());
    }
    // A transposed weight equal to a trained one in module layout is a tied
    // LM head (the exporter's folding untied it): it reads that one.
    std::unordered_multimap<size_t, std::string> byBytes;
    for (const onnx::TensorProto &init : graph.initializer())
      if (plan.trained.contains(init.name()) && init.dims_size() == 2)
        if (std::optional<llvm::StringRef> raw = rawElements(init))
          byBytes.emplace(llvm::hash_value(*raw), init.name());
    std::vector<TransposedWeight> weights;
    for (const onnx::TensorProto &init : graph.initializer()) {
      if (!plan.trained.contains(init.name()))
        continue;
      std::optional<std::string> parameter = scopedWeight(init);
      std::optional<llvm::StringRef> raw = rawElements(init);
      if (!parameter || !raw)
        continue;
      auto [first, last] = byBytes.equal_range(llvm::hash_value(
          llvm::StringRef(transposed(*raw, init.dims(0), init.dims(1),
                                     elementBytes(init.data_type())))));
      for (auto it = first; it != last; ++it)
        if (it->second != init.name())
          parameter = it->second;
      weights.push_back({*parameter, init.name()});
    }
    for (const TransposedWeight &weight : weights) {
      plan.trained.erase(weight.stored);
      if (!untranspose(weight, plan))
        plan.trained.insert(weight.stored);
    }
  }

  /// Whether `name`, or a value computed from it over constants, is a
  /// differentiable operand of a node that also reads a value in `data`.
  bool reachesTraining(llvm::StringRef name, const llvm::StringSet<> &data) {
    SmallVector<std::string> views{name.str()};
    llvm::StringSet<> seen{name};
    while (!views.empty()) {
      std::string view = views.pop_back_val();
      for (int index : readers[view]) {
        const onnx::NodeProto &node = graph.node(index);
        bool readsData = llvm::any_of(node.input(), [&](const std::string &in) {
          return data.contains(in);
        });
        for (const auto &[position, input] : llvm::enumerate(node.input())) {
          if (input != view || !isDifferentiable(node.op_type(), position))
            continue;
          if (readsData)
            return true;
          for (const std::string &output : node.output())
            if (seen.insert(output).second)
              views.push_back(output);
        }
      }
    }
    return false;
  }

  /// Whether input `position` of an `op` node carries a gradient.
  static bool isDifferentiable(llvm::StringRef op, size_t position) {
    static const llvm::StringMap<size_t> kDifferentiableBelow = {
        {"Pow", 1},       {"Reshape", 1},   {"Expand", 1},
        {"Slice", 1},     {"Gather", 1},    {"GatherElements", 1},
        {"GatherND", 1},  {"Tile", 1},      {"Unsqueeze", 1},
        {"Squeeze", 1},   {"Split", 1},     {"Trilu", 1},
        {"Dropout", 1},   {"CastLike", 1},  {"ReduceMean", 1},
        {"ReduceSum", 1}, {"ReduceMax", 1}, {"Pad", 1},
        {"CumSum", 1}};
    static const llvm::StringSet<> kNone = {
        "Shape",   "Size",      "Range", "ConstantOfShape", "Equal",
        "Less",    "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
        "And",     "Or",        "IsNaN", "IsInf", "ArgMax", "ArgMin"};
    if (kNone.contains(op))
      return false;
    if (op == "Where")
      return position != 0;
    auto below = kDifferentiableBelow.find(op);
    return below == kDifferentiableBelow.end() || position < below->second;
  }

  onnx::GraphProto &graph;
  llvm::StringMap<Metadata> metadata;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringMap<SmallVector<int>> readers;
};
} // namespace

ParameterPlan planParameters(onnx::GraphProto &graph) {
  return ParameterRule(graph).plan();
}

PreparedGraph prepareGraph(onnx::GraphProto &graph,
                           const ImportOptions &options) {
  PreparedGraph prepared;
  prepared.plan = planParameters(graph);
  prepared.equal = findEqualInitializers(graph);
  llvm::erase_if(prepared.equal, [&](const EqualInitializer &tie) {
    return !prepared.plan.trained.contains(tie.original) ||
           !prepared.plan.trained.contains(tie.copy);
  });
  if (options.tieEqualWeights) {
    tieEqualInitializers(graph, prepared.equal);
    for (const EqualInitializer &tie : prepared.equal)
      prepared.plan.trained.erase(tie.copy);
  }
  prepared.untied = untieSharedInitializers(
      graph, options.untieSharedWeights, prepared.plan.trained);
  return prepared;
}

} // namespace pp::onnx_frontend
