//===- TorchReference.cpp - the same training run in LibTorch ---*- C++ -*-===//
//
// pp-torch-reference trains a model with LibTorch (autograd, torch::optim)
// on the data pp-run draws, with pp-run's options, and writes the same
// metrics, parameter and gradient files. Tests compare the two; the
// benchmark compares their speed. It is a test utility and shares nothing
// with pp's compiler: it evaluates an ONNX model's nodes itself (pp's MLP
// op set), and runs a TorchScript module (`.pt`) as LibTorch does, which is
// the reference for transformers through both frontends (an ONNX model
// exported from the same module computes the same function).
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/data/SyntheticData.h"
#include "runtime/training/LearningRate.h"
#include "runtime/training/Optimizer.h"

#include "llvm/Support/CommandLine.h"

#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_iterator.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>

using namespace llvm;

namespace {

cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                               cl::desc("<model.onnx | model.pt>"));
cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Type of forward's argument NAME of a TorchScript model, as "
             "pp-run takes it: dimensions and element type joined by x "
             "(?x8xi64; ? is the microbatch size); repeatable"),
    cl::value_desc("NAME=TYPE"));
cl::opt<int> microbatchSize("microbatch-size", cl::Required);
cl::opt<std::string> loss("loss", cl::Required, cl::desc("KIND:OUTPUT"));
cl::opt<int> microbatches("microbatches", cl::init(1));
cl::opt<int> steps("steps", cl::init(1));
cl::opt<uint64_t> seed("seed", cl::init(0));
cl::opt<std::string> optimizerName("optimizer", cl::init("sgd"));
cl::opt<float> learningRate("lr", cl::init(0.01f));
cl::opt<float> momentum("momentum", cl::init(0.0f));
cl::opt<float> weightDecay("weight-decay", cl::init(0.0f));
cl::opt<std::string> noDecay(
    "no-decay", cl::desc("As pp-run's: the parameters without weight decay "
                         "(its default without the flag)"));
cl::opt<std::string> lrScheduleName("lr-schedule", cl::init("constant"));
cl::opt<int> warmupSteps("warmup-steps", cl::init(0));
cl::opt<double> minLearningRate("min-lr", cl::init(0.0));
cl::opt<int> decaySteps("decay-steps", cl::init(0),
                        cl::desc("Default --steps, as pp-run's"));
cl::opt<double> clipGradNorm("clip-grad-norm", cl::init(0.0));
cl::opt<std::string> metricsPath("metrics");
cl::opt<std::string> saveParamsPath("save-params");
cl::opt<std::string> saveGradsPath(
    "save-grads", cl::desc("Write the first step's gradients (before "
                           "clipping) to this file, as pp-run does"));
cl::opt<int> threads("torch-threads", cl::init(1),
                     cl::desc("LibTorch intra-op threads"));

/// A tensor stored in an ONNX TensorProto (float or int64).
torch::Tensor fromProto(const onnx::TensorProto &proto) {
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  bool isFloat = proto.data_type() == onnx::TensorProto::FLOAT;
  auto options =
      torch::TensorOptions().dtype(isFloat ? torch::kFloat32 : torch::kInt64);
  if (proto.has_raw_data())
    return torch::from_blob(const_cast<char *>(proto.raw_data().data()), shape,
                            options)
        .clone();
  if (isFloat)
    return torch::tensor(std::vector<float>(proto.float_data().begin(),
                                            proto.float_data().end()))
        .reshape(shape);
  return torch::tensor(std::vector<int64_t>(proto.int64_data().begin(),
                                            proto.int64_data().end()))
      .reshape(shape);
}

const onnx::AttributeProto *attribute(const onnx::NodeProto &node,
                                      const std::string &name) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

/// Evaluates the graph with `values` holding inputs and initializers.
void evaluate(const onnx::GraphProto &graph,
              std::map<std::string, torch::Tensor> &values) {
  for (const onnx::NodeProto &node : graph.node()) {
    std::vector<torch::Tensor> in;
    for (const std::string &name : node.input())
      if (!name.empty())
        in.push_back(values.at(name));
    const std::string &op = node.op_type();
    auto f = [&](const char *name, float fallback) {
      const onnx::AttributeProto *a = attribute(node, name);
      return a ? a->f() : fallback;
    };
    auto i = [&](const char *name, int64_t fallback) {
      const onnx::AttributeProto *a = attribute(node, name);
      return a ? a->i() : fallback;
    };
    torch::Tensor y;
    if (op == "Gemm") {
      torch::Tensor a = i("transA", 0) ? in[0].t() : in[0];
      torch::Tensor b = i("transB", 0) ? in[1].t() : in[1];
      y = torch::matmul(a, b) * f("alpha", 1.0f);
      if (in.size() > 2)
        y = y + in[2] * f("beta", 1.0f);
    } else if (op == "MatMul") {
      y = torch::matmul(in[0], in[1]);
    } else if (op == "Add") {
      y = in[0] + in[1];
    } else if (op == "Sub") {
      y = in[0] - in[1];
    } else if (op == "Mul") {
      y = in[0] * in[1];
    } else if (op == "Div") {
      y = in[0] / in[1];
    } else if (op == "Exp") {
      y = torch::exp(in[0]);
    } else if (op == "Softmax") {
      y = torch::softmax(in[0], i("axis", -1));
    } else if (op == "Relu") {
      y = torch::relu(in[0]);
    } else if (op == "Tanh") {
      y = torch::tanh(in[0]);
    } else if (op == "Sigmoid") {
      y = torch::sigmoid(in[0]);
    } else if (op == "Identity") {
      y = in[0];
    } else if (op == "Constant") {
      y = fromProto(attribute(node, "value")->t());
    } else if (op == "Flatten") {
      int64_t axis = i("axis", 1), outer = 1;
      for (int64_t d = 0; d < axis; ++d)
        outer *= in[0].size(d);
      y = in[0].reshape({outer, -1});
    } else if (op == "Split") {
      // Sizes from the second input, else equal parts; one per output.
      int64_t axis = i("axis", 0);
      std::vector<int64_t> sizes(node.output_size(),
                                 in[0].size(axis) / node.output_size());
      if (in.size() > 1)
        sizes.assign(in[1].data_ptr<int64_t>(),
                     in[1].data_ptr<int64_t>() + in[1].numel());
      std::vector<torch::Tensor> pieces =
          torch::split_with_sizes(in[0], sizes, axis);
      for (int k = 0; k < node.output_size(); ++k)
        values[node.output(k)] = pieces[k];
      continue;
    } else {
      throw std::runtime_error("no reference for ONNX op " + op);
    }
    values[node.output(0)] = y;
  }
}

/// A LibTorch copy of the pp tensor of `dtype` (f32 or i64) and `shape`
/// that `fill` writes.
template <typename Fill>
torch::Tensor filledBy(pp_dtype dtype, std::vector<int64_t> shape, Fill fill) {
  pp_tensor *tensor = nullptr;
  pp_tensor_create(dtype, shape.size(), shape.data(), &tensor);
  fill(tensor);
  torch::Tensor result =
      torch::from_blob(pp_tensor_data(tensor), shape,
                       dtype == PP_DTYPE_I64 ? torch::kInt64 : torch::kFloat32)
          .clone();
  pp_tensor_destroy(tensor);
  return result;
}

/// pp-run's synthetic data for tensor `name` of `shape`: f32 values, or
/// i64 values in [0, classes) when `classes` is positive.
torch::Tensor synthetic(const std::string &name, std::vector<int64_t> shape,
                        int64_t firstSample, int64_t classes) {
  return filledBy(classes ? PP_DTYPE_I64 : PP_DTYPE_F32, shape,
                  [&](pp_tensor *tensor) {
                    pp::runtime::fillSynthetic(tensor, seed, name, firstSample,
                                               classes);
                  });
}

/// pp-run's synthetic class labels of `shape` (sequences padded with
/// ignore_index -100).
torch::Tensor syntheticLabels(std::vector<int64_t> shape, int64_t firstSample,
                              int64_t classes) {
  return filledBy(PP_DTYPE_I64, shape, [&](pp_tensor *tensor) {
    pp::runtime::fillSyntheticLabels(tensor, seed, "labels", firstSample,
                                     classes, -100);
  });
}

/// An input of the model: pp-run's synthetic stream `name` of `shape`;
/// ids below `bound` when it indexes an embedding, else f32 values.
struct InputSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t bound = 0;
};

/// What the training loop needs of a model, whatever its format.
class ReferenceModel {
public:
  virtual ~ReferenceModel() = default;
  /// The values of one microbatch's outputs (and possibly more) by name.
  virtual std::map<std::string, torch::Tensor>
  forward(const std::map<std::string, torch::Tensor> &inputs) = 0;

  /// The trainable parameters by name (leaves that require gradients).
  std::map<std::string, torch::Tensor> parameters;
  /// The inputs, in the order forward takes them.
  std::vector<InputSpec> inputs;
};

/// An ONNX model whose nodes evaluate() knows.
class OnnxModel : public ReferenceModel {
public:
  explicit OnnxModel(const std::string &path) {
    std::ifstream file(path, std::ios::binary);
    if (!model.ParseFromIstream(&file))
      throw std::runtime_error("cannot read " + path);
    for (const onnx::TensorProto &init : model.graph().initializer()) {
      torch::Tensor value = fromProto(init);
      if (value.scalar_type() == torch::kFloat32) {
        value.set_requires_grad(true);
        parameters[init.name()] = value;
      } else {
        constants[init.name()] = value;
      }
    }
    for (const onnx::ValueInfoProto &input : model.graph().input()) {
      if (parameters.count(input.name()) || constants.count(input.name()))
        continue;
      InputSpec spec{input.name(), {}, 0};
      for (const auto &dim : input.type().tensor_type().shape().dim())
        spec.shape.push_back(dim.has_dim_value() && dim.dim_value() > 0
                                 ? dim.dim_value()
                                 : microbatchSize);
      inputs.push_back(spec);
    }
  }

  std::map<std::string, torch::Tensor>
  forward(const std::map<std::string, torch::Tensor> &given) override {
    std::map<std::string, torch::Tensor> values = parameters;
    values.insert(constants.begin(), constants.end());
    values.insert(given.begin(), given.end());
    evaluate(model.graph(), values);
    return values;
  }

private:
  onnx::ModelProto model;
  std::map<std::string, torch::Tensor> constants;
};

/// The type `text` (as --input-shape gives it: `?x8xi64`, `4x16xf32`,
/// `f32`) of forward's argument `name`.
InputSpec parseInputType(const std::string &name, const std::string &text) {
  InputSpec spec{name, {}, 0};
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    size_t x = text.find('x', at);
    parts.push_back(text.substr(at, x - at));
    if (x == std::string::npos)
      break;
    at = x + 1;
  }
  std::string element = parts.back();
  parts.pop_back();
  for (const std::string &dim : parts) {
    if (dim == "?") {
      spec.shape.push_back(microbatchSize);
      continue;
    }
    size_t used = 0;
    int64_t size = -1;
    try {
      size = std::stoll(dim, &used);
    } catch (const std::exception &) {
    }
    if (used != dim.size() || size < 0)
      throw std::runtime_error("--input-shape " + name + "=" + text +
                               ": dimension '" + dim +
                               "' is neither a size nor ?");
    spec.shape.push_back(size);
  }
  if (element == "i64")
    spec.bound = -1; // Set from the embedding it indexes.
  else if (element != "f32")
    throw std::runtime_error("--input-shape " + name + "=" + text +
                             ": element type '" + element +
                             "' is not f32 or i64, the types pp-run's "
                             "synthetic data has");
  return spec;
}

/// A TorchScript module (traced or scripted) run by LibTorch itself.
class TorchScriptModel : public ReferenceModel {
public:
  explicit TorchScriptModel(const std::string &path)
      : module(torch::jit::load(path)) {
    // Dropout off: pp's masks are not PyTorch's, so no reference can
    // compare a run with dropout.
    module.eval();
    for (const torch::jit::NameTensor &parameter :
         module.named_parameters(/*recurse=*/true)) {
      parameter.value.set_requires_grad(true);
      parameters[parameter.name] = parameter.value;
    }
    std::map<std::string, std::string> types;
    for (const std::string &option : inputShapes) {
      size_t equals = option.find('=');
      if (equals == std::string::npos)
        throw std::runtime_error("--input-shape '" + option +
                                 "' is not NAME=TYPE");
      types[option.substr(0, equals)] = option.substr(equals + 1);
    }
    const std::vector<c10::Argument> &arguments =
        module.get_method("forward").function().getSchema().arguments();
    std::map<size_t, int64_t> bounds = embeddingRows();
    for (size_t i = 1; i < arguments.size(); ++i) {
      const std::string &name = arguments[i].name();
      auto type = types.find(name);
      if (type == types.end())
        throw std::runtime_error(
            "forward's argument '" + name + "' needs a type: --input-shape " +
            name + "=TYPE (dimensions and f32 or i64 joined by x, ? for the "
            "microbatch size: ?x8xi64)");
      InputSpec spec = parseInputType(name, type->second);
      if (spec.bound) {
        auto rows = bounds.find(i);
        if (rows == bounds.end())
          throw std::runtime_error(
              "integer input '" + name +
              "' indexes no embedding (aten::embedding) directly, so "
              "nothing bounds its synthetic ids");
        spec.bound = rows->second;
      }
      inputs.push_back(spec);
      types.erase(type);
    }
    if (!types.empty())
      throw std::runtime_error("--input-shape names '" + types.begin()->first +
                               "', which is not an argument of forward");
  }

  std::map<std::string, torch::Tensor>
  forward(const std::map<std::string, torch::Tensor> &given) override {
    std::vector<c10::IValue> arguments;
    for (const InputSpec &input : inputs)
      arguments.push_back(given.at(input.name));
    c10::IValue result = module.forward(arguments);
    std::vector<c10::IValue> outputs = {result};
    if (result.isTuple())
      outputs = result.toTupleRef().elements().vec();
    else if (result.isList())
      outputs = result.toListRef().vec();
    std::map<std::string, torch::Tensor> named;
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!outputs[k].isTensor())
        throw std::runtime_error("forward's output " + std::to_string(k) +
                                 " is a " + outputs[k].tagKind() +
                                 ", not a tensor");
      named["output_" + std::to_string(k)] = outputs[k].toTensor();
    }
    return named;
  }

private:
  /// The smallest row count of the embeddings each argument of forward
  /// (by index; 0 is self) indexes directly, once calls are inlined and
  /// constants propagated.
  std::map<size_t, int64_t> embeddingRows() {
    std::shared_ptr<torch::jit::Graph> graph =
        module.get_method("forward").graph()->copy();
    torch::jit::Inline(*graph);
    // Folds the branches of scripted code on constants (F.embedding's
    // `if max_norm is not None`), which would hide the argument.
    torch::jit::ConstantPropagation(graph);
    std::map<size_t, int64_t> rows;
    torch::jit::DepthFirstGraphNodeIterator nodes(graph);
    for (torch::jit::Node *node = nodes.next(); node; node = nodes.next()) {
      if (node->kind() != c10::Symbol::fromQualString("aten::embedding"))
        continue;
      torch::jit::Value *indices = node->input(1);
      auto weight = parameters.find(attributePath(node->input(0)));
      if (indices->node()->kind() != c10::prim::Param ||
          weight == parameters.end())
        continue;
      auto [slot, added] = rows.emplace(indices->offset(), weight->second.size(0));
      if (!added)
        slot->second = std::min(slot->second, weight->second.size(0));
    }
    return rows;
  }

  /// The qualified name (`blocks.0.attn.qkv.weight`) of the attribute
  /// `value` reads from self through prim::GetAttr; "" for other values.
  static std::string attributePath(torch::jit::Value *value) {
    std::string path;
    while (value->node()->kind() == c10::prim::GetAttr) {
      std::string name = value->node()->s(c10::attr::name);
      path = path.empty() ? name : name + "." + path;
      value = value->node()->input(0);
    }
    return value->node()->kind() == c10::prim::Param ? path : "";
  }

  torch::jit::Module module;
};

std::unique_ptr<ReferenceModel> loadModel(const std::string &path) {
  auto endsWith = [&](const std::string &suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) ==
               0;
  };
  if (endsWith(".pt") || endsWith(".pth"))
    return std::make_unique<TorchScriptModel>(path);
  if (!inputShapes.empty())
    throw std::runtime_error("--input-shape applies to TorchScript models "
                             "(.pt), whose arguments have no shapes");
  return std::make_unique<OnnxModel>(path);
}

/// Writes `select(p)` of every parameter `p` for which it is defined to
/// `path`, in pp's parameter-file format.
template <typename Select>
void writeTensors(const std::string &path,
                  const std::map<std::string, torch::Tensor> &parameters,
                  Select select) {
  std::map<std::string, pp::runtime::ParameterValues> saved;
  for (const auto &[name, parameter] : parameters) {
    torch::Tensor tensor = select(parameter);
    if (!tensor.defined()) // A gradient PyTorch leaves None.
      continue;
    torch::Tensor contiguous = tensor.contiguous();
    pp::runtime::ParameterValues &values = saved[name];
    values.shape = contiguous.sizes().vec();
    values.values.assign(contiguous.data_ptr<float>(),
                         contiguous.data_ptr<float>() + contiguous.numel());
  }
  pp::runtime::writeParameterFile(path, saved);
}

int run() {
  torch::set_num_threads(threads);
  std::unique_ptr<ReferenceModel> model = loadModel(modelPath);
  const std::map<std::string, torch::Tensor> &parameters = model->parameters;
  auto [kind, output] = [&] {
    size_t colon = loss.find(':');
    return std::pair(loss.substr(0, colon), loss.substr(colon + 1));
  }();
  // Two parameter groups, as PyTorch recipes build them: with weight
  // decay and without (pp's rule decides which, pp::runtime::Optimizer).
  pp::runtime::OptimizerOptions ppOptions;
  if (noDecay.getNumOccurrences())
    ppOptions.noDecay = noDecay;
  pp::runtime::Optimizer decayRule(ppOptions);
  std::vector<torch::Tensor> trainable, decayed, undecayed;
  for (const auto &[name, parameter] : parameters) {
    trainable.push_back(parameter);
    (decayRule.decays(name, parameter.dim()) ? decayed : undecayed)
        .push_back(parameter);
  }
  // Each group with its options (PyTorch refuses an empty group).
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (auto [group, decay] : {std::pair{&decayed, weightDecay.getValue()},
                              std::pair{&undecayed, 0.0f}}) {
    if (group->empty())
      continue;
    std::unique_ptr<torch::optim::OptimizerOptions> options;
    if (optimizerName == "adamw")
      options = std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(learningRate).weight_decay(decay));
    else
      options = std::make_unique<torch::optim::SGDOptions>(
          torch::optim::SGDOptions(learningRate)
              .momentum(momentum)
              .weight_decay(decay));
    groups.emplace_back(*group, std::move(options));
  }
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (optimizerName == "adamw")
    optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups));
  else
    optimizer = std::make_unique<torch::optim::SGD>(
        std::move(groups), torch::optim::SGDOptions(learningRate));
  // The rate of each step, as LambdaLR would set it: pp's schedule
  // (LearningRateTest checks it against the closed form).
  pp::runtime::LearningRateSchedule schedule{
      learningRate,
      pp::runtime::parseLearningRateDecay(lrScheduleName)
          .value_or(pp::runtime::LearningRateDecay::Constant),
      warmupSteps, decaySteps.getNumOccurrences() ? decaySteps : steps,
      minLearningRate};

  std::ofstream metrics;
  if (!metricsPath.empty())
    metrics.open(metricsPath);
  for (int64_t step = 0; step < steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    optimizer->zero_grad();
    // Draw inputs and labels like pp-run; count the step's loss elements.
    std::vector<std::map<std::string, torch::Tensor>> inputs(microbatches);
    std::vector<torch::Tensor> labels(microbatches), losses(microbatches);
    double count = 0, lossSum = 0;
    for (int64_t mb = 0; mb < microbatches; ++mb) {
      int64_t first = (step * microbatches + mb) * microbatchSize;
      for (const InputSpec &input : model->inputs)
        inputs[mb][input.name] =
            synthetic(input.name, input.shape, first, input.bound);
      std::map<std::string, torch::Tensor> values = model->forward(inputs[mb]);
      auto found = values.find(output);
      if (found == values.end())
        throw std::runtime_error("--loss names '" + output +
                                 "', which the model does not compute");
      torch::Tensor y = found->second;
      torch::Tensor lossValue;
      if (kind == "mse") {
        labels[mb] = synthetic("labels", y.sizes().vec(), first, 0);
        lossValue = torch::mse_loss(y, labels[mb], at::Reduction::Sum);
        count += labels[mb].numel();
      } else {
        labels[mb] = syntheticLabels(y.sizes().slice(0, y.dim() - 1).vec(),
                                     first, y.size(-1));
        lossValue = torch::nll_loss(
            torch::log_softmax(y.reshape({-1, y.size(-1)}), -1),
            labels[mb].reshape({-1}), {}, at::Reduction::Sum, -100);
        // Token-weighted: tokens labelled ignore_index (-100) do not count.
        count += (labels[mb] != -100).sum().item<double>();
      }
      lossSum += lossValue.item<double>();
      losses[mb] = lossValue;
    }
    // Token-weighted: every microbatch's summed loss over the step's count.
    for (int64_t mb = 0; mb < microbatches; ++mb)
      (losses[mb] / count).backward();
    double squares = 0;
    for (const torch::Tensor &p : trainable)
      if (p.grad().defined()) // None: the loss does not depend on p.
        squares += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
    double norm = std::sqrt(squares);
    if (step == 0 && !saveGradsPath.empty())
      writeTensors(saveGradsPath, parameters, [](const torch::Tensor &p) {
        return p.grad();
      });
    if (clipGradNorm > 0)
      torch::nn::utils::clip_grad_norm_(trainable, clipGradNorm);
    for (torch::optim::OptimizerParamGroup &group : optimizer->param_groups())
      group.options().set_lr(pp::runtime::learningRateAt(schedule, step + 1));
    optimizer->step();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double samplesPerSecond = microbatches * microbatchSize / seconds;
    std::cout << "step " << step + 1 << "  loss " << lossSum / count
              << "  grad_norm " << norm << "  " << samplesPerSecond
              << " samples/s\n";
    if (metrics.is_open())
      metrics << nlohmann::json{{"step", step + 1},
                                {"loss", lossSum / count},
                                {"grad_norm", norm},
                                {"samples_per_s", samplesPerSecond}}
                     .dump()
              << "\n";
  }
  if (!saveParamsPath.empty())
    writeTensors(saveParamsPath, parameters,
                 [](const torch::Tensor &p) { return p.detach(); });
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(
      argc, argv, "pp-torch-reference: pp-run's training run in LibTorch\n");
  try {
    return run();
  } catch (const std::exception &error) {
    std::cerr << "pp-torch-reference: " << error.what() << "\n";
    return 1;
  }
}
