//===- TorchReference.cpp - the same training run in LibTorch ---*- C++ -*-===//
//
// pp-torch-reference trains an ONNX model of pp's op set with LibTorch
// (autograd, torch::optim) on the data pp-run draws, with pp-run's options,
// and writes the same metrics and parameter files. Tests compare the two;
// the benchmark compares their speed. It is a test utility: it evaluates
// the ONNX nodes itself and shares nothing with pp's compiler.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoints/ParameterFile.h"
#include "runtime/data/SyntheticData.h"

#include "llvm/Support/CommandLine.h"

#include <onnx/onnx_pb.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>

using namespace llvm;

namespace {

cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                               cl::desc("<model.onnx>"));
cl::opt<int> microbatchSize("microbatch-size", cl::Required);
cl::opt<std::string> loss("loss", cl::Required, cl::desc("KIND:OUTPUT"));
cl::opt<int> microbatches("microbatches", cl::init(1));
cl::opt<int> steps("steps", cl::init(1));
cl::opt<uint64_t> seed("seed", cl::init(0));
cl::opt<std::string> optimizerName("optimizer", cl::init("sgd"));
cl::opt<float> learningRate("lr", cl::init(0.01f));
cl::opt<float> momentum("momentum", cl::init(0.0f));
cl::opt<float> weightDecay("weight-decay", cl::init(0.0f));
cl::opt<double> clipGradNorm("clip-grad-norm", cl::init(0.0));
cl::opt<std::string> metricsPath("metrics");
cl::opt<std::string> saveParamsPath("save-params");
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

/// pp-run's synthetic data for tensor `name` of `shape`.
torch::Tensor synthetic(const std::string &name, std::vector<int64_t> shape,
                        int64_t firstSample, int64_t classes) {
  pp_tensor *tensor = nullptr;
  pp_tensor_create(classes ? PP_DTYPE_I64 : PP_DTYPE_F32, shape.size(),
                   shape.data(), &tensor);
  pp::runtime::fillSynthetic(tensor, seed, name, firstSample, classes);
  torch::Tensor result =
      torch::from_blob(pp_tensor_data(tensor), shape,
                       classes ? torch::kInt64 : torch::kFloat32)
          .clone();
  pp_tensor_destroy(tensor);
  return result;
}

/// pp-run's synthetic class labels of `shape` (sequences padded with
/// ignore_index -100).
torch::Tensor syntheticLabels(std::vector<int64_t> shape, int64_t firstSample,
                              int64_t classes) {
  pp_tensor *tensor = nullptr;
  pp_tensor_create(PP_DTYPE_I64, shape.size(), shape.data(), &tensor);
  pp::runtime::fillSyntheticLabels(tensor, seed, "labels", firstSample, classes,
                                   -100);
  torch::Tensor result =
      torch::from_blob(pp_tensor_data(tensor), shape, torch::kInt64).clone();
  pp_tensor_destroy(tensor);
  return result;
}

int run() {
  torch::set_num_threads(threads);
  std::ifstream file(modelPath, std::ios::binary);
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&file))
    throw std::runtime_error("cannot read " + modelPath);
  const onnx::GraphProto &graph = model.graph();
  auto [kind, output] = [&] {
    size_t colon = loss.find(':');
    return std::pair(loss.substr(0, colon), loss.substr(colon + 1));
  }();

  std::map<std::string, torch::Tensor> parameters, constants;
  std::vector<torch::Tensor> trainable;
  for (const onnx::TensorProto &init : graph.initializer()) {
    torch::Tensor value = fromProto(init);
    if (value.scalar_type() == torch::kFloat32) {
      value.set_requires_grad(true);
      parameters[init.name()] = value;
      trainable.push_back(value);
    } else {
      constants[init.name()] = value;
    }
  }
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (optimizerName == "adamw")
    optimizer = std::make_unique<torch::optim::AdamW>(
        trainable,
        torch::optim::AdamWOptions(learningRate).weight_decay(weightDecay));
  else
    optimizer = std::make_unique<torch::optim::SGD>(
        trainable, torch::optim::SGDOptions(learningRate)
                       .momentum(momentum)
                       .weight_decay(weightDecay));

  std::ofstream metrics;
  if (!metricsPath.empty())
    metrics.open(metricsPath);
  for (int64_t step = 0; step < steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    optimizer->zero_grad();
    // Draw inputs and labels like pp-run; count the step's loss elements.
    std::vector<std::map<std::string, torch::Tensor>> inputs(microbatches);
    std::vector<torch::Tensor> labels(microbatches);
    double count = 0, lossSum = 0;
    for (int64_t mb = 0; mb < microbatches; ++mb) {
      int64_t first = (step * microbatches + mb) * microbatchSize;
      for (const onnx::ValueInfoProto &input : graph.input()) {
        if (parameters.count(input.name()) || constants.count(input.name()))
          continue;
        std::vector<int64_t> shape;
        for (const auto &dim : input.type().tensor_type().shape().dim())
          shape.push_back(dim.has_dim_value() && dim.dim_value() > 0
                              ? dim.dim_value()
                              : microbatchSize);
        inputs[mb][input.name()] = synthetic(input.name(), shape, first, 0);
      }
      std::map<std::string, torch::Tensor> values = parameters;
      values.insert(constants.begin(), constants.end());
      values.insert(inputs[mb].begin(), inputs[mb].end());
      evaluate(graph, values);
      torch::Tensor y = values.at(output);
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
        count += labels[mb].ne(-100).sum().item<int64_t>();
      }
      lossSum += lossValue.item<double>();
      inputs[mb]["__loss"] = lossValue;
    }
    // Token-weighted: every microbatch's summed loss over the step's count.
    for (int64_t mb = 0; mb < microbatches; ++mb)
      (inputs[mb]["__loss"] / count).backward();
    double squares = 0;
    for (const torch::Tensor &p : trainable)
      if (p.grad().defined()) // None: the loss does not depend on p.
        squares += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
    double norm = std::sqrt(squares);
    if (clipGradNorm > 0)
      torch::nn::utils::clip_grad_norm_(trainable, clipGradNorm);
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
  if (!saveParamsPath.empty()) {
    std::map<std::string, pp::runtime::ParameterValues> saved;
    for (auto &[name, tensor] : parameters) {
      torch::Tensor contiguous = tensor.detach().contiguous();
      pp::runtime::ParameterValues &values = saved[name];
      values.shape = contiguous.sizes().vec();
      values.values.assign(contiguous.data_ptr<float>(),
                           contiguous.data_ptr<float>() + contiguous.numel());
    }
    pp::runtime::writeParameterFile(saveParamsPath, saved);
  }
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
